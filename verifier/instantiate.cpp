// Instances of an axiom: enumeration of shapes and parameter values with
// pruning, substitution of parameters into the sides, and the graphs.
#include <algorithm>
#include <bit>
#include <charconv>
#include <random>
#include <unordered_map>

#include "verifier/axioms.h"
#include "ir/hash.h"
#include "verifier/conditions.h"

namespace tgr::axioms {

namespace {

[[noreturn, gnu::noinline]] void axiom_error(const Axiom& ax, const std::string& what) {
  throw AxiomError(ax.file, ax.line, 1, "axiom '" + ax.name + "': " + what);
}


// The text of a parameter value with the axiom's parameters replaced.
std::string substitute_text(const std::string& raw, const std::function<const ParamValue*(std::string_view)>& lookup) {
  const std::vector<std::string_view> tokens = value_tokens(raw);
  std::string out;
  for (size_t i = 0; i < tokens.size(); ++i) {
    std::string_view t = tokens[i];
    std::string piece(t);
    if (is_param_name(t)) {
      const ParamValue* v = lookup(t);
      if (!v) throw ParamError("parameter " + std::string(t) + " has no value");
      if (tokens.size() > 1 && !std::holds_alternative<int64_t>(*v))
        throw ParamError("parameter " + std::string(t) + " is " + param_value_to_string(*v) +
                         ", not an integer, in '" + raw + "'");
      piece = param_value_to_string(*v);
    }
    out += (i ? "x" : "") + piece;
  }
  return out;
}

ParamValue concrete_value(const OpDef& op, const ParamSpec& spec, const ParamValue& value,
                          const std::function<const ParamValue*(std::string_view)>& lookup) {
  if (!is_symbolic(value)) return value;
  const std::string text = substitute_text(std::get<std::string>(value), lookup);
  if (text.empty()) throw ParamError("parameter '" + spec.name + "': empty value");
  ParamValue v = parse_param_value(spec, text);
  check_param_value(op.name, spec, v);
  return v;
}

// ---- the compiled axiom ------------------------------------------------------

struct Node {
  const Expr* expr = nullptr;
  const OpDef* op = nullptr;  // null for a variable
  int var = -1;
  std::vector<int> args;
  bool symbolic = false;
  Params fixed;  // the parameters, when none is symbolic
  uint64_t deps = 0;
  // Symbolic parameters: the axiom parameters they read, and the concrete
  // Params for the values last seen (parsing them again on every
  // assignment would dominate the enumeration).
  std::vector<int> symbols;
  std::vector<ParamValue> cache_key;
  bool cache_valid = false, cache_legal = false;
  int64_t params_version = 0;
};

bool concat_rejects(const Params& params, const std::vector<Shape>& in) {
  const int64_t axis = params.get_int("axis");
  const Shape& first = in[0];
  if (axis >= static_cast<int64_t>(first.size())) return true;
  for (size_t i = 1; i < in.size(); ++i) {
    if (in[i].size() != first.size()) return true;
    for (size_t d = 0; d < first.size(); ++d)
      if (static_cast<int64_t>(d) != axis && in[i][d] != first[d]) return true;
  }
  return false;
}

bool broadcast_rejects(const Shape& a, const Shape& b) {
  for (size_t i = 1; i <= std::min(a.size(), b.size()); ++i) {
    const int64_t da = a[a.size() - i], db = b[b.size() - i];
    if (da != db && da != 1 && db != 1) return true;
  }
  return false;
}

// A shortcut for the operators whose type errors the enumeration meets most
// (concat, elementwise, matrix products): true only when shape inference
// would reject the call too, so no exception needs to be thrown for it.
bool quick_reject(const OpDef& op, const Params& params, const std::vector<Shape>& in) {
  switch (op.kind) {
    case OpKind::kConcat:
      return concat_rejects(params, in);
    case OpKind::kAdd:
    case OpKind::kMul:
    case OpKind::kSub:
      return broadcast_rejects(in[0], in[1]);
    case OpKind::kMatmul:
      return in[0].size() != 2 || in[1].size() != 2 || in[0][1] != in[1][0];
    case OpKind::kBatchMatmul:
      return in[0].size() != 3 || in[1].size() != 3 || in[0][0] != in[1][0] || in[0][2] != in[1][1];
    default:
      return false;
  }
}

struct KeyHash {
  size_t operator()(const std::vector<int64_t>& key) const {
    uint64_t h = kFnvOffset;
    for (int64_t v : key) h = fnv1a_step(h, static_cast<uint64_t>(v));
    return h;
  }
};

struct Check {
  bool is_node = false;
  int index = 0;  // node or condition
  uint64_t deps = 0;
};

struct Step {
  int symbol = -1;            // a variable (< V) or a parameter (V + index)
  std::vector<int> derived;   // parameters computed after binding it
  std::vector<int> checks;    // checks that become evaluable
};

class Enumerator {
 public:
  Enumerator(const Axiom& ax, const InstantiateOptions& options) : ax_(ax), options_(options) {
    V_ = static_cast<int>(ax.variables.size());
    P_ = static_cast<int>(ax.params.size());
    if (V_ + P_ > 64) axiom_error(ax, "more than 64 variables and parameters");
    for (const Expr& e : ax.lhs) add_node(e);
    for (const Expr& e : ax.rhs) add_node(e);
    for (size_t ci = 0; ci < ax.conditions.size(); ++ci) {
      const Condition& c = ax.conditions[ci];
      if (c.kind != Condition::Kind::kCompare) continue;
      bool is_definition = false;
      for (const ParamVar& p : ax.params) is_definition |= p.definition == static_cast<int>(ci);
      if (is_definition) continue;
      checks_.push_back({false, static_cast<int>(ci), term_deps(c.lhs) | term_deps(c.rhs)});
    }
    for (size_t i = 0; i < nodes_.size(); ++i)
      if (nodes_[i].op) checks_.push_back({true, static_cast<int>(i), nodes_[i].deps});
    schedule();
    var_shape_.resize(V_);
    param_value_.resize(P_);
    node_shape_.resize(nodes_.size());
  }

