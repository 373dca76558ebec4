#include "optimizer/instance.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "ir/params.h"

namespace tgr::optimizer {
namespace {

// Pairs (generator value, model value) of every dimension the parameters of
// a target may be derived from.
using DimPairs = std::vector<std::pair<int64_t, int64_t>>;

void add_shape_pairs(const Shape& gen, const Shape& model, DimPairs& pairs) {
  if (gen.size() != model.size()) return;
  for (size_t a = 0; a < gen.size(); ++a) pairs.emplace_back(gen[a], model[a]);
}

struct Environment {
  DimPairs dims;
  std::vector<std::pair<Shape, Shape>> whole;  // whole shapes (and list parameters)
};

Environment environment(const Graph& graph, const DirectedRule& rule, const Match& match) {
  Environment env;
  const Graph& pattern = rule.graphs.source;
  for (size_t i = 0; i < pattern.inputs().size(); ++i) {
    const Shape& gen = pattern.node(pattern.inputs()[i]).output_shapes[0];
    const Shape& model = graph.shape(match.variables[i]);
    add_shape_pairs(gen, model, env.dims);
    env.whole.emplace_back(gen, model);
  }
  for (size_t p = 0; p < pattern.nodes().size(); ++p) {
    if (match.nodes[p] < 0) continue;
    const Node& pn = pattern.node(static_cast<int32_t>(p));
    const Node& mn = graph.node(match.nodes[p]);
    for (size_t o = 0; o < pn.output_shapes.size(); ++o) {
      add_shape_pairs(pn.output_shapes[o], mn.output_shapes[o], env.dims);
      env.whole.emplace_back(pn.output_shapes[o], mn.output_shapes[o]);
    }
    for (size_t k = 0; k < pn.params.entries().size(); ++k) {
      const auto& [key, gv] = pn.params.entries()[k];
      if (!is_shape_param(pn.op->name, key)) continue;
      const ParamValue& mv = mn.params.entries()[k].second;
      if (auto* g = std::get_if<int64_t>(&gv)) env.dims.emplace_back(*g, std::get<int64_t>(mv));
      if (auto* g = std::get_if<std::vector<int64_t>>(&gv)) {
        const auto& m = std::get<std::vector<int64_t>>(mv);
        add_shape_pairs(*g, m, env.dims);
        env.whole.emplace_back(*g, m);
      }
    }
  }
  return env;
}

constexpr size_t kMaxChoices = 16;  // candidate values per parameter
constexpr size_t kMaxCombinations = 64;

// A value equal to a dimension takes that dimension's model value. One that
// equals none may be the product of a run of adjacent axes of one shape (a
// reshape's flattened axes: an image's H x W pixels as one axis) and takes
// the product of those axes at the model's shapes. Otherwise one that
// divides a dimension or is a multiple of one scales with it: the halves of
// a channel axis (split-K's kernel pieces, a dimension / 2) and stacked
// copies of it (its grouped outputs, a dimension x 2) re-derive as the
// model's dimension / 2 and x 2. The proof checks whichever is taken.
std::vector<int64_t> element_candidates(int64_t gen, const Environment& env) {
  std::vector<int64_t> out;
  auto add = [&](int64_t m) {
    if (std::find(out.begin(), out.end(), m) == out.end()) out.push_back(m);
  };
  for (const auto& [g, m] : env.dims)
    if (g == gen) add(m);
  if (out.empty() && gen > 1) {
    for (const auto& [g, m] : env.whole) {
      if (g.size() != m.size()) continue;
      for (size_t first = 0; first < g.size(); ++first) {
        int64_t gen_run = g[first], model_run = m[first];
        for (size_t last = first + 1; last < g.size() && gen_run < gen; ++last) {
          gen_run *= g[last], model_run *= m[last];
          if (gen_run == gen) add(model_run);
        }
      }
    }
  }
  if (out.empty() && gen > 1) {
    for (const auto& [g, m] : env.dims)
      if (g > gen && g % gen == 0 && m % (g / gen) == 0) add(m / (g / gen));
    for (const auto& [g, m] : env.dims)
      if (g > 1 && g < gen && gen % g == 0) add(m * (gen / g));
  }
  if (out.empty()) out.push_back(gen);
  return out;
}

// The values a shape-dependent parameter may take at the model's shapes, most likely first.
std::vector<ParamValue> candidates(const ParamValue& gen, const Environment& env) {
  std::vector<ParamValue> out;
  if (auto* g = std::get_if<int64_t>(&gen)) {
    for (int64_t m : element_candidates(*g, env)) out.emplace_back(m);
    return out;
  }
  const auto* list = std::get_if<std::vector<int64_t>>(&gen);
  if (!list) return {gen};
  auto add = [&](const std::vector<int64_t>& v) {
    if (out.size() < kMaxChoices && std::find(out.begin(), out.end(), ParamValue(v)) == out.end()) out.emplace_back(v);
  };
  for (const auto& [g, m] : env.whole)
    if (g == *list) add(m);
  std::vector<std::vector<int64_t>> per_element;
  for (int64_t g : *list) per_element.push_back(element_candidates(g, env));
  std::vector<size_t> at(list->size(), 0);
  while (out.size() < kMaxChoices) {  // the cartesian product, in order
    std::vector<int64_t> v;
    for (size_t i = 0; i < at.size(); ++i) v.push_back(per_element[i][at[i]]);
    add(v);
    size_t i = at.size();
    while (i > 0 && ++at[i - 1] == per_element[i - 1].size()) at[--i] = 0;
    if (i == 0) break;
  }
  return out;
}

void collect_shape_params(Expr& e, std::vector<ParamValue*>& out) {
  if (e.kind != Expr::Kind::kCall) return;
  for (auto& [key, value] : e.params)
    if (is_shape_param(e.name, key)) out.push_back(&value);
  for (Expr& a : e.args) collect_shape_params(a, out);
}

}  // namespace

InstanceCache::Stats InstanceCache::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

std::optional<std::shared_ptr<const InstanceCache::Built>> InstanceCache::find(const std::string& key) {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    ++stats_.misses;
    return std::nullopt;
  }
  ++stats_.hits;
  return it->second;
}

