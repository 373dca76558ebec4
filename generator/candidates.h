// From fingerprint classes to candidate rules: every pair of graphs with
// equal fingerprints is a candidate; pruning passes remove the redundant
// ones (each counted); survivors are re-checked in float64 with the real
// semantics on fresh random inputs before they are kept.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "generator/enumerator.h"
#include "util/ranks.h"

namespace tgr::gen {

struct CandidateStats {
  uint64_t classes = 0;        // fingerprint classes with two or more distinct graphs
  uint64_t class_graphs = 0;   // distinct graphs in those classes
  uint64_t star_classes = 0;   // classes so large that each graph is paired with the smallest only
  uint64_t pairs = 0;          // candidate pairs before pruning
  // Removed by each pass, in this order:
  uint64_t trivial = 0;            // both sides the same up to commutativity
  uint64_t renaming = 0;           // equal to another candidate up to variable names (and sides)
  uint64_t commutative = 0;        // ... and argument order of commutative operators
  uint64_t common_subgraph = 0;    // a smaller candidate with a shared subgraph replaced by an input
  uint64_t common_supergraph = 0;  // a smaller candidate with the same context added on both sides
  uint64_t float64_rejected = 0;   // field collisions that real arithmetic refutes
  uint64_t instances = 0;          // implied by another candidate: an instance, or a context around it
  uint64_t kept = 0;
  // Where the time went (wall clock): building and pairing the classes with
  // their pruning passes, then the generalization pass.
  double pairing_seconds = 0, generalization_seconds = 0;
};

struct Candidate {
  std::string text;       // "source => target" as found
  std::string canonical;  // ir/canonical.h key
  std::string variables;  // "x0=2x4,w0=4x4" in the canonical names
  // JSON: whether the rule also type-checks and holds (float64) when every
  // kind takes other sizes, e.g. {"generalizes":true,"checked_on":"x0=3x6,..."};
  // false for rules tied to the sizes they were found on (split halves,
  // constants' parameters).
  std::string constraints;
};

// `kept` holds every graph whose class has at least two members (any order).
// The last pass (generalization, generator/implication.h) drops candidates
// that are substitution instances of others or a common supergraph of a
// smaller one: both are strict orders, so each dropped one follows from one
// that is kept.
// Candidates come back sorted by canonical text: deterministic for a seed.
// Returns early (with an incomplete list) when `stop` is set.
std::vector<Candidate> find_candidates(const std::vector<Enumerator>& enumerators, std::vector<GraphRecord> kept,
                                       uint64_t seed, CandidateStats& stats, const std::atomic<bool>& stop);
// The same as one of several ranks: `kept` holds every graph of the classes
// this rank owns (all of a key's graphs on one rank); the pruning passes see
// the pairs in the same order as one process does, and every rank returns
// the same list, the one a single process returns. `stats` are the totals.
std::vector<Candidate> find_candidates(const std::vector<Enumerator>& enumerators, std::vector<GraphRecord> kept,
                                       uint64_t seed, CandidateStats& stats, const std::atomic<bool>& stop,
                                       util::Ranks& ranks);

}  // namespace tgr::gen
