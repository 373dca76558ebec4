#include "generator/enumerator.h"
#include "ir/hash.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <map>
#include <unordered_map>

#include "ir/canonical.h"
#include "runtime/interpreter.h"

namespace tgr::gen {

bool operator<(const GraphRecord& a, const GraphRecord& b) {
  if (a.tie() != b.tie()) return a.tie() < b.tie();
  for (int i = 0; i < a.n_ops; ++i) {
    const auto ka = std::tie(a.ops[i].tmpl, a.ops[i].n_args, a.ops[i].args);
    const auto kb = std::tie(b.ops[i].tmpl, b.ops[i].n_args, b.ops[i].args);
    if (ka != kb) return ka < kb;
  }
  return a.outputs < b.outputs;
}

namespace {

uint64_t fingerprint(const Tensor<Fp>& t) {
  uint64_t h = 0x243f6a8885a308d3ULL;
  for (int64_t d : t.shape) h = hash_combine(h, static_cast<uint64_t>(d));
  for (const Fp& v : t.data) h = hash_combine(h, v.residue());
  return h;
}

// Shape inference results by (template, argument shapes), per thread: the
// set of shapes in a world is tiny, so this replaces nearly every call.
struct ShapeCache {
  std::map<Shape, uint16_t> ids;
  std::vector<Shape> shapes;
  std::unordered_map<uint64_t, std::vector<uint16_t>> results;  // empty vector = invalid
  uint16_t id(const Shape& s) {
    auto [it, fresh] = ids.emplace(s, static_cast<uint16_t>(shapes.size()));
    if (fresh) shapes.push_back(s);
    return it->second;
  }
};

struct Slot {
  Tensor<Fp> value;
  uint64_t fp = 0;
  uint16_t shape = 0;
  int8_t op = -1;  // producing operator, -1 for a variable
  Role role = Role::kTensor;
  uint64_t structure = 0;  // order-independent hash of how it is computed
};

class DepthFirstEnumeration {
 public:
  DepthFirstEnumeration(const World& world, uint8_t world_index, int max_ops, const std::vector<Tensor<Fp>>& vars,
                        const std::function<void(const GraphRecord&)>& sink, const std::atomic<bool>& stop,
                        EnumerationCounters& counters)
      : world_(world),
        world_index_(world_index),
        max_ops_(max_ops),
        n_vars_(static_cast<int>(vars.size())),
        sink_(sink),
        stop_(stop),
        counters_(counters) {
    for (size_t v = 0; v < vars.size(); ++v)
      slots_.push_back(Slot{vars[v], fingerprint(vars[v]), cache_.id(vars[v].shape), -1, world.variables[v].role,
                            hash_combine(0x452821e638d01377ULL, v)});
    // Variable kinds (the letters of the name) and indices within the kind.
    std::map<std::string, int> kinds;
    for (const Variable& v : world.variables) {
      const std::string kind = variable_kind(v.name);
      var_kind_.push_back(kinds.emplace(kind, static_cast<int>(kinds.size())).first->second);
      var_index_.push_back(std::stoi(v.name.substr(kind.size())));
    }
    n_kinds_ = static_cast<int>(kinds.size());
    for (const OpTemplate& t : world.templates) max_arity_ = std::max(max_arity_, t.arity);
  }

  // All graphs whose first operator is `first` (one task of the parallel loop).
  void run_branch(const OpRef& first) {
    if (try_push(first)) {
      dfs();
      pop();
    }
  }

  // Graphs of no operator: one variable, or two (a split's pieces can equal
  // them: split(concat(a, b)) => (a, b)).
  void emit_variables() {
    for (int a = 0; a < n_vars_; ++a) {
      if (variables_are_first_ones({a})) register_graph({static_cast<uint8_t>(a)});
      for (int b = a + 1; b < n_vars_; ++b)
        if (slots_[a].role == slots_[b].role && variables_are_first_ones({a, b}))
          register_graph({static_cast<uint8_t>(a), static_cast<uint8_t>(b)});
    }
  }

  // Every valid first operator, in order.
  std::vector<OpRef> first_ops() {
    std::vector<OpRef> out;
    for_each_candidate([&](const OpRef& op) { out.push_back(op); });
    return out;
  }

 private:
  bool roles_fit(const OpTemplate& t, const OpRef& op) const {
    for (int a = 0; a < op.n_args; ++a) {
      const Role want = t.arg_roles[a] == Role::kSame ? slots_[op.args[0]].role : t.arg_roles[a];
      // A value of role "any" (a variable of a space's kind used in every
      // role, such as a kernel that is also convolved as an image) fits all.
      const Role have = slots_[op.args[a]].role;
      if (want != Role::kAny && have != Role::kAny && have != want) return false;
    }
    return true;
  }

