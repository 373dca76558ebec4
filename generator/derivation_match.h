// Kernel matching: a derived program (generator/derivation.h) as a graph of
// the table's operators, in the text form (ir/text.h).
//
// A computing stage matches an operator whose expression hooks
// (ir/expression.h) propose an application with the stage's iterator
// ranges: the iterators are mapped onto the operator's (traversal ones in
// order, summation ones by any bijection of equal ranges), the terms and
// factors paired, and each operand of the operator is the tensor the
// stage reads, re-laid-out: at every iteration point the element the
// operator reads must be the one the stage reads, which fixes the operand's
// index map (elements never read are free). A layout stage, and each such
// operand, matches a layout operator or two (identity, reshape, transpose,
// a piece of a split, a concat of a split's pieces) whose index map, read
// off the interpreter on an input numbered 1.., agrees with it.
// Matching works at the program's concrete shapes; what it builds is a
// candidate, proved later by verify.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "generator/derivation.h"
#include "ir/params.h"

namespace tgr::gen {

// The text of the program as operators over variables `input_names` (one
// per program input), or none when a stage matches no operator. `like`:
// parameters tried first for the computing operators (the source's).
std::optional<std::string> match_program(const Program& p, const std::vector<std::string>& input_names,
                                         const Params* like);

// The text of a layout operator chain over `x` (shape `from`, result `to`)
// whose element i is x's element map[i] (-1: zero, -2: any), or none.
std::optional<std::string> match_layout(const std::vector<int64_t>& map, const Shape& from, const Shape& to,
                                        const std::string& x);

}  // namespace tgr::gen
