#include "pet/mutants.h"
#include "ir/hash.h"

#include <set>
#include <unordered_map>

#include "runtime/interpreter.h"

namespace tgr::pet {
namespace {

using ParamList = std::vector<std::pair<std::string, ParamValue>>;

// One way to extend a program by an operator: what to apply, and a key that
// orders independent neighbours (each program is built in one order only).
struct Application {
  const OpDef* op = nullptr;
  Params params;
  std::vector<size_t> args;  // indices into the program's values
  std::vector<int64_t> key;
};

class MutantSearch {
 public:
  MutantSearch(const Graph& source, const MutantOptions& options) : source_(source), options_(options) {
    for (int32_t i : source.inputs()) {
      const Node& n = source.node(i);
      shapes_[n.name] = n.output_shapes[0];
      values_.push_back(universe_.add_input(n.name, n.output_shapes[0]));
      remember(values_.back(), random_tensor<Fp>(n.output_shapes[0], 977 + 31 * static_cast<uint64_t>(i)));
    }
    for (ValueRef v : source.outputs()) outputs_.push_back(source.shape(v));
    source_text_ = to_text(source);
    collect_source_templates();
    collect_natural_sizes();
  }

  MutantReport run() {
    search(0, {});
    return std::move(report_);
  }

 private:
  // The source's operators with their parameters, and the variants that
  // change only the padding (conv2d, avgpool) or what it divides by.
  void collect_source_templates() {
    std::set<std::string> seen;
    auto add = [&](const OpDef& op, ParamList given) {
      Params p;
      try {
        p = op.make_params(std::move(given));
      } catch (const ParamError&) {
        return;
      }
      std::string key = op.name;
      for (const auto& [k, v] : p.entries()) key += "," + k + "=" + param_value_to_string(v);
      if (seen.insert(key).second) templates_.push_back({&op, p});
    };
    for (int32_t index : source_.topological_order()) {
      const Node& n = source_.node(index);
      if (!n.is_op()) continue;
      ParamList given(n.params.entries().begin(), n.params.entries().end());
      add(*n.op, given);
      for (const auto& [name, value] : given) {
        ParamList variant = given;
        for (auto& [k, v] : variant)
          if (k == name) {
            if (name == "pad") v = std::string(std::holds_alternative<std::string>(value) &&
                                                       std::get<std::string>(value) == "valid"
                                                   ? "same"
                                                   : "valid");
            else if (name == "include_pad") v = int64_t{1} - std::get<int64_t>(value);
          }
        add(*n.op, variant);
      }
    }
  }

  // Sizes along each axis that the source's tensors have: where split cuts.
  void collect_natural_sizes() {
    auto note = [&](const Shape& s) {
      if (natural_.size() < s.size()) natural_.resize(s.size());
      for (size_t d = 0; d < s.size(); ++d) natural_[d].insert(s[d]);
    };
    for (const auto& [name, s] : shapes_) note(s);
    for (const Shape& s : outputs_) note(s);
  }

  std::vector<Application> applications() const {
    std::vector<Application> apps;
    const OpTable& table = OpTable::instance();
    const size_t n = values_.size();
    auto push = [&](const OpDef& op, Params params, std::vector<size_t> args, std::vector<int64_t> key) {
      apps.push_back({&op, std::move(params), std::move(args), std::move(key)});
    };
    for (size_t t = 0; t < templates_.size(); ++t) {
      const OpDef& op = *templates_[t].first;
      const size_t arity = op.inputs.size();
      if (arity == 1) {
        for (size_t a = 0; a < n; ++a) push(op, templates_[t].second, {a}, {0, int64_t(t), int64_t(a)});
      } else if (arity == 2) {
        for (size_t a = 0; a < n; ++a)
          for (size_t b = 0; b < n; ++b)
            if (a != b) push(op, templates_[t].second, {a, b}, {0, int64_t(t), int64_t(a), int64_t(b)});
      }
    }
    const OpDef& concat = table.get(OpKind::kConcat);
    for (size_t a = 0; a < n; ++a)
      for (size_t b = 0; b < n; ++b) {
        const Shape& sa = universe_.shape(values_[a]);
        if (a == b || sa.size() != universe_.shape(values_[b]).size()) continue;
        for (size_t axis = 0; axis < sa.size(); ++axis)
          push(concat, concat.make_params({{"axis", int64_t(axis)}}), {a, b}, {1, int64_t(axis), int64_t(a), int64_t(b)});
      }
    for (size_t a = 0; a < n; ++a) {
      int64_t variant = 0;
      for (auto& [op, params] : layout_variants(universe_.shape(values_[a])))
        push(*op, std::move(params), {a}, {2, int64_t(a), variant++});
    }
    return apps;
  }

