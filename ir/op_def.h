// The operator table: every operator is described once, here, and every
// other part of the toolchain (parser, shape inference, interpreter,
// fingerprints, later the verifier, importer and GPU runtime) reads that
// description. Adding an operator = one OpDef entry plus its kernels in
// ir/ops/.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/field.h"
#include "ir/params.h"
#include "ir/shape.h"
#include "ir/tensor.h"

namespace tgr {

struct OpDef;

// What shape inference and kernels see of one operator application.
struct OpCall {
  const OpDef& op;
  const Params& params;
  std::span<const Shape> input_shapes;
  std::span<const Shape> output_shapes;  // empty during shape inference
};

// A kernel computes all outputs (already sized to their inferred shapes).
template <class T>
using Kernel = void (*)(const OpCall& call, std::span<const Tensor<T>* const> inputs,
                        std::span<Tensor<T>> outputs);

// The three semantics of an operator: float32 and float64 (the real
// semantics), and the prime field (for fingerprints).
struct KernelSet {
  Kernel<float> f32 = nullptr;
  Kernel<double> f64 = nullptr;
  Kernel<Fp> field = nullptr;

  template <class T>
  Kernel<T> get() const {
    if constexpr (std::is_same_v<T, float>) return f32;
    else if constexpr (std::is_same_v<T, double>) return f64;
    else return field;
  }
};
// KERNELS(fn) instantiates one kernel template for the three domains.
#define TGR_KERNELS(fn) ::tgr::KernelSet{&fn<float>, &fn<double>, &fn<::tgr::Fp>}

// How the field semantics relates to the real one (documentation, shown by
// `run --ops`, and used by the generator to know what fingerprints mean).
enum class FieldSemantics {
  kExact,         // the same formula in field arithmetic
  kInverse,       // the same formula, division by the field inverse
  kPseudoRandom,  // a fixed pseudo-random function (non-linear operators)
};

struct OpDef {
  std::string name{};
  std::string summary{};
  std::vector<std::string> inputs{};  // input names; with `variadic`, the last repeats
  bool variadic = false;
  std::vector<ParamSpec> params{};
  // Number of outputs; a function of the parameters (split), else 1.
  std::function<int(const Params&)> num_outputs = [](const Params&) { return 1; };
  // Output shapes, or ShapeError naming what is wrong. Arity and parameters
  // have already been checked when this runs.
  std::function<std::vector<Shape>(const OpCall&)> infer_shapes{};
  KernelSet kernels{};
  FieldSemantics field = FieldSemantics::kExact;
  // multilinear[i]: the outputs are multi-linear (degree <= 1) in input i;
  // for variadic operators the last flag covers every repeated input.
  std::vector<bool> multilinear{};
  // Parameters that make the operator non-linear in every input (conv2d's
  // fused relu); null when none do.
  std::function<bool(const Params&)> nonlinear_when{};
  bool commutative = false;  // two inputs that may be swapped
  // Rewrites parameters to their canonical form once input shapes are known
  // (transpose: an explicit reversal becomes the default), so that equal
  // programs print equally. Null when parameters are already canonical.
  std::function<void(Params&, std::span<const Shape>)> canonicalize{};

  // Checks given parameter values against the specs and fills in defaults.
  // Unknown names, missing required parameters and out-of-range values raise
  // ParamError.
  Params make_params(std::vector<std::pair<std::string, ParamValue>> given = {}) const;

  // Checks arity, then runs infer_shapes. Raises ShapeError.
  std::vector<Shape> output_shapes(const Params& params, std::span<const Shape> input_shapes) const;

  bool accepts_input_count(size_t n) const;
  bool is_multilinear_in(const Params& params, size_t input) const;
  bool is_constant() const { return inputs.empty(); }
  const ParamSpec* find_param(std::string_view param_name) const;
};

class OpTable {
 public:
  // The table of all operators, built on first use.
  static const OpTable& instance();

  const OpDef* find(std::string_view name) const;
  const OpDef& get(std::string_view name) const;  // throws std::out_of_range naming it
  std::vector<const OpDef*> all() const;

  // Adds an operator; checks the entry is complete and its defaults legal.
  OpDef& add(OpDef def);

 private:
  std::vector<std::unique_ptr<OpDef>> ops_;
};

}  // namespace tgr
