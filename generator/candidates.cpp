#include "generator/candidates.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_set>

#include "ir/canonical.h"
#include "runtime/interpreter.h"

namespace tgr::gen {
namespace {

constexpr size_t kAllPairsUpTo = 6;  // larger classes pair each graph with the smallest

struct Member {
  Graph graph;
  std::string text;
  int ops = 0;
  std::vector<Tensor<double>> outputs;  // float64, on the class's world's fresh inputs
};

// What one pair needs for the passes, computed in parallel.
struct PairInfo {
  std::string text;
  std::string rename_key, full_key;
  bool trivial = false;
  bool float64_equal = false;
  bool smaller_subgraph_rule = false;    // a shared subgraph, made an input, leaves a valid rule
  bool smaller_supergraph_rule = false;  // a shared context, removed, leaves a valid rule
};

std::string kind_letters(const std::string& name) {
  size_t n = 0;
  while (n < name.size() && std::isalpha(static_cast<unsigned char>(name[n]))) ++n;
  return name.substr(0, n);
}

std::string tuple_text(const std::vector<Expr>& exprs) {
  if (exprs.size() == 1) return to_text(exprs[0]);
  std::string s = "(";
  for (size_t i = 0; i < exprs.size(); ++i) {
    if (i) s += ", ";
    s += to_text(exprs[i]);
  }
  return s + ")";
}

bool sides_equal(const std::string& canonical) {
  const size_t at = canonical.find(" => ");
  return canonical.compare(0, at, canonical, at + 4, std::string::npos) == 0;
}

class PairAnalysis {
 public:
  PairAnalysis(const World& world, const std::vector<Tensor<double>>& inputs, const Member& a, const Member& b)
      : world_(world), inputs_(inputs), a_(a), b_(b) {}

  PairInfo run() {
    PairInfo info;
    info.text = a_.text + " => " + b_.text;
    const RuleExpr rule = parse_rule_expr(info.text);
    info.rename_key = canonical_rule_text(rule, true, false);
    info.full_key = canonical_rule_text(rule, true, true);
    info.trivial = sides_equal(info.full_key);
    info.float64_equal = float64_equal();
    if (!info.trivial) {
      info.smaller_supergraph_rule = supergraph();
      info.smaller_subgraph_rule = subgraph();
    }
    return info;
  }

 private:
  bool float64_equal() const {
    if (a_.outputs.size() != b_.outputs.size()) return false;
    for (size_t k = 0; k < a_.outputs.size(); ++k) {
      const auto& x = a_.outputs[k].data;
      const auto& y = b_.outputs[k].data;
      if (a_.outputs[k].shape != b_.outputs[k].shape) return false;
      double scale = 1;
      for (double v : y) scale = std::max(scale, std::fabs(v));
      for (size_t i = 0; i < x.size(); ++i)
        if (!(std::fabs(x[i] - y[i]) <= 1e-9 * scale)) return false;
    }
    return true;
  }

  // Whether two values of the two graphs are equal in float64 on random
  // inputs (the same inputs as the class's check).
  bool values_equal(ValueRef x, ValueRef y) const {
    Graph gx = a_.graph, gy = b_.graph;
    gx.add_output(x);
    gy.add_output(y);
    const auto vx = evaluate<double>(gx, std::span<const Tensor<double>>(inputs_)).back();
    const auto vy = evaluate<double>(gy, std::span<const Tensor<double>>(inputs_)).back();
    return close(vx, vy);
  }

  static bool close(const Tensor<double>& x, const Tensor<double>& y) {
    if (x.shape != y.shape) return false;
    double scale = 1;
    for (double v : y.data) scale = std::max(scale, std::fabs(v));
    for (size_t i = 0; i < x.data.size(); ++i)
      if (!(std::fabs(x.data[i] - y.data[i]) <= 1e-9 * scale)) return false;
    return true;
  }

  // The same context on both sides (TASO's common supergraph): an output
  // computed identically on both sides (the other outputs then form a valid
  // smaller rule), or roots applying the same operator to arguments that
  // differ in one place, where the differing arguments are themselves equal.
  bool supergraph() const {
    const auto& oa = a_.graph.outputs();
    const auto& ob = b_.graph.outputs();
    if (oa.size() > 1) {
      for (size_t k = 0; k < oa.size(); ++k)
        if (a_.graph.hash(oa[k]) == b_.graph.hash(ob[k])) return true;
      return false;
    }
    ValueRef x = oa[0], y = ob[0];
    while (true) {
      const Node& nx = a_.graph.node(x.node);
      const Node& ny = b_.graph.node(y.node);
      if (!nx.is_op() || !ny.is_op() || nx.op != ny.op || !(nx.params == ny.params) || x.output != y.output ||
          nx.inputs.size() != ny.inputs.size())
        return false;
      int differing = -1;
      for (size_t i = 0; i < nx.inputs.size(); ++i)
        if (a_.graph.hash(nx.inputs[i]) != b_.graph.hash(ny.inputs[i])) {
          if (differing >= 0) return false;
          differing = static_cast<int>(i);
        }
      if (differing < 0) return false;
      x = nx.inputs[differing];
      y = ny.inputs[differing];
      if (values_equal(x, y)) return true;
    }
  }

