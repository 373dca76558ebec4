#include "generator/candidates.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <unordered_set>

#include "generator/implication.h"
#include "ir/canonical.h"
#include "ir/hash.h"
#include "runtime/interpreter.h"

namespace tgr::gen {
namespace {

constexpr size_t kAllPairsUpTo = 6;  // larger classes pair each graph with the smallest

struct Member {
  Graph graph;
  std::vector<Expr> exprs;  // its outputs, parameters normalised
  std::vector<uint64_t> shapes;  // per output, blind to commutative argument order (shape_hash)
  std::string text;
  int ops = 0;
};

// A hash of an expression that argument swaps of commutative operators do
// not change (the canonical texts' equivalence, without renaming): two
// expressions that canonical_rule_text can write alike hash alike.
uint64_t shape_hash(const Expr& e) {
  if (e.kind == Expr::Kind::kVar) return hash_combine(0x3c6ef372fe94f82bULL, fnv1a(e.name));
  uint64_t h = hash_combine(fnv1a(e.name), static_cast<uint64_t>(static_cast<int64_t>(e.output)));
  for (const auto& [key, value] : e.params)
    h = hash_combine(hash_combine(h, fnv1a(key)), fnv1a(param_value_to_string(value)));
  std::vector<uint64_t> args;
  for (const Expr& a : e.args) args.push_back(shape_hash(a));
  if (args.size() == 2 && OpTable::instance().get(e.name).commutative) std::sort(args.begin(), args.end());
  for (uint64_t a : args) h = hash_combine(h, a);
  return h;
}

// What one pair needs for the passes, computed in parallel.
struct PairInfo {
  std::string text;
  std::string rename_key, full_key;
  bool trivial = false;
  bool float64_equal = false;
  size_t a = 0, b = 0;                   // the members, in their class
  bool smaller_subgraph_rule = false;    // a shared subgraph, made an input, leaves a valid rule
  bool smaller_supergraph_rule = false;  // a shared context, removed, leaves a valid rule
};

// Equal in float64 up to rounding, relative to the larger magnitude.
bool close(const Tensor<double>& x, const Tensor<double>& y) {
  if (x.shape != y.shape) return false;
  double scale = 1;
  for (double v : y.data) scale = std::max(scale, std::fabs(v));
  for (size_t i = 0; i < x.data.size(); ++i)
    if (!(std::fabs(x.data[i] - y.data[i]) <= 1e-9 * scale)) return false;
  return true;
}

// Both sides of `rule` agree in float64 on fresh random inputs.
bool holds_in_float64(const Rule& rule, uint64_t seed) {
  const auto in = random_inputs<double>(rule.source, seed);
  const auto a = evaluate<double>(rule.source, std::span<const Tensor<double>>(in));
  const auto b = evaluate<double>(rule.target, std::span<const Tensor<double>>(in));
  for (size_t k = 0; k < a.size(); ++k)
    if (!close(a[k], b[k])) return false;
  return true;
}

bool sides_equal(const std::string& canonical) {
  const size_t at = canonical.find(" => ");
  return canonical.compare(0, at, canonical, at + 4, std::string::npos) == 0;
}

class PairAnalysis {
 public:
  PairAnalysis(const World& world, const std::vector<Tensor<double>>& inputs, const Member& a, const Member& b)
      : world_(world), inputs_(inputs), a_(a), b_(b) {}

  // The keys the deduplicating passes compare, for every pair: whether it
  // is trivial (its canonical text has equal sides), and the key up to
  // variable names. A canonical text can have equal sides only when the
  // sides are equal up to commutative argument order, output by output
  // (the text renames both sides alike), so the canonical text is only
  // computed here when their shape hashes say they may be.
  void keys(PairInfo& info) const {
    info.text = a_.text + " => " + b_.text;
    RuleExpr rule{a_.exprs, b_.exprs};
    info.rename_key = canonical_rule_text(rule, true, false);
    if (a_.shapes == b_.shapes) {
      info.full_key = canonical_rule_text(std::move(rule), true, true);
      info.trivial = sides_equal(info.full_key);
    }
  }

  // The key up to commutative argument order too, for the pairs new by
  // their names.
  void full_key(PairInfo& info) const {
    if (info.full_key.empty()) info.full_key = canonical_rule_text(RuleExpr{a_.exprs, b_.exprs}, true, true);
  }

