// The operator table: every operator is described once, here, and every
// other part of the toolchain (parser, shape inference, interpreter,
// fingerprints, later the verifier, importer and GPU runtime) reads that
// description. Adding an operator = one line in ir/op_list.def (its OpKind),
// one OpDef entry plus kernels in ir/ops/, and registry entries: the
// registries that switch over OpKind fail to compile without its case
// (-Wswitch), and tests/op_registry_test.cpp names what the others miss.
#pragma once

#include <array>
#include <cstdint>
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

// Every operator of the table by kind, from the one list ir/op_list.def.
// Passes that must recognise an operator by identity compare kinds
// (`n.op->kind == OpKind::kRelu`, or op_is for a node that may be an input)
// and registries switch over them; none compares names.
enum class OpKind : uint8_t {
#define TGR_OP(kind, name) kind,
#include "ir/op_list.def"
#undef TGR_OP
  // Not in the table: an operator made at run time (the ONNX importer's
  // opaque operators, onnx/opaque_op.h) or a test's own OpDef.
  kOpaque,
};
// The number of the table's kinds (kOpaque excluded).
inline constexpr size_t kTableOpKinds = static_cast<size_t>(OpKind::kOpaque);
// The table's name of a kind ("add"); "opaque" for kOpaque.
std::string_view op_kind_name(OpKind kind);
// The kind the list gives `name`; kOpaque for a name it lacks.
OpKind op_kind_of(std::string_view name);

struct OpDef;

// What shape inference and kernels see of one operator application.
struct OpCall {
  const OpDef& op;
  const Params& params;
  std::span<const Shape> input_shapes;
  std::span<const DType> input_dtypes;
  std::span<const Shape> output_shapes;  // empty during shape inference
};

// A kernel computes all outputs (already sized to their inferred shapes).
// Most operators have one element type throughout and use these.
template <class T>
using Kernel = void (*)(const OpCall& call, std::span<const Tensor<T>* const> inputs,
                        std::span<Tensor<T>> outputs);

// Operators whose inputs and outputs mix element types (gather's indices,
// where's mask, comparisons, cast) use these instead: kFloat values in
// `real`, the others in `ints`; outputs arrive with dtype and shape set.
template <class T>
using MixedKernel = void (*)(const OpCall& call, std::span<const Value<T>* const> inputs,
                             std::span<Value<T>> outputs);

// The semantics of an operator: float32 and float64 (the real semantics),
// the prime field (for fingerprints), and optionally int64 for operators
// that are also defined on integers (add, concat, reshape, ...).
struct KernelSet {
  Kernel<float> f32 = nullptr;
  Kernel<double> f64 = nullptr;
  Kernel<Fp> field = nullptr;
  Kernel<int64_t> i64 = nullptr;

  template <class T>
  Kernel<T> get() const {
    if constexpr (std::is_same_v<T, float>) return f32;
    else if constexpr (std::is_same_v<T, double>) return f64;
    else if constexpr (std::is_same_v<T, int64_t>) return i64;
    else return field;
  }
};
// TGR_KERNELS(fn) instantiates one kernel template for the three domains;
// TGR_KERNELS_AND_INT64(fn) for integers too.
#define TGR_KERNELS(fn) ::tgr::KernelSet{&fn<float>, &fn<double>, &fn<::tgr::Fp>}
#define TGR_KERNELS_AND_INT64(fn) ::tgr::KernelSet{&fn<float>, &fn<double>, &fn<::tgr::Fp>, &fn<int64_t>}

struct MixedKernelSet {
  MixedKernel<float> f32 = nullptr;
  MixedKernel<double> f64 = nullptr;
  MixedKernel<Fp> field = nullptr;

  template <class T>
  MixedKernel<T> get() const {
    if constexpr (std::is_same_v<T, float>) return f32;
    else if constexpr (std::is_same_v<T, double>) return f64;
    else return field;
  }
};
#define TGR_MIXED_KERNELS(fn) ::tgr::MixedKernelSet{&fn<float>, &fn<double>, &fn<::tgr::Fp>}

// Raised by a kernel for an operator with no semantics in a domain (the
// field has no order, so comparisons and float-to-int casts have none).
class UndefinedSemantics : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// How the field semantics relates to the real one (documentation, shown by
// `run --ops`, and used by the generator to know what fingerprints mean).
enum class FieldSemantics {
  kExact,         // the same formula in field arithmetic
  kInverse,       // the same formula, division by the field inverse
  kPseudoRandom,  // a fixed pseudo-random function (non-linear operators)
  kUndefined,     // none (comparisons: the field has no order)
};

// Whether an operator's outputs may share the bytes of its input on the GPU
// runtime (runtime/views.h) instead of being copied.
enum class ViewKind {
  kNone,
  kReshape,  // the same elements under a new shape (reshape); the analytic cost model takes it as free
  kPieces,   // pieces of the input along an axis (split); free in the analytic model only under TASO's assumption
  kPermute,  // the input's axes permuted (transpose): a view only for readers that take strides; never free in
             // the analytic model
};

