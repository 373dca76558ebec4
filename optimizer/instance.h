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
// decides whether it is right. A value that equals no dimension but divides
// one, or is a multiple of one, scales with it (a channel axis cut in halves
// re-derives as the model's channels / 2); any other value is kept.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
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
  std::string proof_axioms;  // DirectedRule::proof_axioms: what InstanceProver replays first
};

// Instances built before, by rule, matched source and variable shapes: the
// same rule matches the same subgraph again and again (every graph the
// backtracking search pops, every repeated block of a model, both
// directions' matches of a saturated e-graph), and building an instance
// (printing, parsing and type-checking its rule at the model's shapes) was
// the largest part of a search's time. Holds at most `capacity` entries
// (then starts again empty). Thread-safe.
class InstanceCache {
 public:
  explicit InstanceCache(size_t capacity = 1 << 16) : capacity_(capacity) {}
  struct Stats {
    int64_t hits = 0, misses = 0;
  };
  Stats stats() const;

 private:
  friend std::optional<Instance> instantiate(const Graph&, const DirectedRule&, const Match&, InstanceCache*);
  struct Built {  // what instantiate derives from the key
    std::string text;
    Rule rule;
  };
  // nullopt: not cached; a null pointer: cached as having no instance.
  std::optional<std::shared_ptr<const Built>> find(const std::string& key);
  void insert(std::string key, std::shared_ptr<const Built> built);

  size_t capacity_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<const Built>> entries_;
  Stats stats_;
};

// The instance of `rule` for `match` in `graph`, or nullopt when no
// re-derivation of its parameters type-checks. With `cache`, an instance
// built before for the same rule, source and shapes is reused.
std::optional<Instance> instantiate(const Graph& graph, const DirectedRule& rule, const Match& match,
                                    InstanceCache* cache = nullptr);

struct InstanceProofStats {
  int64_t proofs = 0, proved = 0, failed = 0, cache_hits = 0;
  int64_t replayed = 0;   // proved by the replay of the rule's axioms (counted in `proved` too)
  int64_t corrected = 0;  // partial-rule instances accepted on the region checker's word
  double proof_ms = 0;
};

// Proves instances, remembering every result by instance text and shapes.
// An instance of a rule whose proof the database recorded is first proved
// with that proof's axioms only (ProofOptions::only_axioms): the search
// then visits a few forms instead of hundreds (docs/benchmarks.md,
// "Measurements behind code comments"). Only where that
// replay (those axioms and the argument swaps of commutative operators)
// does not prove it does the full search run, so what is proved is
// the same; only the time changes. Thread-safe.
class InstanceProver {
 public:
  InstanceProver(const verifier::Prover& prover, verifier::ProofOptions options);
  bool proved(const Instance& instance);
  InstanceProofStats stats() const;

 private:
  const verifier::Prover& prover_;
  verifier::ProofOptions options_;
  // Axioms `op(a, b) = op(b, a)`: part of every replay, because the matcher
  // matches a commutative operator's arguments either way round, so an
  // instance's source may differ from its rule's by such swaps.
  std::vector<std::string> argument_swaps_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, bool> cache_;
  InstanceProofStats stats_;
};

}  // namespace tgr::optimizer