void InstanceCache::insert(std::string key, std::shared_ptr<const Built> built) {
  std::lock_guard lock(mutex_);
  if (entries_.size() >= capacity_) entries_.clear();
  entries_.emplace(std::move(key), std::move(built));
}

std::optional<Instance> instantiate(const Graph& graph, const DirectedRule& rule, const Match& match,
                                    InstanceCache* cache) {
  const Graph& pattern = rule.graphs.source;
  // Each model value is named by the first variable bound to it.
  std::map<std::string, std::string> rename;
  std::vector<std::pair<ValueRef, std::string>> names;
  ShapeMap shapes;
  DTypeMap dtypes;
  Instance inst;
  for (size_t i = 0; i < pattern.inputs().size(); ++i) {
    const std::string& var = pattern.node(pattern.inputs()[i]).name;
    const ValueRef v = match.variables[i];
    auto it = std::find_if(names.begin(), names.end(), [&](const auto& p) { return p.first == v; });
    if (it == names.end()) {
      names.emplace_back(v, var);
      shapes[var] = graph.shape(v);
      if (graph.dtype(v) != DType::kFloat) dtypes[var] = graph.dtype(v);
      inst.bindings[var] = v;
      if (!inst.shapes.empty()) inst.shapes += ",";
      inst.shapes += var;
      inst.shapes += "=";
      inst.shapes += shape_to_string(graph.shape(v));
      rename[var] = var;
    } else {
      rename[var] = it->second;
    }
  }
  auto leaf = [&](ValueRef v) -> std::optional<std::string> {
    for (const auto& [value, name] : names)
      if (value == v) return name;
    return std::nullopt;
  };
  std::vector<Expr> source;
  for (ValueRef out : match.outputs) source.push_back(to_expr(graph, out, leaf));
  std::string source_text;
  append_text(source, source_text);

  // The rule's text, the source and the variables' shapes and element
  // types decide the rest (the environment's dimensions are the variables'
  // and the source's, whose parameters the source text prints).
  std::string key;
  if (cache) {
    key = rule.text;
    key += '\n';
    key += source_text;
    key += '\n';
    key += inst.shapes;
    for (const auto& [var, dtype] : dtypes) {
      key += ',';
      key += var;
      key += ':';
      key += dtype_name(dtype);
    }
    if (auto hit = cache->find(key)) {
      if (!*hit) return std::nullopt;
      inst.text = (*hit)->text;
      inst.rule = (*hit)->rule;
      inst.proof_axioms = rule.proof_axioms;
      return inst;
    }
  }

  // Parsed again here rather than kept with every rule: a --max-ops 4
  // database's parsed sides took a gigabyte; a parse is microseconds.
  std::vector<Expr> target = parse_rule_expr(rule.text).target;
  std::vector<ParamValue*> params;
  for (Expr& e : target) collect_shape_params(e, params);
  const Environment env = environment(graph, rule, match);
  std::vector<std::vector<ParamValue>> choices;
  for (ParamValue* p : params) choices.push_back(candidates(*p, env));
  const VariableRenamer renamer = [&](const std::string& name) -> const std::string& { return rename.at(name); };

  std::vector<size_t> at(params.size(), 0);
  for (size_t tried = 0; tried < kMaxCombinations; ++tried) {
    for (size_t i = 0; i < params.size(); ++i) *params[i] = choices[i][at[i]];
    std::string text = source_text;
    text += " => ";
    append_text(target, text, renamer);
    try {
      inst.rule = build_rule(text, shapes, dtypes);
      inst.text = std::move(text);
      inst.proof_axioms = rule.proof_axioms;
      if (cache)
        cache->insert(std::move(key),
                      std::make_shared<const InstanceCache::Built>(InstanceCache::Built{inst.text, inst.rule}));
      return inst;
    } catch (const ParseError&) {
      // this choice of parameters does not type-check (build_rule reports
      // shape and parameter errors as ParseErrors); try the next
    }
    size_t i = at.size();
    while (i > 0 && ++at[i - 1] == choices[i - 1].size()) at[--i] = 0;
    if (i == 0) break;
  }
  if (cache) cache->insert(std::move(key), nullptr);
  return std::nullopt;
}

