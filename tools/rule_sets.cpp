#include "tools/rule_sets.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <sstream>
#include <stdexcept>

namespace tgr::cli {

using rules_db::RuleRecord;

namespace {

std::map<std::string, const RuleRecord*> by_canonical(const std::vector<RuleRecord>& rules) {
  std::map<std::string, const RuleRecord*> out;
  for (const RuleRecord& r : rules) out.emplace(r.canonical, &r);
  return out;
}

// How much a status says about a rule (merge keeps the larger).
int status_rank(const std::string& status) {
  if (status == "proved" || status == "refuted") return 4;
  if (status == "unknown") return 3;
  if (status == "partial") return 2;
  return 1;  // candidate
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> out;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, separator))
    if (!part.empty()) out.push_back(part);
  return out;
}

}  // namespace

RuleSetDiff diff_rules(const std::vector<RuleRecord>& a, const std::vector<RuleRecord>& b) {
  const auto in_a = by_canonical(a), in_b = by_canonical(b);
  RuleSetDiff d;
  for (const RuleRecord& r : a) {
    const auto other = in_b.find(r.canonical);
    if (other == in_b.end()) d.only_a.push_back(r);
    else if (other->second->status != r.status) d.other_status.emplace_back(r, *other->second);
    else ++d.same;
  }
  for (const RuleRecord& r : b)
    if (!in_a.count(r.canonical)) d.only_b.push_back(r);
  return d;
}

std::vector<RuleRecord> merge_rules(const std::vector<RuleRecord>& a, const std::vector<RuleRecord>& b) {
  const auto in_b = by_canonical(b);
  const auto in_a = by_canonical(a);
  std::vector<RuleRecord> out;
  for (const RuleRecord& r : a) {
    const auto other = in_b.find(r.canonical);
    const RuleRecord* kept = &r;
    if (other != in_b.end()) {
      const RuleRecord& o = *other->second;
      if ((r.status == "proved" && o.status == "refuted") || (r.status == "refuted" && o.status == "proved"))
        throw std::runtime_error("the rule " + r.canonical + " is " + r.status + " in the first database (#" +
                                 std::to_string(r.id) + ") and " + o.status + " in the second (#" +
                                 std::to_string(o.id) + "): one of them is wrong; nothing merged");
      if (status_rank(o.status) > status_rank(r.status)) kept = &o;
    }
    out.push_back(*kept);
  }
  for (const RuleRecord& r : b)
    if (!in_a.count(r.canonical)) out.push_back(r);
  for (RuleRecord& r : out) {
    r.id = 0;
    r.generator_run = 0;
  }
  return out;
}

bool RuleFilter::keeps(const RuleRecord& rule) const {
  if (!operators.empty()) {
    const std::vector<std::string> used = split(rule.operators, ',');
    for (const std::string& op : operators)
      if (std::find(used.begin(), used.end(), op) == used.end()) return false;
  }
  if (!axioms.empty()) {
    std::vector<std::string> cited;
    if (rule.axioms) {
      const auto json = nlohmann::json::parse(*rule.axioms, nullptr, /*allow_exceptions=*/false);
      if (json.is_array())
        for (const auto& name : json)
          if (name.is_string()) cited.push_back(name.get<std::string>());
    }
    for (const std::string& axiom : axioms)
      if (std::find(cited.begin(), cited.end(), axiom) == cited.end()) return false;
  }
  return true;
}

std::string rule_file_line(const RuleRecord& rule) {
  return rule.rule_text() + " | " + rule.variables + "  # id " + std::to_string(rule.id) + ", " + rule.status;
}

}  // namespace tgr::cli
