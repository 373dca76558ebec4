#include "generator/derivation_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>
#include <string_view>

#include <nlohmann/json.hpp>

#include "generator/derivation_match.h"
#include "generator/enumeration_space.h"
#include "ir/op_def.h"
#include "ir/text.h"
#include "rules_db/rules_db.h"
#include "runtime/interpreter.h"

namespace tgr::gen {

std::vector<DerivationSource> default_derivation_sources() {
  return {
      {"3x3 convolution, 4 channels", "conv2d(i0, k0)", "i0=1x4x5x5,k0=3x4x3x3"},
      {"3x3 convolution, 8 channels", "conv2d(i0, k0)", "i0=1x8x5x5,k0=3x8x3x3"},
      {"strided 3x3 convolution, 4 channels", "conv2d[stride=2x2, pad=1x1x1x1](i0, k0)", "i0=1x4x6x6,k0=3x4x3x3"},
      {"strided 3x3 convolution, 8 channels", "conv2d[stride=2x2, pad=1x1x1x1](i0, k0)", "i0=1x8x6x6,k0=3x8x3x3"},
      {"strided 1x1 convolution, 4 channels", "conv2d[stride=2x2, pad=valid](i0, k0)", "i0=1x4x6x6,k0=3x4x1x1"},
      {"strided 1x1 convolution, 8 channels", "conv2d[stride=2x2, pad=valid](i0, k0)", "i0=1x8x6x6,k0=3x8x1x1"},
      {"1x1 convolution of one image", "conv2d(i0, k0)", "i0=1x2x3x4,k0=5x2x1x1"},
      {"matrix product", "matmul(x0, x1)", "x0=2x4,x1=4x3"},
      {"batched matrix product", "batch_matmul(x0, x1)", "x0=2x3x4,x1=2x4x3"},
      {"product, transposed (a pair)", "transpose(matmul(x0, x1))", "x0=2x4,x1=4x3"},
      {"1x1 convolution, flattened (a pair)", "reshape[shape=1x5x12](conv2d(i0, k0))", "i0=1x2x3x4,k0=5x2x1x1"},
      {"product of a transpose (a pair)", "matmul(transpose(x0), x1)", "x0=4x2,x1=4x3"},
  };
}

namespace {

// An argument of a source: a variable or an operator's application, with
// the shapes of the variables in it.
struct Arg {
  std::string text;
  std::map<std::string, Shape> vars;
};

// A variable of each kind whose role fits `role` (any role but scalar for
// kAny and kSame), named kind + `index`.
std::vector<Arg> variable_args(const WorldSpec& world, Role role, int index) {
  std::vector<Arg> out;
  for (const VariableKind& k : world.kinds) {
    const bool any = role == Role::kAny || role == Role::kSame;
    if (any ? k.role == Role::kScalar : k.role != role) continue;
    const std::string name = k.kind + std::to_string(index);
    out.push_back({name, {{name, k.shape}}});
  }
  return out;
}

Role arg_role(const OpTemplate& t, size_t a) { return t.arg_roles[std::min<size_t>(a, 2)]; }

// Applications of `t` to one choice per argument that type-check (at most `limit`).
std::vector<Arg> applications(const OpTemplate& t, const std::vector<std::vector<Arg>>& choices, size_t limit) {
  std::vector<Arg> out;
  for (const auto& c : choices)
    if (c.empty()) return out;
  std::vector<size_t> pick(choices.size(), 0);
  while (out.size() < limit) {
    Arg app{t.label + "(", {}};
    bool clash = false;
    for (size_t a = 0; a < choices.size(); ++a) {
      const Arg& arg = choices[a][pick[a]];
      app.text += (a ? ", " : "") + arg.text;
      for (const auto& [name, shape] : arg.vars) clash = clash || !app.vars.emplace(name, shape).second;
    }
    app.text += ")";
    std::string shapes;
    for (const auto& [name, shape] : app.vars)
      shapes += (shapes.empty() ? "" : ",") + name + "=" + shape_to_string(shape);
    try {
      if (!clash) {
        build_graph(app.text, parse_shape_map(shapes));
        out.push_back(app);
      }
    } catch (const std::exception&) {  // the arguments do not fit the operator: try others
    }
    size_t a = 0;
    while (a < pick.size() && ++pick[a] == choices[a].size()) pick[a++] = 0;
    if (a == pick.size()) break;
  }
  return out;
}

// `t` over variables (argument a named kind + (base + a)).
std::vector<Arg> over_variables(const WorldSpec& world, const OpTemplate& t, int base, size_t limit) {
  std::vector<std::vector<Arg>> choices;
  for (size_t a = 0; a < static_cast<size_t>(t.arity); ++a)
    choices.push_back(variable_args(world, arg_role(t, a), base + static_cast<int>(a)));
  return applications(t, choices, limit);
}

// `consumer` with `producer`'s application at one argument and variables or
// another application of `producer` at the others (at most `limit` per argument).
std::vector<Arg> pairs(const WorldSpec& world, const OpTemplate& consumer, const OpTemplate& producer, size_t limit) {
  std::vector<Arg> out;
  const std::vector<Arg> inner = over_variables(world, producer, 0, 2), other = over_variables(world, producer, 5, 1);
  for (size_t at = 0; at < static_cast<size_t>(consumer.arity); ++at) {
    std::vector<std::vector<Arg>> choices;
    for (size_t a = 0; a < static_cast<size_t>(consumer.arity); ++a) {
      if (a == at) {
        choices.push_back(inner);
        continue;
      }
      choices.push_back(other);
      for (Arg& v : variable_args(world, arg_role(consumer, a), 2 + static_cast<int>(a))) choices.back().push_back(v);
    }
    for (Arg& app : applications(consumer, choices, limit)) out.push_back(std::move(app));
  }
  return out;
}

DerivationSource source_of(const WorldSpec& world, const Arg& app) {
  std::string shapes;
  for (const auto& [name, shape] : app.vars)
    shapes += (shapes.empty() ? "" : ",") + name + "=" + shape_to_string(shape);
  return {world.name + ": " + app.text, app.text, shapes};
}

// Both sides of `rule` agree on the same random inputs in domain T.
template <class T>
bool sides_agree(const Rule& rule, uint64_t seed) {
  const std::vector<Tensor<T>> in = random_inputs<T>(rule.source, seed);
  const auto a = evaluate<T>(rule.source, std::span<const Tensor<T>>(in));
  const auto b = evaluate<T>(rule.target, std::span<const Tensor<T>>(in));
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k) {
    if (a[k].shape != b[k].shape) return false;
    for (size_t i = 0; i < a[k].data.size(); ++i) {
      if constexpr (std::is_same_v<T, double>) {
        if (!(std::fabs(a[k].data[i] - b[k].data[i]) <= 1e-9 * (1 + std::fabs(a[k].data[i])))) return false;
      } else if (!(a[k].data[i] == b[k].data[i])) {
        return false;
      }
    }
  }
  return true;
}

// The source as a program: one stage per operator output (from the
// table's expressions), the variables its inputs. `like`: the parameters of
// its first operator that is matched as a computing kernel.
Program source_program(const Graph& g, std::vector<std::string>& input_names, const Params*& like) {
  Program p;
  std::map<std::pair<int32_t, int32_t>, int> tensor;  // (node, output) -> program tensor
  for (int32_t i = 0; i < static_cast<int32_t>(g.nodes().size()); ++i) {
    const Node& n = g.node(i);
    if (n.is_input()) {
      tensor[{i, 0}] = -1 - static_cast<int>(p.inputs.size());
      p.inputs.push_back(n.output_shapes.at(0));
      input_names.push_back(n.name);
      continue;
    }
    const expr::ExpressionHooks* hooks = n.op ? expr::expression_hooks(*n.op) : nullptr;
    if (!hooks)
      throw std::invalid_argument(
          std::string("derivation source has an operator without an expression: ").append(to_text(g)));
    if (!like && hooks->instances) like = &n.params;
    std::vector<Shape> shapes;
    Stage proto;
    for (ValueRef v : n.inputs) {
      shapes.push_back(g.shape(v));
      proto.reads.push_back(tensor.at({v.node, v.output}));
    }
    const std::vector<DType> floats(shapes.size(), DType::kFloat);
    for (int32_t o = 0; o < static_cast<int32_t>(n.output_shapes.size()); ++o) {
      Stage st = proto;
      st.expr = hooks->expression(OpCall{*n.op, n.params, shapes, floats, n.output_shapes}, o);
      tensor[{i, o}] = static_cast<int>(p.stages.size());
      p.stages.push_back(std::move(st));
    }
  }
  if (g.outputs().size() != 1 || tensor.at({g.outputs()[0].node, g.outputs()[0].output}) < 0)
    throw std::invalid_argument(std::string("derivation source must compute one output: ").append(to_text(g)));
  p.output = tensor.at({g.outputs()[0].node, g.outputs()[0].output});
  return p;
}

}  // namespace

