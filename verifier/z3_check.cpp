#include "verifier/z3_check.h"

#include <z3++.h>

#include <climits>
#include <cstring>
#include <map>
#include <unordered_map>

namespace tgr::verifier {

namespace {

// Integers standing for a parameter value: an integer is itself, a list is
// its length then its elements, a word is a fixed code, a real its bits.
void flatten(const ParamValue& value, std::vector<int64_t>& out) {
  if (const auto* i = std::get_if<int64_t>(&value)) {
    out.push_back(*i);
  } else if (const auto* list = std::get_if<std::vector<int64_t>>(&value)) {
    out.push_back(static_cast<int64_t>(list->size()));
    out.insert(out.end(), list->begin(), list->end());
  } else if (const auto* word = std::get_if<std::string>(&value)) {
    int64_t code = 0;
    for (char c : *word) code = code * 131 + static_cast<unsigned char>(c);
    out.push_back(code & 0x7fffffffffffLL);
  } else {
    const double d = std::get<double>(value);
    int64_t bits = 0;
    std::memcpy(&bits, &d, sizeof bits);
    out.push_back(bits);
  }
}

// The Z3 symbol of value `output` of node `n`: a graph input is the tensor
// constant of its name, a constant the one of its hash; an operator output
// is a function named after the operator, the output (of several) and its
// signature, applied to the parameters' integers (`ints`) and the inputs.
// The encoder and the congruence closure both name terms through this.
std::string symbol(const Node& n, int32_t output, std::vector<int64_t>& ints) {
  ints.clear();
  if (n.is_input()) return n.name;
  if (n.is_constant()) return "constant_" + std::to_string(n.hash);
  for (const auto& entry : n.params.entries()) flatten(entry.second, ints);
  std::string name = n.op->name;
  // One function per output and per signature (a list parameter's length varies).
  for (size_t part :
       {n.output_shapes.size() > 1 ? static_cast<size_t>(output) : SIZE_MAX, ints.size(), n.inputs.size()}) {
    if (part == SIZE_MAX) continue;
    name += '/';
    name += std::to_string(part);
  }
  return name;
}

class Encoder {
 public:
  Encoder(z3::context& ctx, const Graph& g) : ctx_(ctx), g_(g), tensor_(ctx.uninterpreted_sort("Tensor")) {}

  z3::expr term(ValueRef v) {
    const uint64_t key = (static_cast<uint64_t>(v.node) << 16) | static_cast<uint64_t>(v.output);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    const Node& n = g_.node(v.node);
    z3::expr e(ctx_);
    std::vector<int64_t> ints;
    const std::string name = symbol(n, v.output, ints);
    if (!n.is_op()) {
      e = ctx_.constant(name.c_str(), tensor_);
    } else {
      z3::expr_vector args(ctx_);
      z3::sort_vector domain(ctx_);
      for (int64_t i : ints) {
        args.push_back(ctx_.int_val(i));
        domain.push_back(ctx_.int_sort());
      }
      for (ValueRef in : n.inputs) {
        args.push_back(term(in));
        domain.push_back(tensor_);
      }
      auto it = decls_.find(name);
      if (it == decls_.end()) it = decls_.emplace(name, ctx_.function(name.c_str(), domain, tensor_)).first;
      e = it->second(args);
    }
    memo_.emplace(key, e);
    return e;
  }

 private:
  z3::context& ctx_;
  const Graph& g_;
  z3::sort tensor_;
  std::unordered_map<uint64_t, z3::expr> memo_;
  std::map<std::string, z3::func_decl> decls_;
};

z3::expr disequality(z3::context& ctx, Encoder& enc, const std::vector<ValueRef>& source,
                     const std::vector<ValueRef>& target) {
  z3::expr_vector differs(ctx);
  for (size_t k = 0; k < source.size(); ++k) differs.push_back(enc.term(source[k]) != enc.term(target[k]));
  return z3::mk_or(differs);
}

z3::expr instance_formula(z3::context& ctx, Encoder& enc, const AxiomInstance& inst) {
  z3::expr_vector eqs(ctx);
  for (const Equation& e : inst.equations) eqs.push_back(enc.term(e.from) == enc.term(e.to));
  return z3::mk_and(eqs);
}

}  // namespace

// One solver per thread, kept between queries: creating a solver (its
// tactic and parameter tables) cost more than most queries (docs/benchmarks.md,
// "Measurements behind code comments"). Each query runs
// in its own push/pop scope, so nothing carries over.
struct ThreadSolver {
  z3::context ctx;
  z3::solver solver{ctx, "QF_UFLIA"};
  unsigned timeout_ms = 0;