  // Unary layout operators on a value of shape s that move it toward the
  // source's shapes: transpose of the last two axes, split at a natural
  // size, slice or pad one axis to an output's size, reshape to an output.
  std::vector<std::pair<const OpDef*, Params>> layout_variants(const Shape& s) const {
    const OpTable& table = OpTable::instance();
    std::vector<std::pair<const OpDef*, Params>> out;
    auto add = [&](const char* name, ParamList params) {
      const OpDef& op = table.get(name);
      out.emplace_back(&op, op.make_params(std::move(params)));
    };
    const size_t r = s.size();
    if (r >= 2) {
      std::vector<int64_t> perm(r);
      for (size_t d = 0; d < r; ++d) perm[d] = static_cast<int64_t>(d);
      std::swap(perm[r - 2], perm[r - 1]);
      add("transpose", {{"perm", perm}});
    }
    for (size_t axis = 0; axis < r && axis < natural_.size(); ++axis)
      for (int64_t k : natural_[axis])
        if (k > 0 && k < s[axis]) add("split", {{"axis", int64_t(axis)}, {"sizes", std::vector<int64_t>{k, s[axis] - k}}});
    for (const Shape& o : outputs_) {
      if (o.size() != r || o == s) continue;
      // Slice one axis down to the output's size (its first or last part).
      for (size_t axis = 0; axis < r; ++axis) {
        Shape rest = s;
        rest[axis] = o[axis];
        if (rest != o || s[axis] < o[axis]) continue;
        std::vector<int64_t> starts(r, 0), ends = s;
        ends[axis] = o[axis];
        add("slice", {{"starts", starts}, {"ends", ends}});
        starts[axis] = s[axis] - o[axis];
        ends[axis] = s[axis];
        add("slice", {{"starts", starts}, {"ends", ends}});
      }
      // Pad every smaller axis up to the output's size, centred.
      bool smaller = true;
      for (size_t d = 0; d < r; ++d) smaller = smaller && s[d] <= o[d];
      if (smaller) {
        std::vector<int64_t> pads(2 * r, 0);
        for (size_t d = 0; d < r; ++d) {
          pads[d] = (o[d] - s[d]) / 2;
          pads[r + d] = o[d] - s[d] - pads[d];
        }
        add("pad", {{"pads", pads}});
      }
    }
    for (const Shape& o : outputs_) {
      if (o != s && num_elements(o) == num_elements(s)) add("reshape", {{"shape", o}});
    }
    return out;
  }

  void search(int depth, const std::vector<int64_t>& previous_key) {
    if (depth == options_.max_ops || report_.programs >= options_.max_programs) return;
    const size_t before = values_.size();
    const size_t previous_first = depth == 0 ? before : first_new_.back();
    for (const Application& app : applications()) {
      // Independent of the previous operator: only in increasing key order.
      bool reads_previous = false;
      for (size_t a : app.args) reads_previous = reads_previous || a >= previous_first;
      if (depth > 0 && !reads_previous && !(previous_key < app.key)) continue;
      std::vector<ValueRef> args;
      for (size_t a : app.args) args.push_back(values_[a]);
      std::vector<ValueRef> outs;
      try {
        outs = universe_.find_or_add_op(*app.op, app.params, args);
      } catch (const ShapeError&) {
        continue;
      } catch (const ParamError&) {
        continue;
      }
      if (++report_.programs >= options_.max_programs) return;
      // An operator whose result the program already has (transpose of a
      // transpose, split of a concat) only makes a longer copy of a smaller
      // mutant: skip it (equal field fingerprints).
      if (!fingerprint(outs, args)) continue;
      bool repeats = false;
      for (ValueRef out : outs)
        for (size_t v = 0; v < before && !repeats; ++v) repeats = fingerprints_.at(key(out)) == fingerprints_.at(key(values_[v]));
      if (repeats) continue;
      values_.insert(values_.end(), outs.begin(), outs.end());
      first_new_.push_back(before);
      consider_outputs(before);
      search(depth + 1, app.key);
      first_new_.pop_back();
      values_.resize(before);
    }
  }