  Instantiation run() {
    rng_.seed(options_.seed ^ fnv1a(ax_.name, kFnvOffsetShort));
    bool ok = true;
    for (int d : initial_derived_) ok = ok && derive(d);
    for (int c : initial_checks_) ok = ok && run_check(c);
    if (ok) search(0);
    std::sort(result_.instances.begin(), result_.instances.end(),
              [](const Instance& a, const Instance& b) { return a.ordinal < b.ordinal; });
    result_.sampled = result_.admitted > result_.instances.size();
    return std::move(result_);
  }

 private:
  int add_node(const Expr& e) {
    Node n;
    n.expr = &e;
    if (e.kind == Expr::Kind::kVar) {
      for (int i = 0; i < V_; ++i)
        if (ax_.variables[i].name == e.name) n.var = i;
      if (n.var < 0) axiom_error(ax_, "variable '" + e.name + "' is not declared");
      n.deps = bit(n.var);
    } else {
      n.op = &OpTable::instance().get(e.name);
      for (const Expr& a : e.args) {
        const int child = add_node(a);
        n.args.push_back(child);
        n.deps |= nodes_[child].deps;
      }
      for (const auto& [key, value] : e.params)
        for (const std::string& s : symbols_of(value)) {
          n.symbolic = true;
          n.deps |= bit(V_ + param_index(s));
          n.symbols.push_back(param_index(s));
        }
      if (!n.symbolic) {
        try {
          n.fixed = n.op->make_params(e.params);
        } catch (const ParamError& err) {
          axiom_error(ax_, std::string(err.what()) + " in " + tgr::to_text(e));
        }
      }
    }
    nodes_.push_back(std::move(n));
    return static_cast<int>(nodes_.size()) - 1;
  }

