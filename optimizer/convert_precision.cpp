#include "optimizer/convert_precision.h"

#include <cmath>
#include <map>
#include <stdexcept>

#include "ir/float_types.h"
#include "onnx/onnx_export.h"
#include "onnx/opaque_op.h"
#include "runtime/interpreter.h"

namespace tgr::optimizer {
namespace {

class Converter {
 public:
  Converter(const Graph& source, const PrecisionConversion& conversion, ConversionStats& stats)
      : source_(source),
        to_(conversion.to),
        convert_io_(conversion.convert_io),
        onnx_opset_(conversion.onnx_opset),
        stats_(stats) {
    if (to_ != DType::kFloat16 && to_ != DType::kBFloat16)
      throw std::invalid_argument("convert_precision: the target type must be float16 or bfloat16, not " +
                                  std::string(dtype_name(to_)));
  }

  Graph run() {
    for (int32_t i : source_.inputs()) add_input(i);
    for (int32_t i : source_.topological_order()) {
      const Node& n = source_.node(i);
      if (n.is_constant()) add_constant(i);
      else if (n.is_op()) add_operator(i);
    }
    const auto& outputs = source_.outputs();
    for (size_t k = 0; k < outputs.size(); ++k) {
      const ValueRef v = outputs[k];
      const bool floating = is_floating(source_.dtype(v));
      out_.add_output(floating ? version(v, convert_io_ ? to_ : DType::kFloat) : primary(v), source_.output_names()[k]);
    }
    return std::move(out_);
  }

 private:
  using Key = std::pair<int32_t, int32_t>;

  void check_float32(ValueRef v) const {
    const DType t = source_.dtype(v);
    if (is_floating(t) && t != DType::kFloat)
      throw std::invalid_argument("convert_precision: the model already holds " + std::string(dtype_name(t)) +
                                  " values (node '" + source_.node(v.node).name + "'); only float32 models convert");
  }

  void add_input(int32_t i) {
    const Node& n = source_.node(i);
    check_float32({i, 0});
    const bool floating = n.output_dtypes[0] == DType::kFloat;
    const DType t = floating && convert_io_ ? to_ : n.output_dtypes[0];
    set({i, 0}, out_.add_input(n.name, n.output_shapes[0], t));
  }

  // A float32 weight: rounded to the type where read in it, shared as it is
  // where read in float32 (version()).
  void add_constant(int32_t i) {
    const Node& n = source_.node(i);
    check_float32({i, 0});
    if (n.output_dtypes[0] != DType::kFloat) {
      set({i, 0}, out_.add_shared_constant(n));
      return;
    }
    ConstantValue rounded = *n.constant;
    rounded.dtype = to_;
    round_to_dtype(to_, std::span<float>(rounded.real.data));
    ++stats_.weights;
    stats_.weight_elements += static_cast<int64_t>(rounded.real.data.size());
    set({i, 0}, out_.add_constant(std::move(rounded), n.name));
  }

  void add_operator(int32_t i) {
    const Node& n = source_.node(i);
    // Where it computes: float32 for the sensitive and the opaque, else the type.
    const bool float32 = n.op->traits.needs_float32 || onnx_io::is_opaque(*n.op) || !onnx_defines_in_type(i);
    bool reads_float = false;
    std::vector<ValueRef> inputs;
    for (ValueRef in : n.inputs) {
      check_float32(in);
      const bool floating = is_floating(source_.dtype(in));
      reads_float = reads_float || floating;
      inputs.push_back(floating ? version(in, float32 ? DType::kFloat : to_) : primary(in));
    }
    // An operator reading no float (a cast of integers to float32, a
    // constant operator) still writes float32: readers cast what they need.
    if (float32 && reads_float) ++stats_.kept_float32;
    const std::vector<ValueRef> outs = out_.add_op(*n.op, n.params, std::move(inputs), n.name);
    for (size_t k = 0; k < outs.size(); ++k) {
      if (k < n.value_names.size() && !n.value_names[k].empty() && !is_boundary_output({i, static_cast<int32_t>(k)}))
        out_.name_value(outs[k], n.value_names[k]);
      set({i, static_cast<int32_t>(k)}, outs[k]);
    }
  }

