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
// cycle filtering (Tensat), a union that would make a class reachable from
// itself (one side reaches the other through children) is skipped: the
// target nodes stay, unconnected; the other outputs' unions (each proved
// equal by the instance) still happen. Every check runs on a
// congruence-closed e-graph (EGraph::restore_congruence after each union),
// so the e-graph stays acyclic.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "optimizer/instance.h"
#include "saturation/pattern.h"
#include "verifier/region_check.h"

namespace tgr::saturation {

struct ProvedInstance {
  optimizer::Instance instance;
  std::map<std::string, ClassId> variable_classes;  // the instance's variables -> their classes
};

enum class InstanceOutcome { kProved, kNoInstance, kNotProved };

// Instantiates `match` of `rule` at the e-graph's shapes and proves it;
// `proved` holds the instance when the outcome is kProved. Reads the
// e-graph only (thread-safe on a rebuilt e-graph).
InstanceOutcome prove_match(const EGraph& egraph, const optimizer::DirectedRule& rule, const PatternMatch& match,
                            optimizer::InstanceProver& prover, const pet::CheckOptions& region_check,
                            std::optional<ProvedInstance>& proved);

struct ApplyOutcome {
  int unions = 0;           // classes merged (0 when the target was there already)
  int cycles_filtered = 0;  // unions skipped because they would close a cycle
};

// Adds the proved instance's target (its e-nodes carry `origin`) and unions
// its outputs with `match.outputs`.
ApplyOutcome apply_proved(EGraph& egraph, const ProvedInstance& proved, const PatternMatch& match, uint32_t origin,
                          bool filter_cycles);

}  // namespace tgr::saturation