  static uint64_t bit(int i) { return uint64_t{1} << i; }

  int param_index(std::string_view name) const { return conditions_.param_index(name); }
  int var_index(std::string_view name) const { return conditions_.var_index(name); }

  uint64_t term_deps(const Term& t) const {
    uint64_t d = 0;
    if (t.op == Term::Op::kParam) d |= bit(V_ + param_index(t.name));
    if (t.op == Term::Op::kDim || t.op == Term::Op::kRank || t.op == Term::Op::kShape) d |= bit(var_index(t.name));
    for (const Term& a : t.args) d |= term_deps(a);
    return d;
  }

  // Adds to `bound` the parameters whose definitions it allows; returns them in order.
  std::vector<int> close(uint64_t& bound) const {
    std::vector<int> out;
    bool changed = true;
    while (changed) {
      changed = false;
      for (int p = 0; p < P_; ++p) {
        const ParamVar& pv = ax_.params[p];
        if (pv.definition < 0 || (bound & bit(V_ + p))) continue;
        if ((term_deps(ax_.conditions[pv.definition].rhs) & ~bound) == 0) {
          bound |= bit(V_ + p);
          out.push_back(p);
          changed = true;
        }
      }
    }
    return out;
  }

  std::vector<int> ready_checks(uint64_t bound, std::vector<bool>& done) const {
    std::vector<int> out;
    for (size_t i = 0; i < checks_.size(); ++i)
      if (!done[i] && (checks_[i].deps & ~bound) == 0) {
        done[i] = true;
        out.push_back(static_cast<int>(i));
      }
    return out;  // conditions first, then nodes in post-order (their order in checks_)
  }

  // The binding order: parameters with domains first, then the variable that
  // makes the most checks evaluable (ties: declaration order), and so on.
  void schedule() {
    uint64_t bound = 0;
    std::vector<bool> done(checks_.size(), false);
    initial_derived_ = close(bound);
    initial_checks_ = ready_checks(bound, done);
    auto bind = [&](int symbol) {
      Step s;
      s.symbol = symbol;
      bound |= bit(symbol);
      s.derived = close(bound);
      s.checks = ready_checks(bound, done);
      steps_.push_back(std::move(s));
    };
    for (int p = 0; p < P_; ++p)
      if (ax_.params[p].definition < 0) bind(V_ + p);
    for (int round = 0; round < V_; ++round) {
      int best = -1;
      size_t best_count = 0;
      for (int v = 0; v < V_; ++v) {
        if (bound & bit(v)) continue;
        uint64_t trial = bound | bit(v);
        close(trial);
        size_t count = 0;
        for (size_t i = 0; i < checks_.size(); ++i) count += !done[i] && (checks_[i].deps & ~trial) == 0;
        if (best < 0 || count > best_count) {
          best = v;
          best_count = count;
        }
      }
      bind(best);
    }
    for (int p = 0; p < P_; ++p)
      if (!(bound & bit(V_ + p)))
        axiom_error(ax_, "parameter " + ax_.params[p].name + " cannot be computed (its definition refers to itself)");
  }

  // ---- evaluation of terms and checks ----

  bool compare(const Condition& c) const { return conditions_.holds(c); }

  bool derive(int p) {
    auto v = conditions_.definition_value(p);
    if (!v) return false;
    param_value_[p] = std::move(*v);
    return true;
  }

  const ParamValue* lookup(std::string_view name) const { return &param_value_[param_index(name)]; }