std::vector<DerivationSource> space_derivation_sources(const std::string& space_name_or_file) {
  const Space space = load_space(space_name_or_file);
  std::vector<DerivationSource> out;
  auto derivable = [](const OpTemplate& t) { return t.op && t.arity > 0 && expr::expression_hooks(*t.op); };
  for (const WorldSpec& world : space.worlds) {
    for (const OpTemplate& t : world.templates)
      if (derivable(t))
        for (const Arg& app : over_variables(world, t, 0, 4)) out.push_back(source_of(world, app));
    // Producer and consumer pairs where one of the two only moves elements (what inline merges).
    for (const OpTemplate& consumer : world.templates)
      for (const OpTemplate& producer : world.templates)
        if (derivable(consumer) && derivable(producer) &&
            (consumer.op->traits.moves_elements || producer.op->traits.moves_elements))
          for (const Arg& app : pairs(world, consumer, producer, 2)) out.push_back(source_of(world, app));
  }
  return out;
}

bool rule_sides_agree(const Rule& rule, uint64_t seed) {
  return sides_agree<Fp>(rule, seed) && sides_agree<double>(rule, seed ^ 0xa11ce);
}

std::vector<DerivedRule> derive_rules(const DerivationSource& source, const DerivationOptions& options, uint64_t seed,
                                      DerivationCounts& counts) {
  const ShapeMap shapes = parse_shape_map(source.shapes);
  const Graph g = build_graph(source.program, shapes);
  std::vector<std::string> names;
  const Params* like = nullptr;
  const Program start = source_program(g, names, like);
  DerivationStats stats;
  const std::vector<Program> programs = derive(start, options, stats);
  counts.programs += static_cast<int64_t>(stats.programs);
  counts.bounded = counts.bounded || stats.bounded;
  const std::string src = to_text(g);
  std::set<std::string> seen{rules_db::rule_record_from_text(src + " => " + src).canonical};
  std::vector<DerivedRule> out;
  for (const Program& p : programs) {
    if (p.steps.empty()) continue;  // the source itself
    const std::optional<std::string> target = match_program(p, names, like);
    if (!target) continue;
    ++counts.matched;
    const std::string text = src + " => " + *target;
    if (!seen.insert(rules_db::rule_record_from_text(text).canonical).second) continue;
    const Rule rule = build_rule(text, shapes);
    if (!rule_sides_agree(rule, seed)) {
      ++counts.rejected;
      continue;
    }
    ++counts.candidates;
    std::string steps;
    for (const std::string& s : p.steps) steps += (steps.empty() ? "" : "; ") + s;
    out.push_back({text, source.shapes, derivation_kind(p), steps});
  }
  return out;
}

