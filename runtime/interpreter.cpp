#include "runtime/interpreter.h"

#include "ir/float_types.h"

#include <random>
#include <stdexcept>

namespace tgr {

template <class T>
Value<T> constant_in_domain(const ConstantValue& c) {
  if (!c.is_float()) return Value<T>(c.dtype, c.ints);
  Tensor<T> t(c.real.shape);
  for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = from_real<T>(c.real.data[i]);
  Value<T> v(std::move(t));
  v.dtype = c.dtype;  // a half constant's numbers are its type's in every domain
  return v;
}

namespace {

template <class T>
void run_node(const Node& n, std::span<const Value<T>* const> args, std::vector<Value<T>>& outs) {
  std::vector<Shape> in_shapes;
  std::vector<DType> in_dtypes;
  for (const Value<T>* a : args) {
    in_shapes.push_back(a->shape());
    in_dtypes.push_back(a->dtype);
  }
  const OpCall call{*n.op, n.params, in_shapes, in_dtypes, n.output_shapes};
  outs.resize(n.output_shapes.size());
  for (size_t k = 0; k < outs.size(); ++k) {
    outs[k].dtype = n.output_dtypes[k];
    if (outs[k].is_float()) outs[k].real = Tensor<T>(n.output_shapes[k]);
    else outs[k].ints = Tensor<int64_t>(n.output_shapes[k]);
  }
  if (n.op->has_mixed_kernels()) {
    n.op->mixed_kernels.template get<T>()(call, args, outs);
    return;
  }
  // One element type throughout: the domain kernel or the integer kernel.
  const bool ints = !n.output_dtypes.empty() && !outs[0].is_float();
  if (ints) {
    std::vector<const Tensor<int64_t>*> in;
    std::vector<Tensor<int64_t>> out(outs.size());
    for (const Value<T>* a : args) in.push_back(&a->ints);
    for (size_t k = 0; k < outs.size(); ++k) out[k] = std::move(outs[k].ints);
    n.op->kernels.i64(call, in, out);
    for (size_t k = 0; k < outs.size(); ++k) outs[k].ints = std::move(out[k]);
  } else {
    std::vector<const Tensor<T>*> in;
    std::vector<Tensor<T>> out(outs.size());
    for (const Value<T>* a : args) in.push_back(&a->real);
    for (size_t k = 0; k < outs.size(); ++k) out[k] = std::move(outs[k].real);
    n.op->kernels.template get<T>()(call, in, out);
    for (size_t k = 0; k < outs.size(); ++k) outs[k].real = std::move(out[k]);
  }
}

// The reference semantics of the half types: each operator computes in the
// domain (float32 or float64) and its float16/bfloat16 outputs are rounded
// to their type (docs/design.md, "Element types"). The field is exact.
template <class T>
void round_outputs(std::vector<Value<T>>& outs) {
  if constexpr (!kIsField<T>)
    for (Value<T>& v : outs) round_to_dtype(v.dtype, std::span<T>(v.real.data));
}

}  // namespace

template <class T>
std::vector<Value<T>> evaluate_values(const Graph& graph, std::span<const Value<T>> inputs) {
  const auto& input_nodes = graph.inputs();
  if (inputs.size() != input_nodes.size())
    throw std::invalid_argument("evaluate: the graph has " + std::to_string(input_nodes.size()) +
                                " inputs, given " + std::to_string(inputs.size()));
  const auto& nodes = graph.nodes();
  std::vector<std::vector<Value<T>>> owned(nodes.size());
  std::vector<const Value<T>*> borrowed(nodes.size(), nullptr);  // inputs, float32 constants
  for (size_t i = 0; i < input_nodes.size(); ++i) {
    const Node& n = nodes[input_nodes[i]];
    if (inputs[i].dtype != n.output_dtypes[0] || inputs[i].shape() != n.output_shapes[0])
      throw std::invalid_argument("evaluate: input '" + n.name + "' is " + std::string(dtype_name(n.output_dtypes[0])) +
                                  " " + shape_to_string(n.output_shapes[0]) + ", given " +
                                  std::string(dtype_name(inputs[i].dtype)) + " " + shape_to_string(inputs[i].shape()));
    borrowed[input_nodes[i]] = &inputs[i];
  }
  auto value = [&](ValueRef v) -> const Value<T>& {
    return borrowed[v.node] ? *borrowed[v.node] : owned[v.node][v.output];
  };

  std::vector<std::vector<int32_t>> remaining = graph.use_counts();
  std::vector<const Value<T>*> args;
  for (int32_t index : graph.topological_order()) {
    const Node& n = nodes[index];
    if (n.is_input()) continue;
    if (n.is_constant()) {
      if constexpr (std::is_same_v<T, float>) borrowed[index] = n.constant.get();
      else owned[index] = {constant_in_domain<T>(*n.constant)};
      continue;
    }
    args.clear();
    for (ValueRef in : n.inputs) args.push_back(&value(in));
    try {
      run_node<T>(n, args, owned[index]);
      round_outputs<T>(owned[index]);
    } catch (const UndefinedSemantics& e) {
      throw UndefinedSemantics(std::string(e.what()) + (n.name.empty() ? "" : " (node '" + n.name + "')"));
    }
    // Free inputs whose last reader this was.
    for (ValueRef in : n.inputs)
      if (--remaining[in.node][in.output] == 0 && !borrowed[in.node]) owned[in.node][in.output] = Value<T>();
  }
  std::vector<Value<T>> results;
  for (ValueRef v : graph.outputs()) {
    // An output read twice, or an input or constant returned as an output, is copied.
    if (!borrowed[v.node] && --remaining[v.node][v.output] == 0)
      results.push_back(std::move(owned[v.node][v.output]));
    else
      results.push_back(value(v));
  }
  return results;
}

template <class T>
std::vector<Tensor<T>> evaluate(const Graph& graph, std::span<const Tensor<T>> inputs) {
  std::vector<Value<T>> values;
  for (const Tensor<T>& t : inputs) values.emplace_back(t);
  std::vector<Tensor<T>> out;
  std::vector<Value<T>> results = evaluate_values<T>(graph, values);
  for (size_t k = 0; k < results.size(); ++k) {
    if (!results[k].is_float())
      throw std::invalid_argument("evaluate: output " + std::to_string(k) + " is " +
                                  std::string(dtype_name(results[k].dtype)) + "; use evaluate_values");
    out.push_back(std::move(results[k].real));
  }
  return out;
}

template <class T>
std::vector<Tensor<T>> evaluate(const Graph& graph, const std::map<std::string, Tensor<T>>& inputs) {
  std::vector<Tensor<T>> ordered;
  for (int32_t i : graph.inputs()) {
    const std::string& name = graph.node(i).name;
    auto it = inputs.find(name);
    if (it == inputs.end()) throw std::invalid_argument("evaluate: no value given for input '" + name + "'");
    ordered.push_back(it->second);
  }
  return evaluate<T>(graph, std::span<const Tensor<T>>(ordered));
}

template <class T>
Tensor<T> random_tensor(const Shape& shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Tensor<T> t(shape);
  if constexpr (kIsField<T>) {
    std::uniform_int_distribution<uint64_t> dist(0, Fp::kModulus - 1);
    for (T& v : t.data) v = Fp::from_residue(dist(rng));
  } else {
    std::uniform_real_distribution<T> dist(T(-1), T(1));
    for (T& v : t.data) v = dist(rng);
  }
  return t;
}

template <class T>
std::vector<Tensor<T>> random_inputs(const Graph& graph, uint64_t seed) {
  std::vector<Tensor<T>> out;
  std::seed_seq seq{seed};
  std::vector<uint64_t> seeds(graph.inputs().size());
  seq.generate(seeds.begin(), seeds.end());
  for (size_t i = 0; i < graph.inputs().size(); ++i)
    out.push_back(random_tensor<T>(graph.node(graph.inputs()[i]).output_shapes[0], seeds[i] ^ seed));
  return out;
}

ConstantValue random_constant(DType dtype, const Shape& shape, uint64_t seed) {
  ConstantValue c(random_tensor<float>(shape, seed));
  c.dtype = dtype;
  round_to_dtype(dtype, std::span<float>(c.real.data));
  return c;
}

template <class To, class From>
Tensor<To> convert(const Tensor<From>& t) {
  Tensor<To> out(t.shape);
  for (size_t i = 0; i < t.data.size(); ++i) {
    if constexpr (kIsField<To> && !kIsField<From>) {
      const From v = t.data[i];
      if (v != static_cast<From>(static_cast<int64_t>(v)))
        throw std::invalid_argument("convert: only integers map into the field, got " + std::to_string(v));
      out.data[i] = Fp(static_cast<int64_t>(v));
    } else {
      out.data[i] = static_cast<To>(t.data[i]);
    }
  }
  return out;
}

#define TGR_INSTANTIATE(T)                                                                          \
  template std::vector<Tensor<T>> evaluate<T>(const Graph&, std::span<const Tensor<T>>);            \
  template std::vector<Value<T>> evaluate_values<T>(const Graph&, std::span<const Value<T>>);       \
  template Value<T> constant_in_domain<T>(const ConstantValue&);                                    \
  template std::vector<Tensor<T>> evaluate<T>(const Graph&, const std::map<std::string, Tensor<T>>&); \
  template Tensor<T> random_tensor<T>(const Shape&, uint64_t);                                      \
  template std::vector<Tensor<T>> random_inputs<T>(const Graph&, uint64_t);
TGR_INSTANTIATE(float)
TGR_INSTANTIATE(double)
TGR_INSTANTIATE(Fp)
#undef TGR_INSTANTIATE

template Tensor<Fp> convert<Fp, double>(const Tensor<double>&);
template Tensor<Fp> convert<Fp, float>(const Tensor<float>&);
template Tensor<float> convert<float, double>(const Tensor<double>&);
template Tensor<double> convert<double, float>(const Tensor<float>&);

}  // namespace tgr