  // A subgraph computed identically on both sides (an operator applied to
  // the same inputs; TASO's common subgraph) made a fresh input: if the rule
  // still holds for any value of it, the smaller rule covers this one.
  bool subgraph() const {
    std::unordered_set<uint64_t> in_b;
    for (int32_t i : b_.graph.topological_order())
      if (b_.graph.node(i).is_op())
        for (int32_t k = 0; k < static_cast<int32_t>(b_.graph.node(i).output_shapes.size()); ++k)
          in_b.insert(b_.graph.hash({i, k}));
    std::map<uint64_t, std::string> fresh;  // shared value -> new variable
    ShapeMap shapes;
    for (const Variable& v : world_.variables) shapes[v.name] = v.shape;
    int counter = 0;
    for (int32_t i : a_.graph.topological_order()) {
      const Node& n = a_.graph.node(i);
      if (!n.is_op()) continue;
      for (int32_t k = 0; k < static_cast<int32_t>(n.output_shapes.size()); ++k) {
        const uint64_t h = a_.graph.hash({i, k});
        if (!in_b.count(h) || fresh.count(h)) continue;
        std::string name = "t";
        name += std::to_string(counter++);
        fresh[h] = name;
        shapes[name] = n.output_shapes[k];
      }
    }
    if (fresh.empty()) return false;
    auto leaf = [&](const Graph& g) {
      return [&](ValueRef v) -> std::optional<std::string> {
        auto it = fresh.find(g.hash(v));
        return it == fresh.end() ? std::nullopt : std::optional<std::string>(it->second);
      };
    };
    std::vector<Expr> ra, rb;
    for (ValueRef v : a_.graph.outputs()) ra.push_back(to_expr(a_.graph, v, leaf(a_.graph)));
    for (ValueRef v : b_.graph.outputs()) rb.push_back(to_expr(b_.graph, v, leaf(b_.graph)));
    const Rule reduced = build_rule(tuple_text(ra) + " => " + tuple_text(rb), shapes);
    const auto in = random_inputs<double>(reduced.source, 0x5eed);
    const auto va = evaluate<double>(reduced.source, std::span<const Tensor<double>>(in));
    const auto vb = evaluate<double>(reduced.target, std::span<const Tensor<double>>(in));
    for (size_t k = 0; k < va.size(); ++k)
      if (!close(va[k], vb[k])) return false;
    return true;
  }

