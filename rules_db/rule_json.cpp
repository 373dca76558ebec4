#include "rules_db/rule_json.h"

namespace tgr::rules_db {

nlohmann::ordered_json rule_json(const RuleRecord& r) {
  auto optional = [](const std::optional<std::string>& v) { return v ? nlohmann::ordered_json(*v) : nullptr; };
  return {
      {"id", r.id},
      {"canonical", r.canonical},
      {"source", r.source},
      {"target", r.target},
      {"variables", r.variables},
      {"constraints", r.constraints},
      {"source_ops", r.source_ops},
      {"target_ops", r.target_ops},
      {"operators", r.operators},
      {"kind", r.kind},
      {"status", r.status},
      {"proof_ms", r.proof_ms ? nlohmann::ordered_json(*r.proof_ms) : nullptr},  // not finite: null
      {"axioms", optional(r.axioms)},
      {"counterexample", optional(r.counterexample)},
      {"region_map", optional(r.region_map)},
      {"correction", optional(r.correction)},
      {"note", optional(r.note)},
      {"generator_run", r.generator_run ? nlohmann::ordered_json(r.generator_run) : nullptr},
      {"created_at", r.created_at},
  };
}

}  // namespace tgr::rules_db