  // The evaluations (dearer), for pairs that survive deduplication, in the
  // order the pair is judged by them (a common subgraph first): what
  // decides it ends the checks.
  void checks(PairInfo& info) const {
    info.smaller_subgraph_rule = subgraph();
    if (info.smaller_subgraph_rule) return;
    info.smaller_supergraph_rule = supergraph();
    if (info.smaller_supergraph_rule) return;
    info.float64_equal = float64_equal();
  }

 private:
  // The two graphs in float64 with the real semantics, on the class's
  // fresh random inputs.
  bool float64_equal() const {
    const auto x = evaluate<double>(a_.graph, std::span<const Tensor<double>>(inputs_));
    const auto y = evaluate<double>(b_.graph, std::span<const Tensor<double>>(inputs_));
    if (x.size() != y.size()) return false;
    for (size_t k = 0; k < x.size(); ++k)
      if (!close(x[k], y[k])) return false;
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
    return holds_in_float64(build_rule(to_text(ra) + " => " + to_text(rb), shapes), 0x5eed);
  }

  const World& world_;
  const std::vector<Tensor<double>>& inputs_;
  const Member& a_;
  const Member& b_;
};

// The shapes of the canonical rule's variables, by kind letters.
std::string variables_of(const std::string& canonical, const World& world) {
  std::map<std::string, Shape> shape_of_kind;
  for (const Variable& v : world.variables) shape_of_kind.emplace(variable_kind(v.name), v.shape);
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
    out += n + "=" + shape_to_string(shape_of_kind.at(variable_kind(n)));
  }
  return out;
}

// Does the rule type-check and hold at other sizes of every kind?
std::string generalization(const Candidate& c, const World& world, uint64_t seed) {
  ShapeMap shapes;
  std::string checked;
  for (size_t pos = 0; pos < c.variables.size();) {
    const size_t comma = std::min(c.variables.find(',', pos), c.variables.size());
    const std::string name = c.variables.substr(pos, c.variables.find('=', pos) - pos);
    shapes[name] = world.alternative_shape(variable_kind(name));
    if (!checked.empty()) checked += ',';
    checked += name + "=" + shape_to_string(shapes[name]);
    pos = comma + 1;
  }
  try {
    if (!holds_in_float64(build_rule(c.canonical, shapes), seed ^ 0xa11ce))
      return "{\"generalizes\":false,\"reason\":\"differs on " + checked + "\"}";
    return "{\"generalizes\":true,\"checked_on\":\"" + checked + "\"}";
  } catch (const ParseError&) {
    return "{\"generalizes\":false,\"reason\":\"does not type-check on " + checked + "\"}";
  }
}

// The rank that keeps the texts equal to `text` (a share of the seen sets).
int owner_of(const std::string& text, int ranks) { return static_cast<int>(mix64(fnv1a(text)) % ranks); }

// One pair's place in the order of the single-process run: its class's key,
// then its place among this rank's pairs (every class of a key is on one
// rank, so the pairs of other ranks never share the key).
struct Place {
  uint64_t key = 0;
  uint64_t seq = 0;
};

// Which of this rank's `texts` (in this rank's order, at `places`) are the
// first of their text in the whole run, in the single-process order: each
// text goes to the rank that owns it, which sorts what arrives by place and
// checks it against `seen`, its share of the texts seen so far.
std::vector<char> first_of_their_text(util::Ranks& ranks, const std::vector<const std::string*>& texts,
                                      const std::vector<Place>& places, std::unordered_set<std::string>& seen) {
  const int n = ranks.size();
  std::vector<std::string> to(n);
  std::vector<std::vector<size_t>> sent(n);  // local indices, in the order sent to each rank
  for (size_t i = 0; i < texts.size(); ++i) {
    const int r = owner_of(*texts[i], n);
    util::append_bytes(to[r], places[i]);
    util::append_text(to[r], *texts[i]);
    sent[r].push_back(i);
  }
  const std::vector<std::string> from = ranks.exchange(std::move(to));
  struct Arrival {
    Place place;
    int source;
    size_t index;  // in the source's message
    std::string text;
  };
  std::vector<Arrival> arrivals;
  std::vector<size_t> counts(n, 0);
  for (int r = 0; r < n; ++r) {
    for (util::TextReader in(from[r]); !in.done();) {
      Arrival a;
      a.place = in.value<Place>();
      a.text = in.next();
      a.source = r;
      a.index = counts[r]++;
      arrivals.push_back(std::move(a));
    }
  }
  std::sort(arrivals.begin(), arrivals.end(), [](const Arrival& x, const Arrival& y) {
    return std::tie(x.place.key, x.place.seq) < std::tie(y.place.key, y.place.seq);
  });
  std::vector<std::string> replies(n);
  for (int r = 0; r < n; ++r) replies[r].assign(counts[r], 0);
  for (Arrival& a : arrivals) replies[a.source][a.index] = seen.insert(std::move(a.text)).second;
  const std::vector<std::string> answers = ranks.exchange(std::move(replies));
  std::vector<char> first(texts.size(), 0);
  for (int r = 0; r < n; ++r)
    for (size_t k = 0; k < sent[r].size(); ++k) first[sent[r][k]] = answers[r][k];
  return first;
}

// Candidates as bytes, to gather them on every rank.
std::string candidates_to_bytes(const std::vector<Candidate>& cs) {
  std::string out;
  for (const Candidate& c : cs) {
    util::append_text(out, c.text);
    util::append_text(out, c.canonical);
    util::append_text(out, c.variables);
    util::append_text(out, c.constraints);
  }
  return out;
}
void candidates_from_bytes(const std::string& bytes, std::vector<Candidate>& out) {
  util::TextReader in(bytes);
  while (!in.done()) {
    Candidate c;
    c.text = in.next();
    c.canonical = in.next();
    c.variables = in.next();
    c.constraints = in.next();
    out.push_back(std::move(c));
  }
}

// The counters every rank adds to, summed.
void sum_stats(util::Ranks& ranks, CandidateStats& s) {
  for (uint64_t* v : {&s.classes, &s.class_graphs, &s.star_classes, &s.pairs, &s.trivial, &s.renaming, &s.commutative,
                      &s.common_subgraph, &s.common_supergraph, &s.float64_rejected})
    *v = ranks.sum(*v);
}

// One candidate search (find_candidates): the classes of the kept graphs,
// fresh float64 inputs per world, and the steps in the order they happen.
class CandidateSearch {
 public:
  CandidateSearch(const std::vector<Enumerator>& enumerators, std::vector<GraphRecord> kept, uint64_t seed,
                  CandidateStats& stats, const std::atomic<bool>& stop, util::Ranks& ranks);
  std::vector<Candidate> run();

