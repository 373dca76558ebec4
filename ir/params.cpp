#include "ir/params.h"

#include <charconv>

namespace tgr {

std::string param_value_to_string(const ParamValue& value) {
  if (auto* i = std::get_if<int64_t>(&value)) return std::to_string(*i);
  if (auto* s = std::get_if<std::string>(&value)) return *s;
  if (auto* d = std::get_if<double>(&value)) {
    char buf[64];
    auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, *d);  // shortest round-trip form
    return std::string(buf, ec == std::errc() ? ptr : buf);
  }
  const auto& list = std::get<std::vector<int64_t>>(value);
  std::string out;
  for (size_t k = 0; k < list.size(); ++k) {
    if (k) out += 'x';
    out += std::to_string(list[k]);
  }
  return out;
}

namespace {

bool parse_int(std::string_view text, int64_t& out) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return !text.empty() && ec == std::errc() && ptr == text.data() + text.size();
}

bool parse_int_list(std::string_view text, std::vector<int64_t>& out) {
  out.clear();
  if (text.empty()) return true;  // the empty list
  size_t pos = 0;
  while (true) {
    size_t end = text.find('x', pos);
    int64_t v;
    if (!parse_int(text.substr(pos, end == std::string_view::npos ? end : end - pos), v)) return false;
    out.push_back(v);
    if (end == std::string_view::npos) return true;
    pos = end + 1;
  }
}

std::string range_text(const ParamSpec& spec) {
  if (spec.min == INT64_MIN && spec.max == INT64_MAX) return "any integer";
  if (spec.max == INT64_MAX) return ">= " + std::to_string(spec.min);
  return "in [" + std::to_string(spec.min) + ", " + std::to_string(spec.max) + "]";
}

}  // namespace

void check_param_value(std::string_view op_name, const ParamSpec& spec, const ParamValue& value) {
  auto fail = [&](const std::string& why) {
    throw ParamError(std::string(op_name) + ": parameter '" + spec.name + "' = " +
                     param_value_to_string(value) + ": " + why);
  };
  auto check_range = [&](int64_t v) {
    if (v < spec.min || v > spec.max) fail("each value must be " + range_text(spec));
  };
  switch (spec.kind) {
    case ParamKind::kInt:
      if (!std::holds_alternative<int64_t>(value)) fail("expected one integer");
      check_range(std::get<int64_t>(value));
      break;
    case ParamKind::kInts: {
      auto* list = std::get_if<std::vector<int64_t>>(&value);
      if (!list) fail("expected integers like 3x3");
      if (list->empty() && !spec.allow_empty) fail("expected at least one integer");
      if (spec.length >= 0 && static_cast<int>(list->size()) != spec.length)
        fail("expected exactly " + std::to_string(spec.length) + " integers");
      for (int64_t v : *list) check_range(v);
      break;
    }
    case ParamKind::kEnum: {
      auto* word = std::get_if<std::string>(&value);
      bool ok = false;
      if (word)
        for (const auto& c : spec.choices) ok = ok || c == *word;
      if (!ok) {
        std::string choices;
        for (const auto& c : spec.choices) choices += (choices.empty() ? "" : "|") + c;
        fail("expected one of " + choices);
      }
      break;
    }
    case ParamKind::kFloat: {
      auto* d = std::get_if<double>(&value);
      if (!d) fail("expected a number");
      if (!(*d >= spec.min_float && *d <= spec.max_float))
        fail("must be in [" + param_value_to_string(spec.min_float) + ", " + param_value_to_string(spec.max_float) + "]");
      break;
    }
    case ParamKind::kPadding:
      if (auto* word = std::get_if<std::string>(&value)) {
        if (*word != "same" && *word != "valid") fail("expected same, valid or TxLxBxR");
      } else if (auto* list = std::get_if<std::vector<int64_t>>(&value)) {
        if (list->size() != 4) fail("explicit padding needs 4 integers: top x left x bottom x right");
        for (int64_t v : *list) check_range(v);
      } else {
        fail("expected same, valid or TxLxBxR");
      }
      break;
  }
}

ParamValue parse_param_value(const ParamSpec& spec, std::string_view text) {
  ParamValue value;
  int64_t i;
  std::vector<int64_t> list;
  switch (spec.kind) {
    case ParamKind::kInt:
      if (!parse_int(text, i)) throw ParamError("parameter '" + spec.name + "': '" + std::string(text) + "' is not an integer");
      value = i;
      break;
    case ParamKind::kInts:
      if (!parse_int_list(text, list))
        throw ParamError("parameter '" + spec.name + "': '" + std::string(text) + "' is not a list like 3x3");
      value = list;
      break;
    case ParamKind::kEnum:
      value = std::string(text);
      break;
    case ParamKind::kFloat: {
      double d = 0;
      auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
      if (text.empty() || ec != std::errc() || ptr != text.data() + text.size())
        throw ParamError("parameter '" + spec.name + "': '" + std::string(text) + "' is not a number");
      value = d;
      break;
    }
    case ParamKind::kPadding:
      if (!text.empty() && parse_int_list(text, list)) value = list;
      else value = std::string(text);
      break;
  }
  return value;
}

const ParamValue& Params::get(std::string_view name) const {
  for (const auto& [key, value] : entries_)
    if (key == name) return value;
  throw ParamError("no parameter named '" + std::string(name) + "'");
}

void Params::set(std::string_view name, ParamValue value) {
  for (auto& [key, v] : entries_)
    if (key == name) {
      v = std::move(value);
      return;
    }
  throw ParamError("no parameter named '" + std::string(name) + "'");
}

int64_t Params::get_int(std::string_view name) const { return std::get<int64_t>(get(name)); }

const std::vector<int64_t>& Params::get_ints(std::string_view name) const {
  return std::get<std::vector<int64_t>>(get(name));
}

double Params::get_float(std::string_view name) const { return std::get<double>(get(name)); }

const std::string& Params::get_word(std::string_view name) const {
  return std::get<std::string>(get(name));
}

}  // namespace tgr
