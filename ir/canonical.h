// Canonical forms of graphs and rules in the text syntax, up to
//  - renaming of variables (renamed by order of first appearance, keeping the
//    letters of their name as their kind: x1, x0 -> x0, x1; k5 -> k0),
//  - the argument order of commutative operators (add, mul: the table's flag),
//  - for rules, which side is written first,
//  - for several outputs, their order (permuted alike on both sides),
//  - parameters written at their default value.
// The canonical text is the smallest text over all of these choices, so two
// texts denote the same rule (in this sense) exactly when their canonical
// texts are equal. It is the rules database's key and what `rules lookup`
// compares.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ir/text.h"

namespace tgr {

// A tuple of expressions (one graph's outputs).
std::string canonical_text(std::vector<Expr> outputs);

// A rule. With `allow_swap`, "a => b" and "b => a" have one canonical text.
// Without `commutative`, the argument order of commutative operators is kept
// (the generator counts what each equivalence removes). `renaming`, when
// given, receives what each variable is called in the canonical text (so
// that shapes given by the old names can follow).
std::string canonical_rule_text(RuleExpr rule, bool allow_swap = true, bool commutative = true,
                                std::map<std::string, std::string>* renaming = nullptr);

// Parses and canonicalises; throws ParseError.
std::string canonical_rule_text(std::string_view text, bool allow_swap = true);

// The kind of a variable: the letters its name starts with (x0 -> "x",
// k12 -> "k"). Renaming keeps kinds apart.
std::string variable_kind(std::string_view name);

// Parameters equal to their default removed (what printing omits), in table order.
void normalize_params(Expr& e);

}  // namespace tgr