  const World& world_;
  const std::vector<Tensor<double>>& inputs_;
  const Member& a_;
  const Member& b_;
};

// The shapes of the canonical rule's variables, by kind letters.
std::string variables_of(const std::string& canonical, const World& world) {
  std::map<std::string, Shape> shape_of_kind;
  for (const Variable& v : world.variables) shape_of_kind.emplace(kind_letters(v.name), v.shape);
  std::vector<std::string> names;
  const RuleExpr r = parse_rule_expr(canonical);
  std::function<void(const Expr&)> walk = [&](const Expr& e) {
    if (e.kind == Expr::Kind::kVar) {
      if (std::find(names.begin(), names.end(), e.name) == names.end()) names.push_back(e.name);
    } else {
      for (const Expr& a : e.args) walk(a);
    }
  };
  for (const Expr& e : r.source) walk(e);
  for (const Expr& e : r.target) walk(e);
  std::sort(names.begin(), names.end());
  std::string out;
  for (const auto& n : names) {
    if (!out.empty()) out += ',';
    out += n + "=" + shape_to_string(shape_of_kind.at(kind_letters(n)));
  }
  return out;
}

}  // namespace

std::vector<Candidate> find_candidates(const std::vector<Enumerator>& enumerators, std::vector<GraphRecord> kept,
                                       uint64_t seed, CandidateStats& stats, const std::atomic<bool>& stop) {
  std::sort(kept.begin(), kept.end());
  // Classes: equal (world, key); members: distinct structures.
  std::vector<std::pair<size_t, size_t>> classes;
  for (size_t i = 0; i < kept.size();) {
    size_t j = i;
    std::vector<uint64_t> seen;
    while (j < kept.size() && kept[j].key == kept[i].key && kept[j].world == kept[i].world) ++j;
    size_t distinct = 0;
    for (size_t k = i; k < j; ++k)
      if (k == i || kept[k].structure != kept[k - 1].structure) ++distinct;
    if (distinct >= 2) classes.emplace_back(i, j);
    i = j;
  }
  stats.classes = classes.size();

  // Fresh float64 inputs per world, independent of the field values.
  std::vector<std::vector<Tensor<double>>> inputs(enumerators.size());
  for (size_t w = 0; w < enumerators.size(); ++w)
    for (size_t v = 0; v < enumerators[w].world().variables.size(); ++v)
      inputs[w].push_back(random_tensor<double>(enumerators[w].world().variables[v].shape, seed * 7919 + 104729 * w + v));

  std::vector<std::vector<PairInfo>> per_class(classes.size());
  std::vector<uint8_t> star(classes.size(), 0);
  std::vector<uint64_t> members_per_class(classes.size(), 0);
  tbb::parallel_for(size_t{0}, classes.size(), [&](size_t c) {
    if (stop.load(std::memory_order_relaxed)) return;
    const auto [begin, end] = classes[c];
    const Enumerator& e = enumerators[kept[begin].world];
    std::vector<Member> members;
    for (size_t k = begin; k < end; ++k) {
      if (k > begin && kept[k].structure == kept[k - 1].structure) continue;
      Member m;
      m.graph = e.to_graph(kept[k]);
      m.text = to_text(m.graph);
      m.ops = kept[k].n_ops;
      m.outputs = evaluate<double>(m.graph, std::span<const Tensor<double>>(inputs[kept[begin].world]));
      members.push_back(std::move(m));
    }
    // Smallest first: the representative of a large class.
    std::sort(members.begin(), members.end(),
              [](const Member& x, const Member& y) { return std::tie(x.ops, x.text) < std::tie(y.ops, y.text); });
    members_per_class[c] = members.size();
    const bool all_pairs = members.size() <= kAllPairsUpTo;
    star[c] = !all_pairs;
    for (size_t i = 0; i < members.size(); ++i)
      for (size_t j = i + 1; j < members.size(); ++j) {
        if (!all_pairs && i > 0) break;
        per_class[c].push_back(PairAnalysis(e.world(), inputs[kept[begin].world], members[j], members[i]).run());
      }
  });

  if (stop) return {};
  // The passes, in a fixed order over a fixed sequence: deterministic.
  std::vector<std::pair<const PairInfo*, size_t>> pairs;  // with its class
  for (size_t c = 0; c < classes.size(); ++c) {
    stats.class_graphs += members_per_class[c];
    stats.star_classes += star[c];
    for (const PairInfo& p : per_class[c]) pairs.emplace_back(&p, c);
  }
  stats.pairs = pairs.size();
  std::vector<std::pair<const PairInfo*, size_t>> live;
  for (auto& p : pairs)
    if (p.first->trivial) ++stats.trivial;
    else live.push_back(p);
  auto dedupe = [&](auto key, uint64_t& removed) {
    std::sort(live.begin(), live.end(), [&](const auto& x, const auto& y) {
      return std::tie(key(*x.first), x.first->text) < std::tie(key(*y.first), y.first->text);
    });
    std::vector<std::pair<const PairInfo*, size_t>> out;
    for (size_t i = 0; i < live.size(); ++i)
      if (i == 0 || key(*live[i].first) != key(*live[i - 1].first)) out.push_back(live[i]);
    removed = live.size() - out.size();
    live = std::move(out);
  };
  dedupe([](const PairInfo& p) -> const std::string& { return p.rename_key; }, stats.renaming);
  dedupe([](const PairInfo& p) -> const std::string& { return p.full_key; }, stats.commutative);
  auto drop = [&](auto pred, uint64_t& removed) {
    std::vector<std::pair<const PairInfo*, size_t>> out;
    for (auto& p : live)
      if (pred(*p.first)) ++removed;
      else out.push_back(p);
    live = std::move(out);
  };
  drop([&](const PairInfo& p) { return p.smaller_subgraph_rule; }, stats.common_subgraph);
  drop([&](const PairInfo& p) { return p.smaller_supergraph_rule; }, stats.common_supergraph);
  drop([&](const PairInfo& p) { return !p.float64_equal; }, stats.float64_rejected);

  std::vector<Candidate> out;
  for (auto& [p, c] : live)
    out.push_back({p->text, p->full_key, variables_of(p->full_key, enumerators[kept[classes[c].first].world].world())});
  std::sort(out.begin(), out.end(), [](const Candidate& x, const Candidate& y) { return x.canonical < y.canonical; });
  stats.kept = out.size();
  return out;
}

}  // namespace tgr::gen