  // Whether ONNX defines node i's operator in the target type at the opset
  // the model is written at (always, without one).
  bool onnx_defines_in_type(int32_t i) const {
    return onnx_opset_ <= 0 || onnx_io::exports_in_type(source_, i, to_, onnx_opset_);
  }

  // A graph output that gets a cast at the boundary: its name goes to the cast.
  bool is_boundary_output(ValueRef v) const {
    for (ValueRef o : source_.outputs())
      if (o == v) return true;
    return false;
  }

  void set(ValueRef from, ValueRef to) {
    Versions& v = versions_[{from.node, from.output}];
    v.primary = to;
    v.by_type[out_.dtype(to)] = to;
  }

  ValueRef primary(ValueRef v) const { return versions_.at({v.node, v.output}).primary; }

  // Value `v` of the source in floating type `t` of the new graph: as
  // computed, or through one cast of what was computed (made once). A
  // float32 weight read in float32 is the weight itself.
  ValueRef version(ValueRef v, DType t) {
    Versions& have = versions_.at({v.node, v.output});
    if (auto it = have.by_type.find(t); it != have.by_type.end()) return it->second;
    const Node& n = source_.node(v.node);
    ValueRef made;
    if (n.is_constant() && t == DType::kFloat) {
      made = out_.add_shared_constant(n);
    } else {
      made = out_.apply("cast", {have.primary}, {{"to", std::string(dtype_name(t))}});
      ++stats_.casts;
    }
    have.by_type[t] = made;
    return made;
  }

  struct Versions {
    ValueRef primary;
    std::map<DType, ValueRef> by_type;
  };

  const Graph& source_;
  const DType to_;
  const bool convert_io_;
  const int64_t onnx_opset_;
  ConversionStats& stats_;
  Graph out_;
  std::map<Key, Versions> versions_;
};

double relative_l2(const Value<float>& actual, const Value<float>& expected) {
  if (!expected.is_float()) {
    int64_t differ = 0;
    for (size_t i = 0; i < expected.ints.data.size(); ++i) differ += actual.ints.data[i] != expected.ints.data[i];
    return expected.ints.data.empty() ? 0
                                      : static_cast<double>(differ) / static_cast<double>(expected.ints.data.size());
  }
  double num = 0, den = 0;
  for (size_t i = 0; i < expected.real.data.size(); ++i) {
    const double a = actual.real.data[i], e = expected.real.data[i];
    if (std::isnan(e)) continue;
    if (std::isnan(a)) return NAN;
    num += (a - e) * (a - e);
    den += e * e;
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

}  // namespace

Graph convert_precision(const Graph& graph, const PrecisionConversion& conversion, ConversionStats* stats) {
  ConversionStats local;
  return Converter(graph, conversion, stats ? *stats : local).run();
}

std::vector<double> conversion_error(const Graph& original, const Graph& converted, uint64_t seed) {
  std::vector<Value<float>> inputs, converted_inputs;
  for (size_t i = 0; i < original.inputs().size(); ++i) {
    const Node& n = original.node(original.inputs()[i]);
    const DType t = converted.node(converted.inputs().at(i)).output_dtypes[0];
    if (is_floating(n.output_dtypes[0])) {
      inputs.emplace_back(random_tensor<float>(n.output_shapes[0], seed + i));
      Value<float> rounded = inputs.back();
      round_to_dtype(t, std::span<float>(rounded.real.data));
      rounded.dtype = t;
      converted_inputs.push_back(std::move(rounded));
    } else {
      inputs.emplace_back(n.output_dtypes[0], Tensor<int64_t>(n.output_shapes[0]));  // zeros: valid indices
      converted_inputs.push_back(inputs.back());
    }
  }
  const std::vector<Value<float>> expected = evaluate_values<float>(original, inputs);
  const std::vector<Value<float>> actual = evaluate_values<float>(converted, converted_inputs);
  std::vector<double> errors;
  for (size_t k = 0; k < expected.size(); ++k) errors.push_back(relative_l2(actual.at(k), expected[k]));
  return errors;
}

}  // namespace tgr::optimizer
