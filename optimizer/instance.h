// A rule instantiated at a model's shapes, and its proof.
//
// Rules were proved at the generator's small shapes. When a rule matches a
// subgraph of a model, the optimizer builds the instance at the model's
// shapes: the source is the matched subgraph itself (printed from the model,
// with the matched variables as leaves), the target is the rule's target
// over the same variables. Only an instance that the prover proves at these
// shapes is applied (InstanceProver), which is what makes applying a rule at
// a new shape sound.
//
// Shape-dependent parameters of the target (is_shape_param: split sizes,
// enlarge sizes, the size of ones, eye, conv_identity, pool_kernel, reshape
// and expand shapes) are re-derived: every integer of such a parameter that
// equals a dimension of the rule's variables or source values at the
// generator's shapes (or an element of a source parameter) is replaced by
// the corresponding dimension at the model's shapes. Where several
// dimensions fit, the candidates are tried in order and the first that
// type-checks with output shapes equal to the source's is taken; the proof
// decides whether it is right. A value that equals no dimension is kept.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "optimizer/matcher.h"
#include "verifier/prover.h"

namespace tgr::optimizer {

struct Instance {
  std::string text;                       // "source => target" at the model's shapes
  std::string shapes;                     // the variables' model shapes, "x0=1x64x55x55,k0=..."
  Rule rule;                              // built from text and shapes
  std::map<std::string, ValueRef> bindings;  // variable -> model value
  // Partial rules: the target has been replaced by its corrected form, and
  // this is whether the region checker found it `full` against the source.
  std::optional<bool> region_checked;
};

// The instance of `rule` for `match` in `graph`, or nullopt when no
// re-derivation of its parameters type-checks.
std::optional<Instance> instantiate(const Graph& graph, const DirectedRule& rule, const Match& match);

struct InstanceProofStats {
  int64_t proofs = 0, proved = 0, failed = 0, cache_hits = 0;
  int64_t corrected = 0;  // partial-rule instances accepted on the region checker's word
  double proof_ms = 0;
};

// Proves instances, remembering every result by instance text and shapes.
// Thread-safe.
class InstanceProver {
 public:
  InstanceProver(const verifier::Prover& prover, verifier::ProofOptions options);
  bool proved(const Instance& instance);
  InstanceProofStats stats() const;

 private:
  const verifier::Prover& prover_;
  verifier::ProofOptions options_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, bool> cache_;
  InstanceProofStats stats_;
};

}  // namespace tgr::optimizer