DerivationRunReport generate_derivations(const DerivationRunOptions& options, const std::atomic<bool>& stop) {
  const auto start = std::chrono::steady_clock::now();
  rules_db::RulesDb db = rules_db::RulesDb::open(options.db, true);
  const nlohmann::json settings{{"derivations", true},
                                {"max_depth", options.search.max_depth},
                                {"max_programs", options.search.max_programs},
                                {"seed", options.seed}};
  DerivationRunReport report;
  report.run = db.claim_run("generate", settings.dump(), {"generate"}).run.id;
  for (const DerivationSource& src : options.sources) {
    if (stop) break;
    const DerivationCounts before = report.counts;
    const std::vector<DerivedRule> rules = derive_rules(src, options.search, options.seed, report.counts);
    for (const DerivedRule& d : rules) {
      rules_db::RuleRecord r = rules_db::rule_record_from_text(d.text, d.shapes);
      r.constraints = nlohmann::json{
          {"generalizes", false},
          {"reason", "derived at the source's shapes"},
          {"derivation", d.kind},
          {"steps",
           d.steps}}.dump();
      r.note = "derivation: " + d.kind + " (" + d.steps + "); source: " + src.label;
      r.generator_run = report.run;
      if (db.insert_rules({r}) == 1) {
        ++report.inserted;
        ++report.by_kind[d.kind];
      }
    }
    if (options.progress)
      std::fprintf(stderr, "generate --derivations: %s: %lld programs, %lld matched, %zu candidate rules\n",
                   src.label.c_str(), static_cast<long long>(report.counts.programs - before.programs),
                   static_cast<long long>(report.counts.matched - before.matched), rules.size());
  }
  report.interrupted = stop;
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const nlohmann::json stats{{"programs", report.counts.programs},
                             {"matched", report.counts.matched},
                             {"candidates", report.counts.candidates},
                             {"rejected", report.counts.rejected},
                             {"inserted", report.inserted},
                             {"by_kind", report.by_kind}};
  db.finish_run(report.run, stop ? "interrupted" : "finished", stats.dump());
  return report;
}

}  // namespace tgr::gen
