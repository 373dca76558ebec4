// `generate --compose`: rules composed of two proved rules of the database,
// so that one rule applies where several must otherwise meet in the
// optimizer's e-graph (issue 45: a merge of branches with their biases and
// activations is a merge of plain convolutions, then a split bias, then a
// split relu).
//
// For merge rules A: LA => RA and B: LB => RB (is_merge_rule; either one
// read in either direction, as rules apply both ways), when the outputs of
// RA are instances of subterms of LB (distinct, none inside another, none a
// bare variable; matching binds B's variables only, either argument order of
// a commutative operator), rewriting with A and then with B takes LB[LA]σ to
// RBσ: the composite rule LB[LA]σ => RBσ (a critical pair of A and B in the
// direction of rewriting), kept when it is a merge rule itself. Its variables keep the shapes of their rules (A's
// where a variable of each is unified); it is kept when it type-checks at
// them, has at most `max_ops` operators a side, is not a rule of the
// database already, and both sides agree on random inputs (prime field and
// float64). Composites are composed again with the proved rules for
// `rounds` rounds; each composite is also stored with an activation of the
// merge rules over one of its outputs (with_activation_on_one_output). Each
// is stored as a candidate (kind 'full') with the two rules it composes in
// its constraints JSON and note, for `verify --db` to prove by Z3 from the
// axioms like any other.
#pragma once

#include <atomic>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace tgr::gen {

// A rule of the database: "SRC => DST" and its variables' shapes.
struct ComposableRule {
  int64_t id = 0;  // 0: a composite of this run, not stored yet
  std::string text, shapes;
  std::string how;  // a composite's: the rules it composes (ComposedRule::how)
};

// A rule of several outputs one of whose sides computes them as pieces of
// one computation (each output reads an output of one multi-output call, a
// split): a merge, `(conv2d(i0, k0), conv2d(i0, l0)) =>
// (split(conv2d(i0, concat(k0, l0))).0, ...)`, or a bias or activation over
// a split's pieces. Outputs that share other subterms or only variables
// (two rules side by side) are not. Throws ParseError.
bool is_merge_rule(const std::string& text);

struct ComposedRule {
  std::string text;    // "SRC => DST"
  std::string shapes;  // its variables'
  std::string how;     // "#A (right to left) then #B"; a composite of this run as "(#C then #D)"
};

// The composites of A then B (A's target rewritten inside B's source), both
// read in either direction, at most `max_ops` operators a side, that
// type-check and whose sides agree on random inputs. Throws ParseError for
// a rule text that does not parse.
std::vector<ComposedRule> compose_pair(const ComposableRule& a, const ComposableRule& b, int max_ops, uint64_t seed);

// The activations of merge rules: operators of one argument and no
// parameters over every output of one side, each output a piece of a split
// (the merge space's `(relu(split(z).0), relu(split(z).1)) => ...`).
std::set<std::string> split_activations(const std::vector<ComposableRule>& merges);

// `rule` (a merge rule of several outputs) with one of `activations` over
// output j on both sides, for each j where that type-checks and the sides
// agree on random inputs (congruence: a branch that ends in the activation
// beside one that does not). At most `max_ops` operators a side.
std::vector<ComposedRule> with_activation_on_one_output(const ComposableRule& rule,
                                                        const std::set<std::string>& activations, int max_ops,
                                                        uint64_t seed);

struct CompositionOptions {
  std::string db;
  int rounds = 2;   // composites composed again with the proved rules
  int max_ops = 8;  // operators a side of a composite, at most
  uint64_t seed = 1;
  bool progress = true;
};

struct CompositionReport {
  int64_t run = 0;
  int64_t proved_rules = 0;  // proved merge rules read from the database (is_merge_rule)
  int64_t pairs = 0;         // ordered pairs tried
  int64_t composites = 0;    // distinct composites that passed the checks
  int64_t inserted = 0;      // ... new in the database
  double seconds = 0;
  bool interrupted = false;
};

// Reads the proved merge rules of `options.db` (not the composites of an
// earlier run: a second run adds nothing), composes them, stores the new
// composites as candidates under a 'generate' run. Throws
// rules_db::DbError for a database that cannot be opened.
CompositionReport generate_compositions(const CompositionOptions& options, const std::atomic<bool>& stop);

}  // namespace tgr::gen