  bool reads_output_of(const OpRef& op, int producer) const {
    for (int a = 0; a < op.n_args; ++a)
      if (slots_[op.args[a]].op == producer) return true;
    return false;
  }

  // Calls f for every operator application over the current slots that the
  // ordering rules allow.
  template <class F>
  void for_each_candidate(F f) {
    const int n = static_cast<int>(slots_.size());
    for (uint16_t t = 0; t < world_.templates.size(); ++t) {
      const OpTemplate& tmpl = world_.templates[t];
      OpRef op;
      op.tmpl = t;
      op.n_args = static_cast<uint8_t>(tmpl.arity);
      auto consider = [&] {
        // Of two adjacent operators where the second does not read the
        // first, only the order with increasing keys is enumerated. Every
        // graph keeps an order that passes (pick, at each step, the
        // smallest-key operator whose inputs exist), so no graph is lost,
        // while reorderings of independent operators are not repeated.
        if (!ops_.empty() && !reads_output_of(op, static_cast<int>(ops_.size()) - 1) && !before(ops_.back(), op)) return;
        for (const OpRef& existing : ops_)
          if (existing == op) return;  // the same node twice
        if (!roles_fit(tmpl, op)) return;
        // A commutative operator's arguments in one order, unless their
        // roles differ (add (image, bias)): then only one order fits.
        if (tmpl.op->commutative && tmpl.symmetric_roles() && op.args[0] > op.args[1]) return;
        // One value as two arguments (add(a, a), concat(a, a)) only makes
        // special cases of rules over distinct values.
        for (int a = 1; a < op.n_args; ++a)
          for (int b = 0; b < a; ++b)
            if (op.args[a] == op.args[b]) return;
        f(op);
      };
      if (tmpl.arity == 0) {
        consider();
      } else if (tmpl.arity == 1) {
        for (int a = 0; a < n; ++a) {
          op.args[0] = static_cast<uint8_t>(a);
          consider();
        }
      } else if (tmpl.arity == 2) {
        for (int a = 0; a < n; ++a)
          for (int b = 0; b < n; ++b) {
            op.args[0] = static_cast<uint8_t>(a);
            op.args[1] = static_cast<uint8_t>(b);
            consider();
          }
      } else {  // 3 (layer_norm: x, scale, bias)
        for (int a = 0; a < n; ++a)
          for (int b = 0; b < n; ++b)
            for (int c = 0; c < n; ++c) {
              op.args = {static_cast<uint8_t>(a), static_cast<uint8_t>(b), static_cast<uint8_t>(c)};
              consider();
            }
      }
    }
  }

  static bool before(const OpRef& a, const OpRef& b) {
    return std::tie(a.tmpl, a.args) < std::tie(b.tmpl, b.args);
  }

  // Output shapes of `op` on the current slots; empty when it does not apply.
  const std::vector<uint16_t>& output_shapes(const OpRef& op) {
    // template (12 bits), then one 16-bit shape id per argument (+1, so 0 is "none")
    uint64_t key = op.tmpl;
    for (int a = 0; a < 3; ++a) key = (key << 16) | (a < op.n_args ? slots_[op.args[a]].shape + 1u : 0u);
    auto it = cache_.results.find(key);
    if (it != cache_.results.end()) return it->second;
    const OpTemplate& tmpl = world_.templates[op.tmpl];
    std::vector<Shape> in;
    for (int a = 0; a < op.n_args; ++a) in.push_back(cache_.shapes[slots_[op.args[a]].shape]);
    std::vector<uint16_t> ids;
    if (accepts(tmpl, in)) {
      try {
        for (const Shape& s : tmpl.op->output_shapes(tmpl.params, in)) {
          double count = 1;
          for (int64_t d : s) count *= static_cast<double>(d);
          if (!util::within(count, world_.max_elements)) {  // the space's limit: not applied here
            ids.clear();
            break;
          }
          ids.push_back(cache_.id(s));
        }
      } catch (const ShapeError&) {
        ids.clear();
      }
    }
    return cache_.results.emplace(key, std::move(ids)).first->second;
  }