  // The concrete parameters of a symbolic node for the current values; false
  // when they are not legal for the operator.
  bool node_params(Node& n) {
    bool same = n.cache_valid;
    for (size_t i = 0; same && i < n.symbols.size(); ++i) same = n.cache_key[i] == param_value_[n.symbols[i]];
    if (same) return n.cache_legal;
    n.cache_key.clear();
    for (int p : n.symbols) n.cache_key.push_back(param_value_[p]);
    n.cache_valid = true;
    n.cache_legal = false;
    n.params_version = ++params_versions_;
    try {
      std::vector<std::pair<std::string, ParamValue>> given;
      for (const auto& [key, value] : n.expr->params)
        given.emplace_back(key, concrete_value(*n.op, *n.op->find_param(key), value,
                                               [this](std::string_view s) { return lookup(s); }));
      n.fixed = n.op->make_params(std::move(given));
      n.cache_legal = true;
    } catch (const ParamError&) {
    }
    return n.cache_legal;
  }

  bool infer(int index) {
    Node& n = nodes_[index];
    if (n.symbolic && !node_params(n)) return false;
    std::vector<Shape> in;
    in.reserve(n.args.size());
    for (int a : n.args) in.push_back(nodes_[a].op ? node_shape_[a] : var_shape_[nodes_[a].var]);
    // Shape inference reports a type error by throwing, which costs more than
    // everything else here; the same node meets the same input shapes many
    // times, so results are remembered.
    memo_key_.assign({index, n.params_version});
    for (const Shape& s : in) {
      memo_key_.push_back(static_cast<int64_t>(s.size()));
      memo_key_.insert(memo_key_.end(), s.begin(), s.end());
    }
    if (auto it = memo_.find(memo_key_); it != memo_.end()) {
      if (!it->second) return false;
      node_shape_[index] = *it->second;
      return true;
    }
    if (memo_.size() > 2'000'000) memo_.clear();
    if (quick_reject(*n.op, n.fixed, in)) {
      memo_.emplace(memo_key_, std::nullopt);
      return false;
    }
    std::vector<Shape> outs;
    try {
      outs = n.op->output_shapes(n.fixed, in);
    } catch (const ParamError&) {
      memo_.emplace(memo_key_, std::nullopt);
      return false;
    } catch (const ShapeError&) {
      memo_.emplace(memo_key_, std::nullopt);
      return false;
    }
    const int k = n.expr->output;
    if (outs.size() > 1 && k < 0)
      axiom_error(ax_, n.op->name + " has " + std::to_string(outs.size()) + " outputs: select one with .k in " +
                           tgr::to_text(*n.expr));
    if (k >= static_cast<int>(outs.size()))
      axiom_error(ax_, n.op->name + " has no output " + std::to_string(k) + " in " + tgr::to_text(*n.expr));
    node_shape_[index] = std::move(outs[std::max(k, 0)]);
    memo_.emplace(memo_key_, node_shape_[index]);
    return true;
  }

  bool run_check(int i) {
    const Check& c = checks_[i];
    return c.is_node ? infer(c.index) : compare(ax_.conditions[c.index]);
  }

  void search(size_t depth) {
    if (depth == steps_.size()) {
      admit();
      return;
    }
    const Step& s = steps_[depth];
    auto try_bound = [&]() {
      if (++result_.visited > options_.max_visited)
        axiom_error(ax_, "more than " + std::to_string(options_.max_visited) +
                             " partial assignments: add conditions that fix shapes (where shape(a) = shape(b))");
      for (int d : s.derived)
        if (!derive(d)) return;
      for (int c : s.checks)
        if (!run_check(c)) return;
      search(depth + 1);
    };
    if (s.symbol < V_) {
      for (const Shape& shape : kind_shapes(ax_.variables[s.symbol].kind)) {
        var_shape_[s.symbol] = shape;
        try_bound();
      }
    } else {
      for (const ParamValue& v : ax_.params[s.symbol - V_].domain) {
        param_value_[s.symbol - V_] = v;
        try_bound();
      }
    }
  }

  void admit() {
    const uint64_t ordinal = result_.admitted++;
    if (result_.instances.size() < options_.limit) {
      result_.instances.push_back(make_instance(ordinal));
    } else if (options_.limit > 0) {
      const uint64_t j = rng_() % result_.admitted;  // reservoir sampling
      if (j < options_.limit) result_.instances[j] = make_instance(ordinal);
    }
  }

