// The names of the nodes a rewrite makes, and the record of what each
// applied rewrite changed (for reports).
//
// An optimized model keeps the names of the input model's nodes and values
// wherever a node survives: Graph carries them (Node::name,
// Node::value_names) and every search copies them along. A node a rewrite
// creates is named after a node it replaces and the rule that made it,
// "<replaced node>/rule20/matmul" (the rule's id in its database;
// "default_rule20" for a rule of the shipped set added to a user's
// database), its outputs "<node name>_output_<k>". A name that a rewrite
// gave is cut back to the model's name before it is reused, so that names
// do not grow with every rewrite: the rule named is the last one.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "optimizer/rule_set.h"

namespace tgr::optimizer {

// "rule20", or "default_rule20" for a rule of the shipped set joining a
// user's database (rule_set.h, kShippedRuleSet).
std::string rule_tag(const DirectedRule& rule);

// Names the nodes one application of a rule makes: base "/" tag "/" op,
// with "_1", "_2", ... for a second and third node of one operator.
class RewriteNamer {
 public:
  // `replaced`: the names of the nodes the rewrite replaces (empty ones
  // ignored); the first named one is the base.
  // `taken` (when given) says which names the graph holds already; the namer avoids them.
  RewriteNamer(std::string tag, const std::vector<std::string>& replaced,
               std::function<bool(const std::string&)> taken = {});
  // The name of the next new node of `op`, and its outputs' names.
  std::string node_name(std::string_view op);
  static std::vector<std::string> value_names(const std::string& node_name, size_t outputs);
  const std::string& base() const { return base_; }

 private:
  std::string tag_, base_;
  std::function<bool(const std::string&)> taken_;
  std::vector<std::pair<std::string, int>> used_;  // op -> nodes named so far
};

// A node name with any rule suffix ("/rule20/...", "/default_rule20/...")
// cut off: the model node it was named after.
std::string model_name_of(std::string_view name);

// One applied rewrite: its rule and where it applied, by node names.
struct AppliedRewrite {
  int64_t rule_id = 0;
  std::string rule_text;             // in the direction applied
  std::string tag;                   // rule_tag
  std::vector<std::string> removed;  // the names of the nodes it replaced
  std::vector<std::string> added;    // the names of the nodes it made (not those it found made already)
};

// A record of an application of `rule`, its nodes still to fill in.
AppliedRewrite start_record(const DirectedRule& rule);

}  // namespace tgr::optimizer