 private:
  // One chunk of classes: each class's members and the pairs analysed.
  struct Chunk {
    size_t first = 0, last = 0;  // classes [first, last)
    std::vector<std::vector<Member>> members;
    std::vector<std::vector<PairInfo>> pairs;
  };
  using ClassPair = std::pair<PairInfo*, size_t>;  // a pair and its class
  size_t world_of(size_t c) const { return kept_[classes_[c].first].world; }
  void group_classes();
  void build_chunk(Chunk& chunk) const;
  std::vector<ClassPair> nontrivial_pairs(Chunk& chunk, std::vector<Place>& places);
  std::vector<ClassPair> new_up_to_renaming(const std::vector<ClassPair>& pairs, const std::vector<Place>& places,
                                            std::vector<Place>& kept_places);
  std::vector<ClassPair> new_up_to_commutativity(const Chunk& chunk, const std::vector<ClassPair>& named,
                                                 const std::vector<Place>& places);
  void check_and_keep(Chunk& chunk, const std::vector<ClassPair>& fresh);
  bool pair_chunks();
  std::vector<Candidate> gathered_candidates();
  bool drop_implied(std::vector<Candidate>& out);

  const std::vector<Enumerator>& enumerators_;
  std::vector<GraphRecord> kept_;
  const uint64_t seed_;
  CandidateStats& stats_;
  const std::atomic<bool>& stop_;
  util::Ranks& ranks_;
  std::vector<std::pair<size_t, size_t>> classes_;   // equal (world, key): [begin, end) of kept_
  std::vector<std::vector<Tensor<double>>> inputs_;  // per world
  std::unordered_set<std::string> rename_seen_, full_seen_;
  std::vector<std::pair<PairInfo, size_t>> live_;  // survivors, with their class
};

CandidateSearch::CandidateSearch(const std::vector<Enumerator>& enumerators, std::vector<GraphRecord> kept,
                                 uint64_t seed, CandidateStats& stats, const std::atomic<bool>& stop,
                                 util::Ranks& ranks)
    : enumerators_(enumerators), kept_(std::move(kept)), seed_(seed), stats_(stats), stop_(stop), ranks_(ranks) {
  // Fresh float64 inputs per world, independent of the field values.
  inputs_.resize(enumerators.size());
  for (size_t w = 0; w < enumerators.size(); ++w)
    for (size_t v = 0; v < enumerators[w].world().variables.size(); ++v)
      inputs_[w].push_back(
          random_tensor<double>(enumerators[w].world().variables[v].shape, seed * 7919 + 104729 * w + v));
}

// Classes: equal (world, key); members: distinct structures; two or more.
void CandidateSearch::group_classes() {
  std::sort(kept_.begin(), kept_.end());
  for (size_t i = 0; i < kept_.size();) {
    size_t j = i;
    while (j < kept_.size() && kept_[j].key == kept_[i].key && kept_[j].world == kept_[i].world) ++j;
    size_t distinct = 0;
    for (size_t k = i; k < j; ++k)
      if (k == i || kept_[k].structure != kept_[k - 1].structure) ++distinct;
    if (distinct >= 2) classes_.emplace_back(i, j);
    i = j;
  }
  stats_.classes = classes_.size();
}

// The chunk's members built and paired, in parallel over its classes: the
// smallest member first (the representative of a large class), every pair
// of a small class, the representative's pairs of a large one.
void CandidateSearch::build_chunk(Chunk& chunk) const {
  chunk.members.assign(chunk.last - chunk.first, {});
  chunk.pairs.assign(chunk.last - chunk.first, {});
  tbb::parallel_for(chunk.first, chunk.last, [&](size_t c) {
    const auto [begin, end] = classes_[c];
    const Enumerator& e = enumerators_[kept_[begin].world];
    std::vector<Member>& ms = chunk.members[c - chunk.first];
    for (size_t k = begin; k < end; ++k) {
      if (k > begin && kept_[k].structure == kept_[k - 1].structure) continue;
      Member m;
      m.graph = e.to_graph(kept_[k]);
      for (ValueRef v : m.graph.outputs()) m.exprs.push_back(to_expr(m.graph, v));
      m.text = to_text(m.exprs);
      for (Expr& expr : m.exprs) {
        normalize_params(expr);  // as canonical_rule_text does (no change to its texts)
        m.shapes.push_back(shape_hash(expr));
      }
      m.ops = kept_[k].n_ops;
      ms.push_back(std::move(m));
    }
    std::sort(ms.begin(), ms.end(),
              [](const Member& x, const Member& y) { return std::tie(x.ops, x.text) < std::tie(y.ops, y.text); });
    const bool all_pairs = ms.size() <= kAllPairsUpTo;
    for (size_t i = 0; i < ms.size(); ++i)
      for (size_t j = i + 1; j < ms.size(); ++j) {
        if (!all_pairs && i > 0) break;
        PairInfo info;
        info.a = j;
        info.b = i;
        PairAnalysis(e.world(), inputs_[kept_[begin].world], ms[j], ms[i]).keys(info);
        chunk.pairs[c - chunk.first].push_back(std::move(info));
      }
  });
}

// The chunk's pairs that are not trivial, with their places (counted).
std::vector<CandidateSearch::ClassPair> CandidateSearch::nontrivial_pairs(Chunk& chunk, std::vector<Place>& places) {
  std::vector<ClassPair> nontrivial;
  for (size_t c = chunk.first; c < chunk.last; ++c) {
    stats_.class_graphs += chunk.members[c - chunk.first].size();
    stats_.star_classes += chunk.members[c - chunk.first].size() > kAllPairsUpTo;
    for (PairInfo& p : chunk.pairs[c - chunk.first]) {
      ++stats_.pairs;
      if (p.trivial) {
        ++stats_.trivial;
        continue;
      }
      nontrivial.emplace_back(&p, c);
      places.push_back({kept_[classes_[c].first].key, places.size()});
    }
  }
  return nontrivial;
}

// The pairs whose text up to variable names no earlier pair had.
std::vector<CandidateSearch::ClassPair> CandidateSearch::new_up_to_renaming(const std::vector<ClassPair>& pairs,
                                                                            const std::vector<Place>& places,
                                                                            std::vector<Place>& kept_places) {
  std::vector<const std::string*> texts;
  for (auto [p, c] : pairs) texts.push_back(&p->rename_key);
  const std::vector<char> new_name = first_of_their_text(ranks_, texts, places, rename_seen_);
  std::vector<ClassPair> named;
  for (size_t i = 0; i < pairs.size(); ++i) {
    if (!new_name[i]) {
      ++stats_.renaming;
      continue;
    }
    named.push_back(pairs[i]);
    kept_places.push_back(places[i]);
  }
  return named;
}

// Of those, the pairs new up to commutative argument order too (keyed for
// these only: the pairs the renaming pass removed never need one).
std::vector<CandidateSearch::ClassPair> CandidateSearch::new_up_to_commutativity(const Chunk& chunk,
                                                                                 const std::vector<ClassPair>& named,
                                                                                 const std::vector<Place>& places) {
  tbb::parallel_for(size_t{0}, named.size(), [&](size_t i) {
    auto [p, c] = named[i];
    const std::vector<Member>& ms = chunk.members[c - chunk.first];
    const size_t world = world_of(c);
    PairAnalysis(enumerators_[world].world(), inputs_[world], ms[p->a], ms[p->b]).full_key(*p);
  });
  std::vector<const std::string*> texts;
  for (auto [p, c] : named) texts.push_back(&p->full_key);
  const std::vector<char> new_rule = first_of_their_text(ranks_, texts, places, full_seen_);
  std::vector<ClassPair> fresh;
  for (size_t i = 0; i < named.size(); ++i) {
    if (new_rule[i]) fresh.push_back(named[i]);
    else ++stats_.commutative;
  }
  return fresh;
}

// The fresh pairs checked (in parallel); those that no smaller rule implies
// and that hold in float64 too live on.
void CandidateSearch::check_and_keep(Chunk& chunk, const std::vector<ClassPair>& fresh) {
  tbb::parallel_for(size_t{0}, fresh.size(), [&](size_t i) {
    auto [p, c] = fresh[i];
    std::vector<Member>& ms = chunk.members[c - chunk.first];
    const size_t world = world_of(c);
    PairAnalysis(enumerators_[world].world(), inputs_[world], ms[p->a], ms[p->b]).checks(*p);
  });
  for (auto [p, c] : fresh) {
    if (p->smaller_subgraph_rule) ++stats_.common_subgraph;
    else if (p->smaller_supergraph_rule) ++stats_.common_supergraph;
    else if (!p->float64_equal) ++stats_.float64_rejected;
    else live_.emplace_back(std::move(*p), c);
  }
}

// Classes in chunks, in key order (the keys are spread evenly, so equal
// ranges of keys hold about as many classes): each chunk's members are
// built and paired in parallel, deduplicated against everything before it
// in the order of the keys (deterministic, and the same on any number of
// ranks: first_of_their_text), then the survivors are checked in parallel.
// Memory: one chunk's graphs plus the keys seen (shared among the ranks).
// False when stopped.
bool CandidateSearch::pair_chunks() {
  const uint64_t all_classes = ranks_.sum(classes_.size());
  const uint64_t chunks = std::max<uint64_t>(1, all_classes / (2048 * static_cast<uint64_t>(ranks_.size())));
  const uint64_t keys_per_chunk = std::numeric_limits<uint64_t>::max() / chunks;
  auto chunk_of = [&](uint64_t key) { return std::min(chunks - 1, key / keys_per_chunk); };
  size_t first = 0;
  bool stopped = false;
  for (uint64_t chunk_index = 0; chunk_index < chunks && !(stopped = ranks_.any(stop_)); ++chunk_index) {
    Chunk chunk;
    chunk.first = chunk.last = first;
    while (chunk.last < classes_.size() && chunk_of(kept_[classes_[chunk.last].first].key) == chunk_index) ++chunk.last;
    build_chunk(chunk);
    std::vector<Place> places, named_places;
    const std::vector<ClassPair> nontrivial = nontrivial_pairs(chunk, places);
    const std::vector<ClassPair> named = new_up_to_renaming(nontrivial, places, named_places);
    check_and_keep(chunk, new_up_to_commutativity(chunk, named, named_places));
    first = chunk.last;
  }
  sum_stats(ranks_, stats_);
  return !stopped;
}

// Every rank's live candidates on every rank (the generalization pass
// compares each with all others), by canonical text. No two share a
// canonical text (full_seen_), so the order is the same everywhere.
std::vector<Candidate> CandidateSearch::gathered_candidates() {
  std::vector<Candidate> mine;
  std::vector<const World*> world_of_candidate;
  for (auto& [p, c] : live_) {
    world_of_candidate.push_back(&enumerators_[world_of(c)].world());
    mine.push_back({p.text, p.full_key, variables_of(p.full_key, *world_of_candidate.back()), ""});
  }
  tbb::parallel_for(size_t{0}, mine.size(),
                    [&](size_t i) { mine[i].constraints = generalization(mine[i], *world_of_candidate[i], seed_); });
  std::vector<Candidate> out;
  for (const std::string& bytes : ranks_.all_gather(candidates_to_bytes(mine))) candidates_from_bytes(bytes, out);
  std::sort(out.begin(), out.end(), [](const Candidate& x, const Candidate& y) { return x.canonical < y.canonical; });
  return out;
}

// Generalization: a candidate that is another's instance (its variables
// replaced by expressions, or two of them merged), or that puts a context
// around both sides of a smaller one (which the position-wise supergraph
// pass misses when commutative arguments are listed in another order), is
// implied by it and dropped. Both relations make the implying rule strictly
// smaller or more general, so no two candidates drop each other. Each rank
// explains every size()-th candidate; the ones found implied are gathered.
// False when stopped.
bool CandidateSearch::drop_implied(std::vector<Candidate>& out) {
  ImplicationIndex index;
  for (size_t i = 0; i < out.size(); ++i) index.add(static_cast<int64_t>(i), out[i].canonical, out[i].variables);
  const size_t step = static_cast<size_t>(ranks_.size()), offset = static_cast<size_t>(ranks_.rank());
  std::vector<char> implied((out.size() + step - 1 - offset) / step, 0);
  tbb::parallel_for(size_t{0}, implied.size(), [&](size_t k) {
    if (stop_) return;
    const size_t i = offset + k * step;
    implied[k] =
        index.explain(out[i].canonical, parse_shape_map(out[i].variables), {"substitution", "common supergraph"})
            .has_value();
  });
  if (ranks_.any(stop_)) return false;
  std::string mine_implied;
  for (size_t k = 0; k < implied.size(); ++k)
    if (implied[k]) util::append_bytes(mine_implied, static_cast<uint64_t>(offset + k * step));
  std::vector<char> instance(out.size(), 0);
  for (const std::string& bytes : ranks_.all_gather(std::move(mine_implied)))
    for (uint64_t i : util::from_bytes<uint64_t>(bytes)) instance.at(i) = 1;
  size_t left = 0;
  for (size_t i = 0; i < out.size(); ++i)
    if (!instance[i]) {
      if (left != i) out[left] = std::move(out[i]);
      ++left;
    }
  stats_.instances = out.size() - left;
  out.resize(left);
  return true;
}

std::vector<Candidate> CandidateSearch::run() {
  const auto began = std::chrono::steady_clock::now();
  auto seconds_since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  group_classes();
  if (!pair_chunks()) return {};
  std::unordered_set<std::string>().swap(rename_seen_);
  std::unordered_set<std::string>().swap(full_seen_);
  std::vector<Candidate> out = gathered_candidates();
  stats_.pairing_seconds = seconds_since(began);
  const auto generalizing = std::chrono::steady_clock::now();
  if (!drop_implied(out)) return {};
  stats_.kept = out.size();
  stats_.generalization_seconds = seconds_since(generalizing);
  return out;
}

}  // namespace

std::vector<Candidate> find_candidates(const std::vector<Enumerator>& enumerators, std::vector<GraphRecord> kept,
                                       uint64_t seed, CandidateStats& stats, const std::atomic<bool>& stop) {
  util::SingleProcess one;
  return find_candidates(enumerators, std::move(kept), seed, stats, stop, one);
}

std::vector<Candidate> find_candidates(const std::vector<Enumerator>& enumerators, std::vector<GraphRecord> kept,
                                       uint64_t seed, CandidateStats& stats, const std::atomic<bool>& stop,
                                       util::Ranks& ranks) {
  return CandidateSearch(enumerators, std::move(kept), seed, stats, stop, ranks).run();
}

}  // namespace tgr::gen
