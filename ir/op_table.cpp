#include <algorithm>
#include <array>
#include <stdexcept>

#include "ir/op_def.h"
#include "ir/ops/families.h"

namespace tgr {
namespace {

constexpr std::array<std::string_view, kTableOpKinds> kKindNames = {
#define TGR_OP(kind, name) name,
#include "ir/op_list.def"
#undef TGR_OP
};

}  // namespace

std::string_view op_kind_name(OpKind kind) {
  const auto i = static_cast<size_t>(kind);
  return i < kKindNames.size() ? kKindNames[i] : std::string_view("opaque");
}

OpKind op_kind_of(std::string_view name) {
  for (size_t i = 0; i < kKindNames.size(); ++i)
    if (kKindNames[i] == name) return static_cast<OpKind>(i);
  return OpKind::kOpaque;
}

Params OpDef::make_params(std::vector<std::pair<std::string, ParamValue>> given) const {
  for (const auto& [key, value] : given) {
    if (!find_param(key)) {
      std::string known;
      for (const auto& p : params) known += (known.empty() ? "" : ", ") + p.name;
      throw ParamError(name + ": unknown parameter '" + key + "'" +
                       (known.empty() ? " (it takes none)" : " (it takes: " + known + ")"));
    }
  }
  Params out;
  for (const auto& spec : params) {
    const ParamValue* value = nullptr;
    for (const auto& [key, v] : given)
      if (key == spec.name) {
        if (value) throw ParamError(name + ": parameter '" + key + "' given twice");
        value = &v;
      }
    if (!value && !spec.default_value)
      throw ParamError(name + ": missing required parameter '" + spec.name + "'");
    const ParamValue& v = value ? *value : *spec.default_value;
    check_param_value(name, spec, v);
    out.entries_.emplace_back(spec.name, v);
  }
  return out;
}

bool OpDef::accepts_input_count(size_t n) const {
  return variadic ? n >= inputs.size() : n == inputs.size();
}

bool OpDef::is_multilinear_in(const Params& p, size_t input) const {
  if (multilinear.empty() || (nonlinear_when && nonlinear_when(p))) return false;
  return multilinear[std::min(input, multilinear.size() - 1)];
}

const ParamSpec* OpDef::find_param(std::string_view param_name) const {
  for (const auto& p : params)
    if (p.name == param_name) return &p;
  return nullptr;
}

OpDef::Inferred OpDef::infer(const Params& p, std::span<const Shape> input_shapes,
                             std::span<const DType> input_dtypes) const {
  if (!accepts_input_count(input_shapes.size()))
    throw ShapeError(name + ": expected " + (variadic ? "at least " : "") + std::to_string(inputs.size()) +
                     " input(s), got " + std::to_string(input_shapes.size()));
  OpCall call{*this, p, input_shapes, input_dtypes, {}};
  Inferred out;
  if (infer_dtypes) {
    out.dtypes = infer_dtypes(call);
  } else {
    // One element type throughout: one floating type (operators keep their
    // inputs' type; mixing float types takes a cast), or int64 where an
    // int64 kernel exists.
    const DType t = input_dtypes.empty() ? DType::kFloat : input_dtypes[0];
    for (size_t i = 0; i < input_dtypes.size(); ++i) {
      if (input_dtypes[i] != t)
        throw ShapeError(name + ": inputs must have one element type, got " + std::string(dtype_name(t)) + " and " +
                         std::string(dtype_name(input_dtypes[i])));
    }
    // The int64 kernel serves bools too: operators that have one move or
    // combine integers exactly (layout operators, integer arithmetic).
    if (!is_floating(t) && !kernels.i64)
      throw ShapeError(name + ": defined on float values only, got " + std::string(dtype_name(t)));
    if (t == DType::kBool && !accepts_bool)
      throw ShapeError(name + ": arithmetic on bool values is not defined (cast them to int64 or float)");
    out.dtypes.assign(static_cast<size_t>(num_outputs(p)), t);
  }
  out.shapes = infer_shapes(call);
  for (const Shape& shape : out.shapes) check_indexable(shape, name);
  if (static_cast<int>(out.shapes.size()) != num_outputs(p) || out.dtypes.size() != out.shapes.size())
    throw std::logic_error(name + ": type inference returned the wrong number of outputs");
  return out;
}

std::vector<Shape> OpDef::output_shapes(const Params& p, std::span<const Shape> input_shapes) const {
  const std::vector<DType> floats(input_shapes.size(), DType::kFloat);
  return infer(p, input_shapes, floats).shapes;
}

const OpTable& OpTable::instance() {
  static const OpTable table = [] {
    OpTable t;
    register_elementwise_ops(t);
    register_linear_algebra_ops(t);
    register_convolution_ops(t);
    register_pooling_ops(t);
    register_layout_ops(t);
    register_constant_ops(t);
    register_comparison_ops(t);
    register_normalization_ops(t);
    register_reduction_ops(t);
    register_indexing_ops(t);
    t.check_every_kind_added();
    return t;
  }();
  return table;
}

const OpDef* OpTable::find(std::string_view name) const {
  for (const auto& op : ops_)
    if (op->name == name) return op.get();
  return nullptr;
}

const OpDef& OpTable::get(std::string_view name) const {
  if (const OpDef* op = find(name)) return *op;
  throw std::out_of_range("unknown operator '" + std::string(name) + "'");
}

const OpDef& OpTable::get(OpKind kind) const {
  const auto i = static_cast<size_t>(kind);
  if (i >= by_kind_.size() || by_kind_[i] == nullptr)
    throw std::out_of_range("no table operator of kind '" + std::string(op_kind_name(kind)) + "'");
  return *by_kind_[i];
}

void OpTable::check_every_kind_added() const {
  for (size_t i = 0; i < by_kind_.size(); ++i)
    if (by_kind_[i] == nullptr)
      throw std::logic_error("operator '" + std::string(kKindNames[i]) +
                             "' is in ir/op_list.def but has no table entry");
}

std::vector<const OpDef*> OpTable::all() const {
  std::vector<const OpDef*> out;
  for (const auto& op : ops_) out.push_back(op.get());
  return out;
}

OpDef& OpTable::add(OpDef def) {
  // These are programming errors in a table entry, caught on first use of
  // the table (every test touches it), so they are logic_errors.
  if (find(def.name)) throw std::logic_error("operator '" + def.name + "' defined twice");
  def.kind = op_kind_of(def.name);
  if (def.kind == OpKind::kOpaque) throw std::logic_error("operator '" + def.name + "' is not in ir/op_list.def");
  const bool plain = def.kernels.f32 && def.kernels.f64 && def.kernels.field;
  const bool mixed = def.mixed_kernels.f32 && def.mixed_kernels.f64 && def.mixed_kernels.field;
  if (!def.infer_shapes || plain == mixed)
    throw std::logic_error("operator '" + def.name + "' needs shape inference and one complete kernel set");
  if (mixed && !def.infer_dtypes)
    throw std::logic_error("operator '" + def.name + "' has mixed kernels but no element-type rule");
  if (def.multilinear.size() != def.inputs.size())
    throw std::logic_error("operator '" + def.name + "' needs one multilinear flag per input");
  for (const auto& spec : def.params)
    if (spec.default_value) check_param_value(def.name, spec, *spec.default_value);
  ops_.push_back(std::make_unique<OpDef>(std::move(def)));
  by_kind_[static_cast<size_t>(ops_.back()->kind)] = ops_.back().get();
  return *ops_.back();
}

}  // namespace tgr
