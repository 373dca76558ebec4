#include "optimizer/node_names.h"

#include <algorithm>
#include <cctype>

namespace tgr::optimizer {

std::string rule_tag(const DirectedRule& rule) {
  return (rule.rule_set == kShippedRuleSet ? "default_rule" : "rule") + std::to_string(rule.id);
}

AppliedRewrite start_record(const DirectedRule& rule) {
  AppliedRewrite r;
  r.rule_id = rule.id;
  r.rule_text = rule.text;
  r.tag = rule_tag(rule);
  return r;
}

std::string model_name_of(std::string_view name) {
  // Cut before the first segment "rule<digits>" or "default_rule<digits>"
  // that another segment follows.
  for (size_t start = 0; start < name.size(); start = name.find('/', start) + 1) {
    std::string_view rest = name.substr(start);
    for (std::string_view prefix : {"rule", "default_rule"}) {
      if (!rest.starts_with(prefix)) continue;
      size_t k = prefix.size(), digits = 0;
      while (k < rest.size() && std::isdigit(static_cast<unsigned char>(rest[k]))) ++k, ++digits;
      if (digits > 0 && k < rest.size() && rest[k] == '/')
        return std::string(name.substr(0, start > 0 ? start - 1 : 0));
    }
    if (name.find('/', start) == std::string_view::npos) break;
  }
  return std::string(name);
}

RewriteNamer::RewriteNamer(std::string tag, const std::vector<std::string>& replaced,
                           std::function<bool(const std::string&)> taken)
    : tag_(std::move(tag)), taken_(std::move(taken)) {
  for (const std::string& name : replaced) {
    if (name.empty()) continue;
    base_ = model_name_of(name);
    break;
  }
}

std::string RewriteNamer::node_name(std::string_view op) {
  auto it = std::find_if(used_.begin(), used_.end(), [&](const auto& u) { return u.first == op; });
  if (it == used_.end()) it = used_.insert(used_.end(), {std::string(op), 0});
  const std::string stem = (base_.empty() ? tag_ : base_ + "/" + tag_) + "/" + std::string(op);
  for (;;) {
    const int count = it->second++;
    std::string name = count == 0 ? stem : stem + "_" + std::to_string(count);
    if (!taken_ || !taken_(name)) return name;
  }
}

std::vector<std::string> RewriteNamer::value_names(const std::string& node_name, size_t outputs) {
  std::vector<std::string> names;
  for (size_t k = 0; k < outputs; ++k) names.push_back(node_name + "_output_" + std::to_string(k));
  return names;
}

}  // namespace tgr::optimizer