// Typed properties of an operator that passes outside ir/ read instead of
// lists of operator names. Families in ir/ops/ state them once
// (ir/ops/op_helpers.h); tests/op_registry_test.cpp checks every operator.
struct OpTraits {
  // Output element i depends only on the inputs' elements at i after
  // broadcasting (for `channel_operands`, at i's channel). The GPU runtime
  // fuses chains of those with single-type kernels into one program
  // (runtime/views.h is_elementwise_kernel).
  bool elementwise = false;
  // With `elementwise`: the inputs after the first are per-channel vectors
  // [C] read along axis 1 of the first (batch_norm's statistics), so they are
  // read contiguous, never as strided views.
  bool channel_operands = false;
  // Only builds, copies, selects or permutes elements (layout and constant
  // operators): the prover evaluates closed terms of them exactly
  // (verifier/prover.cpp, the "evaluation" axiom).
  bool moves_elements = false;
  // The GPU runtime runs it as a strided copy, which reads every input
  // through any strides (runtime/cuda/lower_layout.cpp).
  bool strided_copy = false;
  ViewKind view = ViewKind::kNone;
  // Its result needs float32's range (exp, pow) or its accumulation float32's
  // precision (softmax, layer norm, sums and means): converting a model to a
  // half type (optimize --convert-to, optimizer/convert_precision.h) leaves
  // it in float32, with casts around it.
  bool needs_float32 = false;
};

// The analytic cost of one application (optimizer/cost_model.h): floating-
// point operations and bytes moved. Every entry states both (the helpers in
// ir/ops/op_helpers.h give the common forms); tests/op_registry_test.cpp
// names an operator that does not.
struct OpCost {
  std::function<double(const OpCall&)> flops{};
  std::function<double(const OpCall&)> bytes{};
};

struct OpDef {
  std::string name{};
  // Set by OpTable::add from the name (ir/op_list.def); kOpaque outside the table.
  OpKind kind = OpKind::kOpaque;
  std::string summary{};
  std::vector<std::string> inputs{};  // input names; with `variadic`, the last repeats
  bool variadic = false;
  std::vector<ParamSpec> params{};
  // Number of outputs; a function of the parameters (split), else 1.
  std::function<int(const Params&)> num_outputs = [](const Params&) { return 1; };
  // Output shapes, or ShapeError naming what is wrong. Arity and parameters
  // have already been checked when this runs.
  std::function<std::vector<Shape>(const OpCall&)> infer_shapes{};
  // Output element types; null means: inputs all kFloat, or (with an i64
  // kernel) all of one type, and every output of that type.
  std::function<std::vector<DType>(const OpCall&)> infer_dtypes{};
  KernelSet kernels{};
  MixedKernelSet mixed_kernels{};  // set instead of `kernels` for mixed types
  FieldSemantics field = FieldSemantics::kExact;  // kUndefined: kernels throw in the field
  // multilinear[i]: the outputs are multi-linear (degree <= 1) in input i;
  // for variadic operators the last flag covers every repeated input.
  std::vector<bool> multilinear{};
  // Parameters that make the operator non-linear in every input (conv2d's
  // fused relu); null when none do.
  std::function<bool(const Params&)> nonlinear_when{};
  bool commutative = false;  // two inputs that may be swapped
  // With an int64 kernel: whether bool values may pass too. True for
  // operators that only move elements (layout); arithmetic on bools is a
  // type error, as in ONNX, since its results would leave {0, 1}.
  bool accepts_bool = false;
  // Rewrites parameters to their canonical form once input shapes are known
  // (transpose: an explicit reversal becomes the default), so that equal
  // programs print equally. Null when parameters are already canonical.
  std::function<void(Params&, std::span<const Shape>)> canonicalize{};
  OpTraits traits{};
  OpCost cost{};
  // Set only for an operator made while a program runs (an ONNX node kept
  // opaque, onnx/opaque_op.h): every Graph holding a node of it shares its
  // ownership, so it lives exactly as long as some graph uses it. Empty for
  // the table's operators, which live as long as the program.
  std::weak_ptr<const OpDef> run_time_owner{};

  // Checks given parameter values against the specs and fills in defaults.
  // Unknown names, missing required parameters and out-of-range values raise
  // ParamError.
  Params make_params(std::vector<std::pair<std::string, ParamValue>> given = {}) const;

  // Checks arity and element types, then runs infer_shapes. Raises ShapeError.
  struct Inferred {
    std::vector<Shape> shapes;
    std::vector<DType> dtypes;
  };
  Inferred infer(const Params& params, std::span<const Shape> input_shapes,
                 std::span<const DType> input_dtypes) const;
  // The same for inputs that are all kFloat.
  std::vector<Shape> output_shapes(const Params& params, std::span<const Shape> input_shapes) const;
  bool has_mixed_kernels() const { return mixed_kernels.f32 != nullptr; }

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
  // The entry of a table kind (not kOpaque: std::out_of_range).
  const OpDef& get(OpKind kind) const;
  std::vector<const OpDef*> all() const;  // in the order added

  // Adds an operator; checks the entry is complete, its defaults legal and
  // its name one of ir/op_list.def's not added before, and sets its kind.
  OpDef& add(OpDef def);

 private:
  // Throws std::logic_error naming a kind of ir/op_list.def with no entry.
  void check_every_kind_added() const;

  std::vector<std::unique_ptr<OpDef>> ops_;
  std::array<const OpDef*, kTableOpKinds> by_kind_{};
};

// The table's entry of a kind: OpTable::instance().get(kind).
inline const OpDef& op_def(OpKind kind) { return OpTable::instance().get(kind); }
// Whether `op` (null for a graph input or constant) is of `kind`.
inline bool op_is(const OpDef* op, OpKind kind) { return op != nullptr && op->kind == kind; }

}  // namespace tgr
