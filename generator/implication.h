// Which rules follow from others without a proof of their own: the
// generalization pass of `generate` (a rule that is an instance of a kept
// rule is not stored) and `rules lookup` / `rules check` (a rule that is not
// stored verbatim may still be implied by stored ones).
//
// The ways one rule follows from others, each a step the generator's pruning
// also takes:
//   substitution       Q is R with its variables replaced by expressions (of
//                      the variables' shapes; two variables may become one):
//                      R holds for all values, so for these. TASO's common
//                      subgraph pass is the case where the expression is
//                      shared by both sides.
//   common supergraph  Q puts the same context around both sides of a rule
//                      (or adds an output computed identically on both
//                      sides) that is stored or follows by substitution.
//   transitivity       Q is A => B where A => M and M => B are stored (large
//                      fingerprint classes pair each graph with the smallest
//                      only).
// Every claim is checked exactly (the substituted rule equals Q's canonical
// text); shapes must agree, so a rule found at other sizes does not count.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/text.h"

namespace tgr {

struct Implication {
  std::vector<int64_t> by;  // the ids of the rules it follows from
  std::string pass;         // "substitution", "common supergraph", "transitivity" (joined by " + ")
  std::string detail;       // e.g. "x0 := relu(x0)"
};

class ImplicationIndex {
 public:
  ImplicationIndex();
  ~ImplicationIndex();
  ImplicationIndex(ImplicationIndex&&) noexcept;
  ImplicationIndex& operator=(ImplicationIndex&&) noexcept;

  // Adds a rule: its canonical text and its variables' shapes ("x0=2x4,...",
  // as in the rules table). Rules that do not parse are skipped (false).
  bool add(int64_t id, const std::string& canonical, const std::string& variables);
  size_t size() const;
  std::optional<int64_t> find(const std::string& canonical) const;

  // How indexed rules (other than a verbatim copy of it) imply `canonical`,
  // whose variables have `shapes`; nullopt when they do not (or the shapes
  // are unknown). `passes`: the ways tried, a subset of {"substitution",
  // "common supergraph", "transitivity"}; empty: all.
  std::optional<Implication> explain(const std::string& canonical, const ShapeMap& shapes,
                                     const std::vector<std::string>& passes = {}) const;

  // The shapes of the indexed rules' variable kinds (x -> 2x4), for rules
  // given without shapes; a kind seen with two shapes is left out.
  ShapeMap shapes_by_kind() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The shapes of the variables of `canonical` from their kinds' shapes
// (x0 -> the shape of kind x); nullopt when a kind has none.
std::optional<ShapeMap> shapes_from_kinds(const std::string& canonical, const ShapeMap& by_kind);

}  // namespace tgr