  // Output tuples with the source's shapes that use a value the last
  // operator made.
  void consider_outputs(size_t first_new) {
    const size_t n = values_.size();
    const size_t inputs = source_.inputs().size();
    auto fits = [&](size_t v, size_t k) { return v >= inputs && universe_.shape(values_[v]) == outputs_[k]; };
    if (outputs_.size() == 1) {
      for (size_t a = first_new; a < n; ++a)
        if (fits(a, 0)) check({a});
    } else if (outputs_.size() == 2) {
      for (size_t a = inputs; a < n; ++a)
        for (size_t b = inputs; b < n; ++b)
          if (a != b && (a >= first_new || b >= first_new) && fits(a, 0) && fits(b, 1)) check({a, b});
    } else if (n - first_new == outputs_.size()) {
      std::vector<size_t> all;
      for (size_t a = first_new; a < n; ++a) {
        if (!fits(a, a - first_new)) return;
        all.push_back(a);
      }
      check(all);
    }
  }

  void check(const std::vector<size_t>& outs) {
    std::vector<Expr> exprs;
    for (size_t v : outs) exprs.push_back(to_expr(universe_, values_[v]));
    const std::string text = to_text(exprs);
    if (text == source_text_ || !seen_.insert(text).second) return;
    // With several outputs, one computed as in the source makes this the
    // mutant of a smaller program plus context: that one is found alone.
    if (exprs.size() > 1)
      for (size_t k = 0; k < exprs.size(); ++k)
        if (to_text(exprs[k]) == to_text(to_expr(source_, source_.outputs()[k]))) return;
    ++report_.checked;
    try {
      const Graph mutant = build_graph(text, shapes_);
      CheckResult r = check_regions(source_, mutant, options_.check);
      if (r.verdict == Verdict::kFull) {
        report_.full.push_back({text, std::move(r)});
      } else if (r.verdict == Verdict::kPartial && mostly_right(r)) {
        report_.partial.push_back({text, std::move(r)});
      }
    } catch (const RegionCheckError&) {
      ++report_.refused;
    }
  }

  static uint64_t key(ValueRef v) { return (static_cast<uint64_t>(v.node) << 8) | static_cast<uint64_t>(v.output); }

  void remember(ValueRef v, Tensor<Fp> t) {
    uint64_t h = kFnvOffsetShort;
    for (int64_t d : t.shape) h = fnv1a_step(h, static_cast<uint64_t>(d));
    for (Fp x : t.data) h = fnv1a_step(h, x.residue());
    fingerprints_[key(v)] = h;
    values_of_[key(v)] = std::move(t);
  }

  // Evaluates a new node in the field on the fixed random inputs (once; the
  // universe shares equal nodes). False when it has no field semantics.
  bool fingerprint(const std::vector<ValueRef>& outs, const std::vector<ValueRef>& args) {
    if (fingerprints_.count(key(outs[0]))) return true;
    const Node& n = universe_.node(outs[0].node);
    if (!n.op->kernels.field) return false;
    std::vector<Shape> in_shapes;
    std::vector<DType> in_dtypes;
    std::vector<const Tensor<Fp>*> ins;
    for (ValueRef a : args) {
      in_shapes.push_back(universe_.shape(a));
      in_dtypes.push_back(DType::kFloat);
      ins.push_back(&values_of_.at(key(a)));
    }
    std::vector<Tensor<Fp>> results;
    for (const Shape& s : n.output_shapes) results.emplace_back(s);
    const OpCall call{*n.op, n.params, in_shapes, in_dtypes, n.output_shapes};
    n.op->kernels.field(call, ins, results);
    for (size_t k = 0; k < results.size(); ++k) remember(outs[k], std::move(results[k]));
    return true;
  }

  // Every output agrees on more than the wanted fraction of its elements.
  bool mostly_right(const CheckResult& r) const {
    for (const OutputRegions& out : r.outputs) {
      int64_t agree = 0;
      for (const Box& b : out.agree) agree += b.volume();
      if (agree <= options_.min_agreeing_fraction * static_cast<double>(num_elements(out.shape))) return false;
    }
    return true;
  }

  const Graph& source_;
  const MutantOptions& options_;
  Graph universe_;  // every operator application tried, shared
  ShapeMap shapes_;
  std::vector<Shape> outputs_;
  std::string source_text_;
  std::vector<std::pair<const OpDef*, Params>> templates_;
  std::vector<std::set<int64_t>> natural_;
  std::vector<ValueRef> values_;     // the current program's values: inputs, then operator outputs
  std::vector<size_t> first_new_;    // per depth: where its operator's outputs start
  std::set<std::string> seen_;
  std::unordered_map<uint64_t, uint64_t> fingerprints_;  // per universe value
  std::unordered_map<uint64_t, Tensor<Fp>> values_of_;
  MutantReport report_;
};

}  // namespace

MutantReport find_mutants(const Graph& source, const MutantOptions& options) {
  return MutantSearch(source, options).run();
}

}  // namespace tgr::pet