  // TASO's operator set is narrower than the table's operators: elementwise
  // operators on equal shapes (no broadcasting: scalar_mul scales, unless
  // the space's template says `broadcasting`), transpose of matrices (or of
  // any rank with an explicit perm), scalar_mul of a tensor. This keeps
  // broadcasting variants of one computation from flooding the classes.
  static bool accepts(const OpTemplate& t, const std::vector<Shape>& in) {
    switch (t.op->kind) {
      case OpKind::kAdd:
      case OpKind::kMul:
        return t.broadcasting || in[0] == in[1];
      case OpKind::kTranspose:
        return in[0].size() == 2 || !t.params.get_ints("perm").empty();
      case OpKind::kReshape:
        return in[0] != Shape(t.params.get_ints("shape"));  // else the identity
      case OpKind::kScalarMul:
      case OpKind::kRelu:
      case OpKind::kConcat:
      case OpKind::kSplit:
        return !in[0].empty();
      default:
        return true;
    }
  }

  bool try_push(const OpRef& op) {
    const std::vector<uint16_t>& outs = output_shapes(op);
    if (outs.empty()) return false;
    const OpTemplate& tmpl = world_.templates[op.tmpl];
    std::vector<Shape> in_shapes, out_shapes;
    std::vector<DType> dtypes(op.n_args, DType::kFloat);
    std::vector<const Tensor<Fp>*> in;
    for (int a = 0; a < op.n_args; ++a) {
      in.push_back(&slots_[op.args[a]].value);
      in_shapes.push_back(in.back()->shape);
    }
    std::vector<Tensor<Fp>> results;
    for (uint16_t s : outs) {
      out_shapes.push_back(cache_.shapes[s]);
      results.emplace_back(cache_.shapes[s]);
    }
    const OpCall call{*tmpl.op, tmpl.params, in_shapes, dtypes, out_shapes};
    tmpl.op->kernels.field(call, in, results);
    const Role role = tmpl.output_role == Role::kSame ? slots_[op.args[0]].role : tmpl.output_role;
    uint64_t structure = hash_combine(0xa4093822299f31d0ULL, op.tmpl);
    std::array<uint64_t, 3> arg_structure{};
    for (int a = 0; a < op.n_args; ++a) arg_structure[a] = slots_[op.args[a]].structure;
    if (tmpl.op->commutative) std::sort(arg_structure.begin(), arg_structure.begin() + op.n_args);
    for (int a = 0; a < op.n_args; ++a) structure = hash_combine(structure, arg_structure[a]);
    for (size_t k = 0; k < results.size(); ++k) {
      const uint64_t fp = fingerprint(results[k]);
      slots_.push_back(Slot{std::move(results[k]), fp, outs[k], static_cast<int8_t>(ops_.size()), role, hash_combine(structure, k)});
    }
    ops_.push_back(op);
    counters_.states.fetch_add(1, std::memory_order_relaxed);
    return true;
  }

  void pop() {
    const int op = static_cast<int>(ops_.size()) - 1;
    while (static_cast<int>(slots_.size()) > n_vars_ && slots_.back().op == op) slots_.pop_back();
    ops_.pop_back();
  }

  // The connected pieces of the operators (two are in one piece when one
  // reads the other's output or both read one variable), and the variables
  // they read.
  struct Pieces {
    int count = 0;
    std::array<int8_t, kMaxOps> of_op{};
    std::array<int8_t, 256> of_variable{};      // -1: read by none
    std::array<uint32_t, 16> variables_used{};  // per kind, a bit per index
  };
  Pieces pieces() const {
    const int n = static_cast<int>(ops_.size());
    std::array<int, kMaxOps> parent;
    for (int i = 0; i < n; ++i) parent[i] = i;
    auto find = [&](int i) {
      while (parent[i] != i) i = parent[i] = parent[parent[i]];
      return i;
    };
    std::array<int, 256> var_user;
    var_user.fill(-1);
    Pieces p;
    for (int i = 0; i < n; ++i)
      for (int a = 0; a < ops_[i].n_args; ++a) {
        const int s = ops_[i].args[a];
        const int other = slots_[s].op >= 0 ? slots_[s].op : var_user[s];
        if (slots_[s].op < 0) {
          var_user[s] = i;
          p.variables_used[var_kind_[s]] |= 1u << var_index_[s];
        }
        if (other >= 0) parent[find(i)] = find(other);
      }
    for (int i = 0; i < n; ++i) {
      p.of_op[i] = static_cast<int8_t>(find(i));
      if (p.of_op[i] == i) ++p.count;
    }
    for (int s = 0; s < n_vars_; ++s)
      p.of_variable[s] = static_cast<int8_t>(var_user[s] < 0 ? -1 : p.of_op[var_user[s]]);
    return p;
  }

