#include "runtime/interpreter.h"

#include <random>
#include <stdexcept>

namespace tgr {

template <class T>
std::vector<Tensor<T>> evaluate(const Graph& graph, std::span<const Tensor<T>> inputs) {
  const auto& input_nodes = graph.inputs();
  if (inputs.size() != input_nodes.size())
    throw std::invalid_argument("evaluate: the graph has " + std::to_string(input_nodes.size()) +
                                " inputs, given " + std::to_string(inputs.size()));
  const auto& nodes = graph.nodes();
  std::vector<std::vector<Tensor<T>>> values(nodes.size());
  std::vector<const Tensor<T>*> input_value(nodes.size(), nullptr);
  for (size_t i = 0; i < input_nodes.size(); ++i) {
    const Node& n = nodes[input_nodes[i]];
    if (inputs[i].shape != n.output_shapes[0])
      throw std::invalid_argument("evaluate: input '" + n.name + "' has shape " + shape_to_string(n.output_shapes[0]) +
                                  ", given " + shape_to_string(inputs[i].shape));
    input_value[input_nodes[i]] = &inputs[i];
  }
  auto value = [&](ValueRef v) -> const Tensor<T>& {
    return input_value[v.node] ? *input_value[v.node] : values[v.node][v.output];
  };

  std::vector<std::vector<int32_t>> remaining = graph.use_counts();
  std::vector<const Tensor<T>*> args;
  for (int32_t index : graph.topological_order()) {
    const Node& n = nodes[index];
    if (n.is_input()) continue;
    args.clear();
    std::vector<Shape> in_shapes;
    for (ValueRef in : n.inputs) {
      args.push_back(&value(in));
      in_shapes.push_back(graph.shape(in));
    }
    std::vector<Tensor<T>>& outs = values[index];
    for (const Shape& s : n.output_shapes) outs.emplace_back(s);
    const OpCall call{*n.op, n.params, in_shapes, n.output_shapes};
    n.op->kernels.template get<T>()(call, args, outs);
    // Free inputs whose last reader this was.
    for (ValueRef in : n.inputs)
      if (--remaining[in.node][in.output] == 0 && !input_value[in.node])
        values[in.node][in.output] = Tensor<T>();
  }
  std::vector<Tensor<T>> results;
  for (ValueRef v : graph.outputs()) {
    // An output read twice, or an input returned as an output, is copied.
    if (!input_value[v.node] && --remaining[v.node][v.output] == 0)
      results.push_back(std::move(values[v.node][v.output]));
    else
      results.push_back(value(v));
  }
  return results;
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