  ThreadSolver() {
    z3::params p(ctx);
    // Z3 would otherwise install its own SIGINT handler around each check;
    // from several threads at once the handlers get restored out of order and
    // Ctrl-C lands in a dead one. `verify` handles Ctrl-C itself.
    p.set("ctrl_c", false);
    solver.set(p);
  }
  void set_timeout(unsigned ms) {
    if (ms == timeout_ms) return;
    z3::params p(ctx);
    p.set("timeout", ms == 0 ? UINT_MAX : ms);  // UINT_MAX: no timer
    solver.set(p);
    timeout_ms = ms;
  }
};

Z3Answer z3_check_equal(const Graph& terms, const std::vector<ValueRef>& source, const std::vector<ValueRef>& target,
                        const std::vector<const AxiomInstance*>& instances, unsigned timeout_ms) {
  thread_local ThreadSolver z3;
  z3::context& ctx = z3.ctx;
  Z3Answer answer;
  bool pushed = false;
  try {
    Encoder enc(ctx, terms);
    // Timeouts in steps of 100 ms: setting a parameter costs too, and the
    // time left of a proof differs on every call.
    z3.set_timeout(timeout_ms == 0 ? 0 : std::max(100u, timeout_ms / 100 * 100));
    z3::solver& solver = z3.solver;
    solver.push();
    pushed = true;
    z3::expr_vector literals(ctx);
    std::unordered_map<unsigned, size_t> by_literal;
    for (size_t i = 0; i < instances.size(); ++i) {
      std::string lit_name = "instance_";
      lit_name += std::to_string(i);
      z3::expr lit = ctx.bool_const(lit_name.c_str());
      solver.add(z3::implies(lit, instance_formula(ctx, enc, *instances[i])));
      by_literal.emplace(lit.id(), i);
      literals.push_back(lit);
    }
    solver.add(disequality(ctx, enc, source, target));
    switch (solver.check(literals)) {
      case z3::unsat: {
        answer.result = Z3Answer::Result::kUnsat;
        const z3::expr_vector core = solver.unsat_core();
        for (unsigned i = 0; i < core.size(); ++i) answer.core.push_back(by_literal.at(core[i].id()));
        std::sort(answer.core.begin(), answer.core.end());
        break;
      }
      case z3::sat: answer.result = Z3Answer::Result::kSat; break;
      default:
        answer.result = Z3Answer::Result::kUnknown;
        answer.reason = solver.reason_unknown();
        break;
    }
    solver.pop();
  } catch (const z3::exception& e) {
    answer.result = Z3Answer::Result::kUnknown;
    answer.reason = std::string("Z3 error: ") + e.msg();
    if (pushed) {
      try {
        z3.solver.pop();
      } catch (const z3::exception&) {
        z3.solver.reset();
      }
    }
  }
  return answer;
}

bool outputs_congruent(const Graph& terms, const std::vector<ValueRef>& source, const std::vector<ValueRef>& target,
                       const std::vector<const AxiomInstance*>& instances) {
  // Every value of the graph gets an index; node i's outputs follow those
  // of the nodes before it, whose indices are smaller (a node's inputs are
  // always earlier nodes: the graph only grows by find_or_add_op).
  const std::vector<Node>& nodes = terms.nodes();
  std::vector<size_t> first(nodes.size() + 1, 0);
  for (size_t i = 0; i < nodes.size(); ++i) first[i + 1] = first[i] + nodes[i].output_shapes.size();
  auto index = [&](ValueRef v) { return first.at(static_cast<size_t>(v.node)) + static_cast<size_t>(v.output); };
  std::vector<size_t> parent(first.back());
  for (size_t i = 0; i < parent.size(); ++i) parent[i] = i;
  auto find = [&parent](size_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  auto unite = [&](size_t a, size_t b) {
    a = find(a);
    b = find(b);
    if (a == b) return false;
    parent[std::max(a, b)] = std::min(a, b);
    return true;
  };
  // Each value's symbol and integers (the function Z3 applies) as a number.
  std::map<std::pair<std::string, std::vector<int64_t>>, int64_t> symbols;
  std::vector<int64_t> symbol_of(parent.size());
  std::vector<int64_t> ints;
  for (size_t i = 0; i < nodes.size(); ++i)
    for (int32_t k = 0; k < static_cast<int32_t>(nodes[i].output_shapes.size()); ++k) {
      std::string name = symbol(nodes[i], k, ints);
      const auto next = static_cast<int64_t>(symbols.size());
      symbol_of[first[i] + k] = symbols.emplace(std::pair{std::move(name), ints}, next).first->second;
    }
  for (const AxiomInstance* inst : instances)
    for (const Equation& e : inst->equations) unite(index(e.from), index(e.to));
  // Congruence to a fixed point: equal symbols applied to equal classes.
  std::vector<int64_t> signature;
  for (bool changed = true; changed;) {
    changed = false;
    std::unordered_map<std::string, size_t> by_signature;
    for (size_t i = 0; i < nodes.size(); ++i)
      for (int32_t k = 0; k < static_cast<int32_t>(nodes[i].output_shapes.size()); ++k) {
        signature.assign(1, symbol_of[first[i] + k]);
        for (ValueRef in : nodes[i].inputs) signature.push_back(static_cast<int64_t>(find(index(in))));
        std::string key(reinterpret_cast<const char*>(signature.data()), signature.size() * sizeof(int64_t));
        auto [it, inserted] = by_signature.emplace(std::move(key), first[i] + k);
        if (!inserted) changed |= unite(it->second, first[i] + k);
      }
  }
  for (size_t k = 0; k < source.size(); ++k)
    if (find(index(source[k])) != find(index(target[k]))) return false;
  return true;
}

std::string z3_query_text(const Graph& terms, const std::vector<ValueRef>& source, const std::vector<ValueRef>& target,
                          const std::vector<const AxiomInstance*>& instances) {
  z3::context ctx;
  Encoder enc(ctx, terms);
  z3::solver solver(ctx, "QF_UFLIA");
  for (const AxiomInstance* inst : instances) solver.add(instance_formula(ctx, enc, *inst));
  solver.add(disequality(ctx, enc, source, target));
  std::string text;
  for (const AxiomInstance* inst : instances) text += "; " + instance_text(*inst) + "\n";
  return text + solver.to_smt2();
}

}  // namespace tgr::verifier
