// Typed operator parameters: their declarations (ParamSpec, part of an
// operator's table entry) and their values (Params, attached to a node).
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace tgr {

enum class ParamKind {
  kInt,      // one integer in [min, max]
  kInts,     // a list of integers, each in [min, max]; text form "3x3"
  kEnum,     // one of a fixed set of words
  kPadding,  // "same" (output = ceil(input / stride)), "valid" (no padding),
             // or explicit "top x left x bottom x right"
  kFloat,    // one real number in [min_float, max_float] (alpha, epsilon)
};

using ParamValue = std::variant<int64_t, std::vector<int64_t>, std::string, double>;

struct ParamSpec {
  std::string name{};
  ParamKind kind = ParamKind::kInt;
  std::optional<ParamValue> default_value{};  // nullopt: the parameter is required
  int64_t min = INT64_MIN;                  // for kInt, kInts and explicit padding
  int64_t max = INT64_MAX;
  int length = -1;                          // kInts: exact list length, -1 = any
  bool allow_empty = false;                 // kInts: the empty list is legal (a default meaning "derived")
  std::vector<std::string> choices{};         // kEnum
  double min_float = -HUGE_VAL, max_float = HUGE_VAL;  // kFloat (NaN is never legal)
  std::string doc{};
  // The value is a function of the shapes the operator is applied to
  // (split's sizes, reshape's shape, ones' shape, ...): a rule instance at
  // other shapes takes other values, so the optimizer's matcher re-derives
  // it rather than copying it from the rule (optimizer::is_shape_param).
  bool shape_dependent = false;
};

// Text form of a value: 3, 3x3, same, 0.01 (floats in their shortest exact
// form). Values never contain ',', '[' or ']'.
std::string param_value_to_string(const ParamValue& value);

// Parses `text` as a value of `spec` and checks it; throws ParamError.
ParamValue parse_param_value(const ParamSpec& spec, std::string_view text);

// Throws ParamError naming `op_name`, the parameter and the legal range.
void check_param_value(std::string_view op_name, const ParamSpec& spec, const ParamValue& value);

class ParamError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The complete parameter values of one operator application, in the order of
// the operator's ParamSpecs, defaults filled in. Build with OpDef::make_params.
class Params {
 public:
  Params() = default;

  int64_t get_int(std::string_view name) const;
  const std::vector<int64_t>& get_ints(std::string_view name) const;
  const std::string& get_word(std::string_view name) const;  // kEnum or a padding word
  double get_float(std::string_view name) const;
  const ParamValue& get(std::string_view name) const;
  // Replaces an existing entry (used by canonicalisation); the caller keeps
  // the value legal.
  void set(std::string_view name, ParamValue value);

  const std::vector<std::pair<std::string, ParamValue>>& entries() const { return entries_; }
  friend bool operator==(const Params&, const Params&) = default;

 private:
  friend struct OpDef;
  std::vector<std::pair<std::string, ParamValue>> entries_;
};

}  // namespace tgr
