// `generate --derivations`: derivation-based rules (after EinNet). Each
// source, one operator at small shapes, is written as its tensor-algebra
// expression (ir/expression.h), derived up to a depth
// (generator/derivation.h), and every derived program that matches
// operators of the table (generator/derivation_match.h) is a candidate
// rule SOURCE => MATCHED. Candidates are fingerprinted in the prime field
// and re-checked in float64 (both sides on the same random inputs) and
// stored as ordinary candidates (kind 'full', status 'candidate') for
// `verify --db` to prove; the constraints JSON says how each was derived.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "generator/derivation.h"
#include "ir/text.h"

namespace tgr::gen {

struct DerivationSource {
  std::string label;    // e.g. "3x3 convolution"
  std::string program;  // operators with expressions over variables (one output), text form
  std::string shapes;   // its variables' shapes
};

// The built-in sources: convolutions in the forms ResNet-style networks use
// (3x3, strided 3x3 with padding, strided 1x1, each with 4 and 8 input
// channels; 1x1 of one image), a product, a batched product, and three
// producer/consumer pairs (a product transposed or of a transpose, a 1x1
// convolution flattened).
std::vector<DerivationSource> default_derivation_sources();

// Every operator of a search space (docs/spaces.md) that has an expression,
// applied to variables of its worlds' kinds whose roles fit its arguments
// (at most four applications each, those that type-check), and the pairs of
// such operators where one of the two only moves elements (a consumer with
// the producer's application at one argument, variables or another
// application of the producer at the others; at most two per argument).
// Throws std::invalid_argument for a space that is neither built in nor a file.
std::vector<DerivationSource> space_derivation_sources(const std::string& space_name_or_file);

// Both sides of `rule` agree on the same random inputs (seeded by `seed`) in
// the prime field and in float64: the check a derived or composed candidate
// passes before it is stored.
bool rule_sides_agree(const Rule& rule, uint64_t seed);

struct DerivedRule {
  std::string text;    // "SOURCE => TARGET" (source variable names)
  std::string shapes;  // the source's
  std::string kind;    // derivation_kind: the rules' names
  std::string steps;   // the rules with their arguments, "; "-separated
};

struct DerivationCounts {
  int64_t programs = 0;    // distinct derived programs
  int64_t matched = 0;     // ... that matched operators (a program may give a rule found before)
  int64_t candidates = 0;  // distinct rules that passed the checks
  int64_t rejected = 0;    // distinct rules the fingerprint or float64 check refuted
  bool bounded = false;    // a search reached DerivationOptions::max_programs
};

// The candidate rules derived from one source, first derivation of each
// rule kept. Throws ParseError or ShapeError for a bad source, and
// std::invalid_argument naming it for a source with an operator without an
// expression or more than one output.
std::vector<DerivedRule> derive_rules(const DerivationSource& source, const DerivationOptions& options, uint64_t seed,
                                      DerivationCounts& counts);

struct DerivationRunOptions {
  std::string db;
  DerivationOptions search;
  uint64_t seed = 1;
  bool progress = true;
  std::vector<DerivationSource> sources = default_derivation_sources();
};

struct DerivationRunReport {
  int64_t run = 0;
  DerivationCounts counts;
  int64_t inserted = 0;                    // new rules stored
  std::map<std::string, int64_t> by_kind;  // candidates per derivation kind
  double seconds = 0;
  bool interrupted = false;
};

DerivationRunReport generate_derivations(const DerivationRunOptions& options, const std::atomic<bool>& stop);

}  // namespace tgr::gen