  // A registered graph is one connected piece.
  bool connected() const { return pieces().count == 1; }

  // Whether the operators (in `now`), with `op` added, can still grow into a
  // graph that is registered within max_ops operators. Each further
  // operator joins at most as many pieces as it has arguments (one piece
  // each) and brings in at most that many variables, so a graph that is too
  // split, or misses too many of its kinds' first variables (x1 used, x0
  // not: variables_are_first_ones), cannot. Cutting such a branch before its
  // operator is evaluated loses no graph: none below it would be registered.
  bool can_register_below(const Pieces& now, const OpRef& op) const {
    std::array<int, 3> touched{};
    int n_touched = 0;
    std::array<uint32_t, 16> used = now.variables_used;
    for (int a = 0; a < op.n_args; ++a) {
      const int s = op.args[a];
      const int piece = slots_[s].op >= 0 ? now.of_op[slots_[s].op] : now.of_variable[s];
      if (slots_[s].op < 0) used[var_kind_[s]] |= 1u << var_index_[s];
      if (piece >= 0 && std::find(touched.begin(), touched.begin() + n_touched, piece) == touched.begin() + n_touched)
        touched[n_touched++] = piece;
    }
    const int split = now.count - n_touched;  // pieces after adding op, less one
    // Variables still to read for the used ones to be the first ones.
    int missing = 0;
    for (int k = 0; k < n_kinds_; ++k)
      if (used[k] != 0) missing += (32 - std::countl_zero(used[k])) - std::popcount(used[k]);
    const int further = max_ops_ - static_cast<int>(ops_.size()) - 1;
    return split <= further * std::max(max_arity_ - 1, 0) && missing <= further * max_arity_;
  }

  // Graphs are kept only when each kind's variables in use are its first
  // ones (x0, x1, not x1 alone): renamings of one graph are not kept again.
  // A rule's sides can always be renamed so that both are of this form (the
  // variables of the side using fewer first), so no rule is lost; only
  // renamed copies, which the renaming pass would remove, are never paired.
  bool variables_are_first_ones(const std::vector<int>& vars) const {
    std::array<uint32_t, 16> used{};
    for (int v : vars) used[var_kind_[v]] |= 1u << var_index_[v];
    for (int k = 0; k < n_kinds_; ++k)
      if ((used[k] & (used[k] + 1)) != 0) return false;  // not of the form 0..01..1
    return true;
  }

  void emit() {
    if (!connected()) return;
    {
      std::vector<int> vars;
      for (const OpRef& op : ops_)
        for (int a = 0; a < op.n_args; ++a)
          if (slots_[op.args[a]].op < 0) vars.push_back(op.args[a]);
      if (!variables_are_first_ones(vars)) return;
    }
    // Outputs: values nobody reads; a split whose other outputs are read
    // does not make the rest outputs.
    std::array<bool, 256> read{};
    for (const OpRef& op : ops_)
      for (int a = 0; a < op.n_args; ++a) read[op.args[a]] = true;
    std::array<bool, kMaxOps> op_read{};
    for (int s = n_vars_; s < static_cast<int>(slots_.size()); ++s)
      if (read[s]) op_read[slots_[s].op] = true;
    std::vector<uint8_t> outputs;
    for (int s = n_vars_; s < static_cast<int>(slots_.size()); ++s)
      if (!read[s] && !op_read[slots_[s].op]) outputs.push_back(static_cast<uint8_t>(s));
    if (outputs.empty() || outputs.size() > kMaxOutputs) return;
    register_graph(outputs);
  }

  // Gives the sink the current operators with these output slots, listed in
  // fingerprint order; the key hashes their fingerprints, the structure
  // their structural hashes.
  void register_graph(const std::vector<uint8_t>& output_slots) {
    std::vector<std::pair<uint64_t, uint8_t>> outs;
    for (uint8_t s : output_slots) outs.emplace_back(slots_[s].fp, s);
    std::sort(outs.begin(), outs.end());
    GraphRecord r;
    r.key = hash_combine(0x13198a2e03707344ULL, outs.size());
    r.structure = hash_combine(0x082efa98ec4e6c89ULL, outs.size());
    for (size_t k = 0; k < outs.size(); ++k) {
      r.key = hash_combine(r.key, outs[k].first);
      r.structure = hash_combine(r.structure, slots_[outs[k].second].structure);
      r.outputs[k] = outs[k].second;
    }
    r.world = world_index_;
    r.n_ops = static_cast<uint8_t>(ops_.size());
    r.n_outputs = static_cast<uint8_t>(outs.size());
    std::copy(ops_.begin(), ops_.end(), r.ops.begin());
    counters_.registered.fetch_add(1, std::memory_order_relaxed);
    sink_(r);
  }

