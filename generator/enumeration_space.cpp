#include "generator/enumeration_space.h"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

namespace tgr::gen {

namespace {

using Ints = std::vector<int64_t>;
using Given = std::vector<std::pair<std::string, ParamValue>>;

// The shapes of each kind. Small, so fingerprints are cheap; not all equal,
// so that operands of different roles rarely fit each other by accident;
// big enough that padding, seams and halves are all present.
const Shape kActivation{2, 4}, kWeight{4, 4}, kBatch{2, 3, 3}, kImage{1, 2, 4, 4};
const Shape kKernel3x3{2, 2, 3, 3}, kKernel1x1{2, 2, 1, 1}, kKernel1x3{2, 2, 1, 3}, kScalar{};

void add_vars(World& w, const std::string& kind, const Shape& shape, int n, Role role) {
  for (int i = 0; i < n; ++i) w.variables.push_back({kind + std::to_string(i), shape, role});
}

// Roles: arguments and output; by default every argument has the role of
// the first and so does the output.
void add_template(World& w, const std::string& op_name, Given params = {},
                  std::array<Role, 3> args = {Role::kAny, Role::kSame, Role::kSame}, Role out = Role::kSame) {
  const OpDef& op = OpTable::instance().get(op_name);
  OpTemplate t{&op, op.make_params(params), op_name, static_cast<int>(op.inputs.size()), args, out};
  if (!params.empty()) {
    t.label += "[";
    for (size_t i = 0; i < params.size(); ++i)
      t.label += (i ? ", " : "") + params[i].first + "=" + param_value_to_string(params[i].second);
    t.label += "]";
  }
  if (op.variadic) t.arity = 2;  // concat of two
  w.templates.push_back(std::move(t));
}

}  // namespace

Shape alternative_shape(const std::string& kind) {
  static const std::map<std::string, Shape> shapes = {
      {"x", {3, 6}},          {"w", {6, 6}},          {"b", {3, 5, 5}}, {"i", {2, 3, 5, 6}},
      {"k", {3, 3, 3, 3}}, {"p", {3, 3, 1, 1}}, {"r", {3, 3, 1, 3}}, {"s", {}}};
  auto it = shapes.find(kind);
  if (it == shapes.end()) throw std::invalid_argument("no variable kind '" + kind + "'");
  return it->second;
}

std::vector<std::string> default_operator_set() {
  return {"matmul", "batch_matmul", "conv2d", "add", "mul", "scalar_mul", "relu", "transpose", "concat", "split",
          "avgpool", "maxpool", "enlarge", "eye", "conv_identity", "pool_kernel", "ones"};
}

std::vector<World> build_worlds(const SpaceOptions& options) {
  const std::vector<std::string> names = options.ops.empty() ? default_operator_set() : options.ops;
  const std::set<std::string> known(names.begin(), names.end());
  static const std::set<std::string> supported = [] {
    auto d = default_operator_set();
    return std::set<std::string>(d.begin(), d.end());
  }();
  for (const auto& n : names) {
    if (!OpTable::instance().find(n)) throw std::invalid_argument("--ops: unknown operator '" + n + "'");
    if (!supported.count(n)) {
      std::string can;
      for (const auto& op : default_operator_set()) can += (can.empty() ? "" : ", ") + op;
      throw std::invalid_argument("--ops: the generator does not enumerate '" + n + "' (it can: " + can + ")");
    }
  }
  if (options.vars_per_kind < 1 || options.vars_per_kind > 9)
    throw std::invalid_argument("--vars-per-kind must be in [1, 9]");
  const int n = options.vars_per_kind, scalars = std::min(2, n);
  auto has = [&](const char* op) { return known.count(op) > 0; };

  // Operators every world may use, when selected.
  auto common = [&](World& w, const std::vector<Shape>& shapes, const std::vector<Role>& roles) {
    if (has("add")) add_template(w, "add");
    if (has("mul")) add_template(w, "mul");
    if (has("scalar_mul")) add_template(w, "scalar_mul", {}, {Role::kAny, Role::kScalar, Role::kAny});
    if (has("relu")) add_template(w, "relu");
    for (int64_t axis : {0, 1}) {
      if (has("concat")) add_template(w, "concat", {{"axis", axis}});
      if (has("split")) {
        // Two equal halves, for every variable shape with an even dimension there.
        std::set<int64_t> sizes;
        for (const Shape& s : shapes)
          if (static_cast<int64_t>(s.size()) > axis && s[axis] % 2 == 0) sizes.insert(s[axis]);
        for (int64_t size : sizes) add_template(w, "split", {{"axis", axis}, {"sizes", Ints{size / 2, size / 2}}});
      }
    }
    if (has("ones"))
      for (size_t k = 0; k < shapes.size(); ++k)
        add_template(w, "ones", {{"shape", Ints(shapes[k])}}, {}, roles[k]);
  };

  std::vector<World> worlds;
  {
    World w{"matrices", {}, {}};
    add_vars(w, "x", kActivation, n, Role::kTensor);
    add_vars(w, "w", kWeight, n, Role::kTensor);
    add_vars(w, "s", kScalar, scalars, Role::kScalar);
    const std::array<Role, 3> tensors{Role::kTensor, Role::kTensor, Role::kTensor};
    if (has("matmul")) add_template(w, "matmul", {}, tensors, Role::kTensor);
    if (has("transpose")) add_template(w, "transpose", {}, tensors, Role::kTensor);
    if (has("eye")) add_template(w, "eye", {{"n", kWeight[0]}}, {}, Role::kTensor);
    common(w, {kActivation, kWeight}, {Role::kTensor, Role::kTensor});
    if (!w.templates.empty()) worlds.push_back(std::move(w));
  }
  {
    World w{"batches", {}, {}};
    add_vars(w, "b", kBatch, n, Role::kTensor);
    add_vars(w, "s", kScalar, scalars, Role::kScalar);
    if (has("batch_matmul")) add_template(w, "batch_matmul", {}, {Role::kTensor, Role::kTensor, Role::kAny}, Role::kTensor);
    common(w, {kBatch}, {Role::kTensor});
    if (has("batch_matmul")) worlds.push_back(std::move(w));  // alone, the common operators repeat the matrices
  }
  {
    World w{"images", {}, {}};
    add_vars(w, "i", kImage, n, Role::kImage);
    add_vars(w, "k", kKernel3x3, n, Role::kKernel);
    add_vars(w, "p", kKernel1x1, n, Role::kKernel);
    add_vars(w, "r", kKernel1x3, n, Role::kKernel);
    add_vars(w, "s", kScalar, scalars, Role::kScalar);
    const std::array<Role, 3> conv{Role::kImage, Role::kKernel, Role::kAny};
    if (has("conv2d")) {
      add_template(w, "conv2d", {}, conv, Role::kImage);
      add_template(w, "conv2d", {{"act", std::string("relu")}}, conv, Role::kImage);
    }
    const std::array<Role, 3> image{Role::kImage, Role::kAny, Role::kAny}, kernel{Role::kKernel, Role::kAny, Role::kAny};
    if (has("avgpool")) add_template(w, "avgpool", {{"kernel", Ints{3, 3}}, {"include_pad", int64_t{1}}}, image);
    if (has("maxpool")) add_template(w, "maxpool", {{"kernel", Ints{3, 3}}}, image);
    if (has("enlarge")) add_template(w, "enlarge", {{"size", Ints{3, 3}}}, kernel);
    if (has("conv_identity"))
      add_template(w, "conv_identity", {{"channels", kImage[1]}, {"kernel", Ints{3, 3}}}, {}, Role::kKernel);
    if (has("pool_kernel"))
      add_template(w, "pool_kernel", {{"channels", kImage[1]}, {"kernel", Ints{3, 3}}}, {}, Role::kKernel);
    common(w, {kImage, kKernel3x3, kKernel1x1, kKernel1x3}, {Role::kImage, Role::kKernel, Role::kKernel, Role::kKernel});
    if (!w.templates.empty()) worlds.push_back(std::move(w));
  }
  return worlds;
}

}  // namespace tgr::gen
