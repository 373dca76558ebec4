// A match made sound, then applied to the e-graph.
//
// Soundness is the optimizer's (optimizer/instance.h): a rule was proved at
// the generator's shapes, so every match is instantiated at the e-classes'
// shapes and proved there before anything is added. The match is cut out of
// the e-graph as a small Graph: one input per matched variable class (at its
// shape and element type) and the matched e-nodes (operator, parameters,
// operand order) over them; optimizer::instantiate builds the instance from
// it (shape-dependent parameters re-derived), and
// optimizer::InstanceProver::proved proves it (cached). A partial (PET) rule
// takes its checked-and-corrected route instead
// (optimizer/partial_instance.h), as in the backtracking search.
//
// Applying adds the instance's target nodes over the variables' classes and
// unions each target output with the class its source output matched. With
// `filter_cycles` (Tensat's filter), a union that would make a class
// reachable from itself (one side
// reaches the other through children) is skipped: the target nodes stay,
// unconnected; the other outputs' unions (each proved equal by the
// instance) still happen. Every check runs on a congruence-closed e-graph
// (EGraph::restore_congruence after each union). On an e-graph that logs
// its unions (EGraph::log_unions), the instance's source is added too (it
// finds the matched e-nodes), each union joins the target's and the
// source's e-nodes by their own ids, and the ids each e-node was given as
// operands are the application's premises (EGraph::add_premises), so that
// saturation/derive.h can explain every step.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "optimizer/cost_model.h"
#include "optimizer/instance.h"
#include "optimizer/node_names.h"
#include "pet/region_check.h"
#include "saturation/pattern.h"

namespace tgr::saturation {

// A match instantiated at the e-graph's shapes (not yet proved).
struct MatchInstance {
  optimizer::Instance instance;
  std::map<std::string, ClassId> variable_classes;  // the instance's variables -> their classes
};

// The instance of `match` of `rule` at the classes' shapes, or nullopt when
// no re-derivation of the target's parameters type-checks. Reads the
// e-graph only (thread-safe on a rebuilt e-graph); `cache` as for
// optimizer::instantiate.
std::optional<MatchInstance> instantiate_match(const EGraph& egraph, const optimizer::DirectedRule& rule,
                                               const PatternMatch& match, optimizer::InstanceCache* cache = nullptr);

// Whether applying the instance would change nothing: its target's every
// node is in the e-graph already and each target output is in the class
// its source output matched (the reverse direction of a rule already
// applied there, say). Such an instance needs no proof. Reads the e-graph
// only (thread-safe on a rebuilt e-graph).
bool already_holds(const EGraph& egraph, const MatchInstance& instance, const PatternMatch& match);

// Proof results by instance up to the names of its variables. A generated
// database holds one rule in several namings (add(add(b0, b1), b2) and
// add(add(k0, k1), k2) differ only in the kinds of shapes they were
// generated at), and at a model's shapes their instances are one: proving
// one proves all (a consistent renaming preserves equivalence), where
// InstanceProver's cache, keyed by the text as printed, proves each.
class ProofCache {
 public:
  // Whether the instance may be applied: proved by `prover` (cached here
  // and there), or, for a partial rule, corrected and region-checked (the
  // instance's target is then the corrected one; not cached, the corrected
  // target belongs to the instance). Thread-safe.
  bool proved(MatchInstance& instance, const optimizer::DirectedRule& rule, optimizer::InstanceProver& prover,
              const pet::CheckOptions& region_check);
  int64_t hits() const;

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::string, bool> results_;
  int64_t hits_ = 0;
};

// The instance's text and variable shapes and types with the variables
// renamed v0, v1, ... in order of first appearance (ProofCache's key).
std::string canonical_instance_key(const optimizer::Instance& instance);

// A rule or instance text with its variables renamed v0, v1, ... in order
// of first appearance; `order` (when given) receives the original names.
std::string rename_variables(const std::string& text, std::vector<std::string>* order = nullptr);

// What the rewrite would change locally: the cost of the instance's target
// minus its source's, operators of weights only (variables of constant
// classes) free, `cost` per operator. Only a priority (the source stays in
// the e-graph, the target may share e-nodes): the runner proves the
// promising instances first. Thread-safe when `cost` is.
double local_cost_delta(const EGraph& egraph, const MatchInstance& instance, optimizer::CostModel& cost);

struct ApplyOutcome {
  int unions = 0;           // classes merged (0 when the target was there already)
  int cycles_filtered = 0;  // unions skipped because they would close a cycle
};

// Adds the proved instance's target (its e-nodes carry `origin`) and unions
// its outputs with `match.outputs`. The target's new e-nodes are named after
// a matched e-node's name and `rule_tag` (optimizer/node_names.h; an empty
// tag: no names); `record` (when given) receives the names of the matched
// e-nodes and of the target's.
ApplyOutcome apply_proved(EGraph& egraph, const MatchInstance& proved, const PatternMatch& match, uint32_t origin,
                          bool filter_cycles, const std::string& rule_tag = "",
                          optimizer::AppliedRewrite* record = nullptr);

}  // namespace tgr::saturation
