// What the generator enumerates over: input variables with small fixed
// shapes, and operator templates (an operator of the table with fixed
// parameters). Variables are grouped in "worlds" of tensors that operators
// can combine (2-D matrices, 3-D batches, 4-D images and kernels); graphs
// never mix worlds, since no operator of the set connects them, so each
// world is enumerated on its own.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "ir/op_def.h"

namespace tgr::gen {

// What a tensor stands for. Shapes alone would let a kernel be convolved as
// an image; roles keep the enumeration to TASO's typed operators.
enum class Role : uint8_t { kAny, kSame, kTensor, kImage, kKernel, kScalar };

struct Variable {
  std::string name;  // kind letters + index: x0, w1, i2, k0 (3x3), p0 (1x1), r0 (1x3), b0, s0
  Shape shape;
  Role role = Role::kTensor;
};

struct OpTemplate {
  const OpDef* op = nullptr;
  Params params;
  std::string label;  // e.g. "concat[axis=1]"
  int arity = 0;
  std::array<Role, 3> arg_roles{Role::kAny, Role::kAny, Role::kAny};  // kSame: the role of argument 0
  Role output_role = Role::kSame;                                      // kSame: the role of argument 0
};

struct World {
  std::string name;
  std::vector<Variable> variables;
  std::vector<OpTemplate> templates;
};

struct SpaceOptions {
  std::vector<std::string> ops;  // operator names to use; empty = the default set
  int vars_per_kind = 3;         // variables of each kind (x, w, i, k, p, r, b); scalars: min(2, this)
};

// The default operator set: TASO's (matmul, conv2d with 3x3/1x1/1x3 kernels
// with and without fused relu, add, mul, scalar_mul, relu, transpose,
// concat and split on axes 0 and 1, avgpool and maxpool 3x3, enlarge, the
// constant operators) plus batch_matmul.
std::vector<std::string> default_operator_set();

// Raises std::invalid_argument for an operator name the generator cannot use.
std::vector<World> build_worlds(const SpaceOptions& options);

// Other sizes for each kind of variable (by kind letters), consistent with
// one another (channels of images and kernels, inner dimensions), used to
// test whether a rule depends on the sizes it was found on.
Shape alternative_shape(const std::string& kind);

}  // namespace tgr::gen