namespace {

// The names of a database's `axioms` column (a JSON array of strings); none
// for "" or a value that is not such an array (the full search runs).
std::vector<std::string> axiom_names(const std::string& json_array) {
  std::vector<std::string> names;
  if (json_array.empty()) return names;
  const nlohmann::json parsed = nlohmann::json::parse(json_array, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_array()) return names;
  for (const auto& name : parsed)
    if (name.is_string()) names.push_back(name.get<std::string>());
  return names;
}

// `op(a, b) = op(b, a)` with a, b variables.
bool swaps_arguments(const axioms::Axiom& axiom) {
  if (axiom.lhs.size() != 1 || axiom.rhs.size() != 1) return false;
  const Expr& l = axiom.lhs[0];
  const Expr& r = axiom.rhs[0];
  auto is_var = [](const Expr& e) { return e.kind == Expr::Kind::kVar; };
  return l.kind == Expr::Kind::kCall && r.kind == Expr::Kind::kCall && l.name == r.name && l.args.size() == 2 &&
         r.args.size() == 2 && l.params.empty() && r.params.empty() && is_var(l.args[0]) && is_var(l.args[1]) &&
         is_var(r.args[0]) && is_var(r.args[1]) && l.args[0].name == r.args[1].name &&
         l.args[1].name == r.args[0].name && l.args[0].name != l.args[1].name;
}

}  // namespace

InstanceProver::InstanceProver(const verifier::Prover& prover, verifier::ProofOptions options)
    : prover_(prover), options_(options) {
  for (const axioms::Axiom& axiom : prover.axioms())
    if (swaps_arguments(axiom)) argument_swaps_.push_back(axiom.name);
}

bool InstanceProver::proved(const Instance& instance) {
  if (instance.region_checked) {  // a corrected partial rule: no Z3 proof, the check decided
    std::lock_guard lock(mutex_);
    stats_.corrected += *instance.region_checked;
    return *instance.region_checked;
  }
  std::string key = instance.text;
  key += " | ";
  key += instance.shapes;
  {
    std::lock_guard lock(mutex_);
    if (auto it = cache_.find(key); it != cache_.end()) {
      ++stats_.cache_hits;
      return it->second;
    }
  }
  const auto start = std::chrono::steady_clock::now();
  verifier::ProofResult result;
  bool replayed = false;
  if (std::vector<std::string> axioms = axiom_names(instance.proof_axioms); !axioms.empty()) {
    axioms.insert(axioms.end(), argument_swaps_.begin(), argument_swaps_.end());
    verifier::ProofOptions replay = options_;
    replay.only_axioms = std::move(axioms);
    result = prover_.prove(instance.rule, replay);
    replayed = result.status == verifier::ProofStatus::kProved;
  }
  if (!replayed) result = prover_.prove(instance.rule, options_);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const bool ok = result.status == verifier::ProofStatus::kProved;
  std::lock_guard lock(mutex_);
  ++stats_.proofs;
  stats_.replayed += replayed;
  ++(ok ? stats_.proved : stats_.failed);
  stats_.proof_ms += ms;
  // TGR_DEBUG_INSTANCES=1: print every instance proof (why a rule never applies to a model).
  if (std::getenv("TGR_DEBUG_INSTANCES"))
    std::fprintf(stderr, "instance %s in %.1f ms%s: %s | %s\n", ok ? "proved" : "NOT proved", ms,
                 replayed ? " (replayed)" : "", instance.text.c_str(), instance.shapes.c_str());
  cache_.emplace(std::move(key), ok);
  return ok;
}

InstanceProofStats InstanceProver::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace tgr::optimizer