  void dfs() {
    emit();
    if (static_cast<int>(ops_.size()) >= max_ops_ || stop_.load(std::memory_order_relaxed)) return;
    const bool last = static_cast<int>(ops_.size()) + 1 == max_ops_;
    std::vector<OpRef> next;
    for_each_candidate([&](const OpRef& op) { next.push_back(op); });
    const Pieces now = pieces();
    for (const OpRef& op : next) {
      if (!can_register_below(now, op)) continue;
      if (!try_push(op)) continue;
      if (last) {
        emit();  // the last level: no deeper search
      } else {
        dfs();
      }
      pop();
    }
  }

  const World& world_;
  uint8_t world_index_;
  int max_ops_;
  int n_vars_;
  const std::function<void(const GraphRecord&)>& sink_;
  const std::atomic<bool>& stop_;
  EnumerationCounters& counters_;
  ShapeCache cache_;
  std::vector<int> var_kind_, var_index_;
  int n_kinds_ = 0;
  int max_arity_ = 0;  // of the world's templates
  std::vector<Slot> slots_;
  std::vector<OpRef> ops_;
};

}  // namespace

Enumerator::Enumerator(const World& world, uint8_t world_index, int max_ops, uint64_t seed)
    : world_(world), world_index_(world_index), max_ops_(max_ops) {
  if (max_ops < 1 || max_ops > kMaxOps) throw std::invalid_argument("--max-ops must be in [1, " + std::to_string(kMaxOps) + "]");
  // Independent random values for every variable (a shared pattern once let
  // a peer accept false rules).
  for (size_t v = 0; v < world.variables.size(); ++v)
    variable_values_.push_back(random_tensor<Fp>(world.variables[v].shape, hash_combine(seed, 1000 * world_index + v)));
}

void Enumerator::run(const std::function<void(const GraphRecord&)>& sink, const std::atomic<bool>& stop,
                     EnumerationCounters& counters) const {
  std::vector<size_t> all(branches());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  run_branches(all, sink, stop, counters);
}

size_t Enumerator::branches() const {
  const std::function<void(const GraphRecord&)> none = [](const GraphRecord&) {};
  const std::atomic<bool> no_stop{false};
  EnumerationCounters unused;
  DepthFirstEnumeration top(world_, world_index_, max_ops_, variable_values_, none, no_stop, unused);
  return top.first_ops().size() + 1;
}

void Enumerator::run_branches(const std::vector<size_t>& branches, const std::function<void(const GraphRecord&)>& sink,
                              const std::atomic<bool>& stop, EnumerationCounters& counters) const {
  if (world_.variables.size() + static_cast<size_t>(max_ops_) * 2 > 250)
    throw std::invalid_argument("too many variables for the enumerator");
  DepthFirstEnumeration top(world_, world_index_, max_ops_, variable_values_, sink, stop, counters);
  const std::vector<OpRef> firsts = top.first_ops();
  tbb::parallel_for(size_t{0}, branches.size(), [&](size_t i) {
    if (stop.load(std::memory_order_relaxed)) return;
    if (branches[i] == firsts.size()) {
      DepthFirstEnumeration(world_, world_index_, max_ops_, variable_values_, sink, stop, counters).emit_variables();
    } else {
      DepthFirstEnumeration branch(world_, world_index_, max_ops_, variable_values_, sink, stop, counters);
      branch.run_branch(firsts.at(branches[i]));
    }
  });
}

Graph Enumerator::to_graph(const GraphRecord& r) const {
  Graph g;
  std::vector<ValueRef> slots;
  for (const Variable& v : world_.variables) slots.push_back(g.add_input(v.name, v.shape));
  for (int i = 0; i < r.n_ops; ++i) {
    const OpTemplate& t = world_.templates[r.ops[i].tmpl];
    std::vector<ValueRef> args;
    for (int a = 0; a < r.ops[i].n_args; ++a) args.push_back(slots.at(r.ops[i].args[a]));
    for (ValueRef v : g.add_op(*t.op, t.params, args)) slots.push_back(v);
  }
  for (int k = 0; k < r.n_outputs; ++k) g.add_output(slots.at(r.outputs[k]));
  return g;
}

}  // namespace tgr::gen
