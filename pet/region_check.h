// The multi-linear region checker (PET's partial equivalence, done soundly).
//
// For a source and a target graph with equal output shapes: compute the boxes
// of both outputs (pet/regions.h), intersect them, and in each box test
// the corner and its neighbour along each axis longer than one (at most m + 1
// positions for an output of rank m) on `trials` independent random inputs in
// the prime field. README.md, "Partial equivalence (PET)", states the theorem
// that makes those positions enough and the false-acceptance bound.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ir/text.h"
#include "pet/regions.h"

namespace tgr::pet {

// A graph the checker cannot handle (a non-linear operator, unequal output
// shapes, ...): the message names the side, the operator and why.
class RegionCheckError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct CheckOptions {
  int trials = 2;     // independent random field inputs; at least 1
  uint64_t seed = 1;  // of the random inputs
  // Graphs whose values hold at most this many elements in all are evaluated
  // whole; larger ones only at the tested positions (restricted graphs).
  int64_t whole_evaluation_limit = 1 << 18;
};

enum class Verdict { kFull, kPartial, kNone };
std::string_view verdict_name(Verdict v);  // "full", "partial", "none"

struct OutputRegions {
  Shape shape;
  Partition grid;  // the intersection of both sides' partitions
  std::vector<Box> agree, disagree;
  // Every position of every box was tested (a program reads an input along
  // two paths, where m + 1 positions are not enough; see README.md).
  bool every_position = false;
  int degree = 1;  // bound on the total degree of both sides' polynomials
};

struct CheckResult {
  Verdict verdict = Verdict::kNone;
  std::vector<OutputRegions> outputs;
  int trials = 0;
  int64_t positions_tested = 0;  // per trial, both sides
  // Probability that some disagreeing box was accepted: at most
  // sum over boxes of (degree / p)^trials.
  double false_acceptance_bound = 0;
  int64_t agreeing_elements = 0, total_elements = 0;
};

// Raises RegionCheckError for graphs outside the checker's reach.
CheckResult check_regions(const Graph& source, const Graph& target, const CheckOptions& options = {});
// "SRC => DST" with concrete shapes of the variables.
CheckResult check_rule(std::string_view rule_text, const ShapeMap& shapes, const CheckOptions& options = {});

// The human-readable report `verify --check` prints.
std::string format_result(const CheckResult& result);
// JSON for the rules database's region_map column (README.md documents it).
// `source` and `target`: the programs checked (their variable names are the
// ones the boxes and the correction refer to).
std::string region_map_json(const CheckResult& result, std::string_view shapes, std::string_view source = "",
                            std::string_view target = "");

}  // namespace tgr::pet
