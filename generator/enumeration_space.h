// What the generator enumerates over: input variables with small fixed
// shapes, and operator templates (an operator of the table with fixed
// parameters). Variables are grouped in "worlds" of tensors that operators
// can combine (2-D matrices, 3-D batches, 4-D images and kernels); graphs
// never mix worlds, since no operator of the set connects them, so each
// world is enumerated on its own.
//
// The data — which worlds, variable kinds, shapes and templates — is a
// search space file (spaces/*.space, format in docs/spaces.md), chosen with
// `generate --space NAME|FILE`; this file reads it and builds the worlds.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "ir/op_def.h"
#include "util/limits.h"

namespace tgr::gen {

// What a tensor stands for. Shapes alone would let a kernel be convolved as
// an image; roles keep the enumeration to TASO's typed operators. A bias is
// a per-channel (1xCx1x1) or per-feature (N) value that a broadcasting add
// or mul spreads over an image or a matrix.
enum class Role : uint8_t { kAny, kSame, kTensor, kImage, kKernel, kScalar, kBias };

struct Variable {
  std::string name;  // kind letters + index: x0, w1, i2, k0 (3x3), p0 (1x1), r0 (1x3), b0, s0
  Shape shape;
  Role role = Role::kTensor;
  Shape alternative;  // the kind's other sizes (see World::alternative_shape)
};

struct OpTemplate {
  const OpDef* op = nullptr;
  Params params;
  std::string label;  // e.g. "concat[axis=1]"
  int arity = 0;
  std::array<Role, 3> arg_roles{Role::kAny, Role::kAny, Role::kAny};  // kSame: the role of argument 0
  Role output_role = Role::kSame;                                      // kSame: the role of argument 0
  bool broadcasting = false;  // add, mul: operands of different shapes (else equal shapes only)

  // Whether the arguments' roles are interchangeable (every argument takes
  // the first one's role, or all name one role): only then does the
  // enumerator list a commutative operator's arguments in one order.
  bool symmetric_roles() const;
};

struct World {
  std::string name;
  std::vector<Variable> variables;
  std::vector<OpTemplate> templates;
  // The largest value the enumeration computes (the space's limits): an
  // operator whose output would be larger is not applied there.
  int64_t max_elements = util::Limits{}.max_elements;

  // Other sizes for each kind of variable (by kind letters), consistent with
  // one another (channels of images and kernels, inner dimensions), used to
  // test whether a rule depends on the sizes it was found on. Throws
  // std::invalid_argument for a kind the world does not have.
  Shape alternative_shape(const std::string& kind) const;
};

// One variable kind of a space: `variable x 2x4 tensor alternative 3x6`.
struct VariableKind {
  std::string kind;  // letters
  Shape shape, alternative;
  Role role = Role::kTensor;
  int at_most = 9;  // fewer than --vars-per-kind (scalars: 2)
};

struct WorldSpec {
  std::string name;
  std::vector<std::string> needs;  // enumerated only when all of these operators are selected
  std::vector<VariableKind> kinds;
  std::vector<OpTemplate> templates;
};

// A search space, parsed from its text (docs/spaces.md).
struct Space {
  std::string name;   // `space NAME`
  std::string about;  // `about TEXT`: one line for listings
  std::string text;   // the file as read: recorded in the run row
  int vars_per_kind = 3;
  std::vector<WorldSpec> worlds;
  util::Limits limits;  // what it was read under (parse_space)

  // The distinct operator names of its templates, in order of first use.
  std::vector<std::string> operators() const;
};

// Parses a space; `origin` names it in errors ("spaces/default.space:12: ...").
// Throws std::invalid_argument, also for a variable's shape (or its
// alternative) or an operator without arguments (eye, ones) whose output has
// more elements than limits.max_elements (checked before anything is
// allocated; generate --max-elements).
Space parse_space(const std::string& text, const std::string& origin, const util::Limits& limits = {});

// The spaces built into the program (the files of spaces/), by name.
std::vector<std::string> builtin_space_names();
// A built-in space by name, or else a file: throws std::invalid_argument
// naming the built-in spaces when it is neither.
// A file larger than limits.max_bytes is refused before it is read.
Space load_space(const std::string& name_or_file, const util::Limits& limits = {});

struct SpaceOptions {
  std::vector<std::string> ops;   // operator names to use (of the space's); empty = all of the space's
  int vars_per_kind = 0;          // variables of each kind (x, w, i, k, p, r, b); 0 = the space's
  std::string space = "default";  // a built-in name or a file (ignored when `parsed` is given)
  const Space* parsed = nullptr;
};

// The default operator set: the operators of spaces/default.space.
std::vector<std::string> default_operator_set();

// Raises std::invalid_argument for an operator name the space does not use,
// and for a world whose variables (their shapes and alternatives) would
// take more than the space's limits.max_bytes as the enumeration's values.
std::vector<World> build_worlds(const SpaceOptions& options);

}  // namespace tgr::gen
