// Rules databases compared and merged by the rules' canonical text
// (`rules diff A B`, `rules merge A B -o C`), and the filters of `rules list`.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "rules_db/rules_db.h"

namespace tgr::cli {

struct RuleSetDiff {
  std::vector<rules_db::RuleRecord> only_a, only_b;                                 // by id in their database
  std::vector<std::pair<rules_db::RuleRecord, rules_db::RuleRecord>> other_status;  // (in A, in B), by A's id
  size_t same = 0;                                                                  // in both with one status
  bool differ() const { return !only_a.empty() || !only_b.empty() || !other_status.empty(); }
};
RuleSetDiff diff_rules(const std::vector<rules_db::RuleRecord>& a, const std::vector<rules_db::RuleRecord>& b);

// Every rule of A, then those of B that A lacks. A rule in both keeps the
// record whose status says more: proved or refuted, then unknown, then
// partial, then candidate (A's on a tie). A rule proved in one and refuted
// in the other is an error (std::runtime_error naming it): one of the two
// databases is wrong, and a merge must not pick. Ids and generator runs are
// dropped (the merged database numbers its rules anew).
std::vector<rules_db::RuleRecord> merge_rules(const std::vector<rules_db::RuleRecord>& a,
                                              const std::vector<rules_db::RuleRecord>& b);

// `rules list` filters; empty lists filter nothing.
struct RuleFilter {
  std::vector<std::string> operators;  // the rule uses every one of these operators
  std::vector<std::string> axioms;     // its proof cites every one of these axioms
  bool keeps(const rules_db::RuleRecord& rule) const;
};

// A rule as a line of a rule file (`rules import` reads it back):
// "SOURCE => TARGET | VARIABLES  # id ID, STATUS".
std::string rule_file_line(const rules_db::RuleRecord& rule);

}  // namespace tgr::cli
