// The options of the pipeline, one row each: what `optimize` takes as
// --NAME (tools/optimize.cpp, through CLI11) and tgr.optimize() as the
// keyword NAME with underscores (python/bindings.cpp). Both read this table
// for the name, the help, the check and the default, and set OptimizeOptions
// through the row; neither holds a list of its own. Adding an option: a row
// of option_table() (option_table.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "pipeline/options.h"

namespace tgr::pipeline {

// A value as it comes from the command line or from Python.
using OptionValue = std::variant<int64_t, uint64_t, double, std::string, bool>;

enum class OptionType { kInt, kUnsigned, kReal, kText, kFlag };  // the alternative of OptionValue each holds

struct OptionCheck {
  enum Kind {
    kNone,
    kAtLeastOne,     // a whole number, 1 or more
    kNotNegative,    // a number, 0 or more
    kPositive,       // a finite number above 0
    kWithin,         // a number in [min, max]
    kSeconds,        // a time limit: above 0, at most util::kMaxSeconds (a year)
    kSecondsOrZero,  // the same, 0 allowed
    kOneOf,          // one of `names`
  };
  Kind kind = kNone;
  double min = 0, max = 0;         // kWithin
  std::vector<std::string> names;  // kOneOf
};

struct OptionRow {
  std::string name;  // the command line's --NAME
  std::string help;
  OptionType type;
  OptionCheck check;
  // The default --help shows, read from options whose data paths are set
  // (the rest as OptimizeOptions{} has them); empty: none shown (a flag, or
  // a default that is the target's, which the help names).
  std::function<OptionValue(const OptimizeOptions&)> default_value;
  std::string excludes;  // the name of a row that may not be given with this one
  bool keyword = true;   // also a keyword argument of tgr.optimize() (else its own parameter, or none)
  // Sets the row's field; the rows given are set in the table's order.
  std::function<void(OptimizeOptions&, const OptionValue&)> set;
  std::string needs{};  // the name of a row that must be given with this one
};

const std::vector<OptionRow>& option_table();
// The row named `name` (its --NAME); throws std::logic_error when none is.
const OptionRow* find_option(const std::string& name);

// The row's Python keyword: its name with '_' for '-' ("node_limit").
std::string keyword_name(const OptionRow& row);

// What is wrong with `value` for `row` in words that follow "NAME=VALUE: "
// ("must be positive"); empty when the value passes the row's check.
std::string check_words(const OptionRow& row, const OptionValue& value);

}  // namespace tgr::pipeline