  Instance make_instance(uint64_t ordinal) const {
    Instance inst;
    inst.ordinal = ordinal;
    for (int v = 0; v < V_; ++v) inst.shapes[ax_.variables[v].name] = var_shape_[v];
    for (int p = 0; p < P_; ++p) inst.params[ax_.params[p].name] = param_value_[p];
    return inst;
  }

  const Axiom& ax_;
  InstantiateOptions options_;
  int V_ = 0, P_ = 0;
  std::vector<Node> nodes_;
  std::vector<Check> checks_;
  std::vector<int> initial_derived_, initial_checks_;
  std::vector<Step> steps_;
  std::vector<Shape> var_shape_;
  std::vector<ParamValue> param_value_;
  ConditionEvaluator conditions_{ax_, var_shape_, param_value_};
  std::vector<Shape> node_shape_;
  std::mt19937_64 rng_;
  Instantiation result_;
  std::unordered_map<std::vector<int64_t>, std::optional<Shape>, KeyHash> memo_;
  std::vector<int64_t> memo_key_;
  int64_t params_versions_ = 0;
};

// ---- graphs -------------------------------------------------------------------

ValueRef build_node(Graph& g, const Expr& e, const std::map<std::string, ValueRef, std::less<>>& vars) {
  if (e.kind == Expr::Kind::kVar) return vars.at(e.name);
  std::vector<ValueRef> args;
  for (const Expr& a : e.args) args.push_back(build_node(g, a, vars));
  const OpDef& op = OpTable::instance().get(e.name);
  std::vector<ValueRef> outs = g.find_or_add_op(op, op.make_params(e.params), std::move(args));
  if (outs.size() > 1 && e.output < 0)
    throw ShapeError(e.name + " has " + std::to_string(outs.size()) + " outputs: select one with .k");
  const int k = std::max(e.output, 0);
  if (k >= static_cast<int>(outs.size())) throw ShapeError(e.name + " has no output " + std::to_string(k));
  return outs[k];
}

}  // namespace

Instantiation instantiate(const Axiom& axiom, const InstantiateOptions& options) {
  return Enumerator(axiom, options).run();
}

Instantiation instantiate(const Axiom& axiom, size_t limit, uint64_t seed) {
  InstantiateOptions o;
  o.limit = limit;
  o.seed = seed;
  return instantiate(axiom, o);
}

Expr substitute(const Expr& expr, const Bindings& params) {
  Expr out = expr;
  if (expr.kind == Expr::Kind::kCall) {
    const OpDef& op = OpTable::instance().get(expr.name);
    for (auto& [key, value] : out.params)
      value = concrete_value(op, *op.find_param(key), value, [&](std::string_view s) -> const ParamValue* {
        auto it = params.find(s);
        return it == params.end() ? nullptr : &it->second;
      });
    for (Expr& a : out.args) a = substitute(a, params);
  }
  return out;
}

Rule build_instance(const Axiom& axiom, const Instance& instance) {
  Rule rule;
  std::map<std::string, ValueRef, std::less<>> src_vars, dst_vars;
  for (const Variable& v : axiom.variables) {
    auto it = instance.shapes.find(v.name);
    if (it == instance.shapes.end()) throw ShapeError("variable '" + v.name + "' has no shape in the instance");
    src_vars[v.name] = rule.source.add_input(v.name, it->second);
    dst_vars[v.name] = rule.target.add_input(v.name, it->second);
  }
  for (const Expr& e : axiom.lhs) rule.source.add_output(build_node(rule.source, substitute(e, instance.params), src_vars));
  for (const Expr& e : axiom.rhs) rule.target.add_output(build_node(rule.target, substitute(e, instance.params), dst_vars));
  return rule;
}

}  // namespace tgr::axioms
