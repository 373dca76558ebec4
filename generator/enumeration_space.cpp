#include "generator/enumeration_space.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "ir/canonical.h"

namespace tgr::gen {

// The files of spaces/, compiled in (generator/CMakeLists.txt writes this
// function from them): name, text.
std::vector<std::pair<std::string, std::string>> builtin_space_files();

namespace {

using Given = std::vector<std::pair<std::string, ParamValue>>;

std::string trim(std::string_view s) {
  const size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string_view::npos) return "";
  const size_t b = s.find_last_not_of(" \t\r");
  return std::string(s.substr(a, b - a + 1));
}

// Splits on `sep` outside brackets, each piece trimmed.
std::vector<std::string> split_top(std::string_view s, char sep) {
  std::vector<std::string> out;
  int depth = 0;
  size_t from = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || (s[i] == sep && depth == 0)) {
      out.push_back(trim(s.substr(from, i - from)));
      from = i + 1;
    } else if (s[i] == '[' || s[i] == '(') {
      ++depth;
    } else if (s[i] == ']' || s[i] == ')') {
      --depth;
    }
  }
  return out;
}

std::vector<std::string> words(std::string_view s) {
  std::istringstream in{std::string(s)};
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

class SpaceParser {
 public:
  SpaceParser(const std::string& origin, const util::Limits& limits) : origin_(origin), limits_(limits) {}

  Space parse(const std::string& text) {
    Space space;
    space_ = &space;
    space.text = text;
    space.limits = limits_;
    std::istringstream in(text);
    std::string raw;
    while (std::getline(in, raw)) {
      ++line_;
      if (auto hash = raw.find('#'); hash != std::string::npos) raw.erase(hash);
      const std::string line = trim(raw);
      if (line.empty()) continue;
      const size_t gap = line.find_first_of(" \t");
      const std::string keyword = line.substr(0, gap);
      const std::string rest = gap == std::string::npos ? "" : trim(line.substr(gap));
      if (keyword == "space") {
        if (!space.name.empty()) fail("a second 'space' line");
        if (rest.empty() || rest.find_first_of(" \t/") != std::string::npos) fail("'space NAME': one word");
        space.name = rest;
      } else if (keyword == "about") {
        space.about = rest;
      } else if (keyword == "variables-per-kind") {
        space.vars_per_kind = number(rest, 1, 9, "variables-per-kind");
      } else if (keyword == "world") {
        const auto w = words(rest);
        if (w.empty()) fail("'world NAME [needs OP...]'");
        WorldSpec world{w[0], {}, {}, {}};
        if (w.size() > 1) {
          if (w[1] != "needs" || w.size() < 3) fail("'world NAME [needs OP...]'");
          for (size_t k = 2; k < w.size(); ++k) world.needs.push_back(w[k]);
        }
        for (const WorldSpec& other : space.worlds)
          if (other.name == world.name) fail("a second world '" + world.name + "'");
        space.worlds.push_back(std::move(world));
      } else if (keyword == "variable") {
        current().kinds.push_back(variable(rest));
      } else if (keyword == "operator") {
        current().templates.push_back(op_template(rest));
      } else {
        fail("unknown keyword '" + keyword + "' (space, about, variables-per-kind, world, variable, operator)");
      }
    }
    line_ = 0;
    if (space.name.empty()) fail("no 'space NAME' line");
    if (space.worlds.empty()) fail("no world");
    for (const WorldSpec& w : space.worlds) {
      if (w.kinds.empty()) fail("world '" + w.name + "' has no variables");
      for (const std::string& op : w.needs)
        if (!OpTable::instance().find(op)) fail("world '" + w.name + "' needs an unknown operator '" + op + "'");
    }
    return space;
  }

 private:
  [[noreturn]] void fail(const std::string& message) const {
    throw std::invalid_argument(origin_ + (line_ ? ":" + std::to_string(line_) : "") + ": " + message);
  }

  WorldSpec& current() {
    if (space_->worlds.empty()) fail("'variable' and 'operator' lines belong to a 'world'");
    return space_->worlds.back();
  }

  int number(const std::string& text, int lo, int hi, const char* what) const {
    try {
      size_t used = 0;
      const int n = std::stoi(text, &used);
      if (used == text.size() && n >= lo && n <= hi) return n;
    } catch (const std::exception&) {
    }
    fail(std::string(what) + " must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], not '" +
         text + "'");
  }

  Shape shape(const std::string& text) const {
    try {
      return parse_shape(text);
    } catch (const std::exception& e) {
      fail(e.what());
    }
  }

  // A value the enumeration would compute on every graph: within the
  // element limit before anything is allocated.
  void check_elements(const Shape& shape, const std::string& what) const {
    double count = 1;
    for (int64_t d : shape) count *= static_cast<double>(d);
    if (!util::within(count, limits_.max_elements))
      fail(util::element_limit_message(what + " (" + shape_to_string(shape) + ")", count, limits_));
  }

  Role role(const std::string& text, bool same_allowed) const {
    if (text == "any") return Role::kAny;
    if (text == "same" && same_allowed) return Role::kSame;
    if (text == "tensor") return Role::kTensor;
    if (text == "image") return Role::kImage;
    if (text == "kernel") return Role::kKernel;
    if (text == "scalar") return Role::kScalar;
    if (text == "bias") return Role::kBias;
    fail("unknown role '" + text + "' (tensor, image, kernel, scalar, bias, any" + (same_allowed ? ", same)" : ")"));
  }

  // variable KIND SHAPE ROLE alternative SHAPE [at-most N]
  VariableKind variable(const std::string& rest) {
    const auto w = words(rest);
    if (w.size() != 5 && w.size() != 7) fail("'variable KIND SHAPE ROLE alternative SHAPE [at-most N]'");
    VariableKind v;
    v.kind = w[0];
    if (!std::all_of(v.kind.begin(), v.kind.end(), [](char c) { return c >= 'a' && c <= 'z'; }) ||
        variable_kind(v.kind + "0") != v.kind)
      fail("a variable kind is lower-case letters, not '" + v.kind + "'");
    for (const VariableKind& other : current().kinds)
      if (other.kind == v.kind) fail("a second variable kind '" + v.kind + "' in this world");
    v.shape = shape(w[1]);
    check_elements(v.shape, "variable '" + v.kind + "'");
    v.role = role(w[2], false);  // any: used in every role (a kernel also convolved as an image)
    if (w[3] != "alternative") fail("expected 'alternative SHAPE' after the role, not '" + w[3] + "'");
    v.alternative = shape(w[4]);
    check_elements(v.alternative, "the alternative of variable '" + v.kind + "'");
    if (v.alternative.size() != v.shape.size()) fail("the alternative shape of '" + v.kind + "' has another rank");
    if (w.size() == 7) {
      if (w[5] != "at-most") fail("expected 'at-most N', not '" + w[5] + "'");
      v.at_most = number(w[6], 1, 9, "at-most");
    }
    return v;
  }

  // operator NAME[PARAM=VALUE, ...] [(ROLE, ...)] [-> ROLE]
  OpTemplate op_template(const std::string& rest) {
    size_t end = 0;
    while (end < rest.size() && (std::isalnum(static_cast<unsigned char>(rest[end])) || rest[end] == '_')) ++end;
    const std::string name = rest.substr(0, end);
    const OpDef* op = OpTable::instance().find(name);
    if (!op) fail("unknown operator '" + name + "'");
    Given given;
    std::string label = name;
    if (end < rest.size() && rest[end] == '[') {
      const size_t close = rest.find(']', end);
      if (close == std::string::npos) fail("'[' without ']'");
      for (const std::string& item : split_top(rest.substr(end + 1, close - end - 1), ',')) {
        const size_t eq = item.find('=');
        if (eq == std::string::npos) fail("a parameter is NAME=VALUE, not '" + item + "'");
        const std::string key = trim(item.substr(0, eq)), value = trim(item.substr(eq + 1));
        const auto spec =
            std::find_if(op->params.begin(), op->params.end(), [&](const ParamSpec& s) { return s.name == key; });
        if (spec == op->params.end()) fail(name + " has no parameter '" + key + "'");
        try {
          given.emplace_back(key, parse_param_value(*spec, value));
        } catch (const std::exception& e) {
          fail(e.what());
        }
        label += (given.size() == 1 ? "[" : ", ") + key + "=" + param_value_to_string(given.back().second);
      }
      if (!given.empty()) label += "]";
      end = close + 1;
    }
    OpTemplate t;
    t.op = op;
    t.label = label;
    t.arity = op->variadic ? 2 : static_cast<int>(op->inputs.size());  // concat of two
    try {
      t.params = op->make_params(given);
      if (t.arity == 0)  // eye[n=...], ones[shape=...]: a value of the parameters' size
        for (const Shape& out : op->output_shapes(t.params, {})) check_elements(out, label);
    } catch (const std::invalid_argument&) {
      throw;
    } catch (const std::exception& e) {
      fail(e.what());
    }
    std::string tail = trim(rest.substr(end));
    t.arg_roles = {Role::kAny, Role::kSame, Role::kSame};  // by default every argument has the first one's role
    t.output_role = Role::kSame;
    if (!tail.empty() && tail[0] == '(') {
      const size_t close = tail.find(')');
      if (close == std::string::npos) fail("'(' without ')'");
      const auto roles = split_top(tail.substr(1, close - 1), ',');
      if (static_cast<int>(roles.size()) != t.arity)
        fail(name + " takes " + std::to_string(t.arity) + " arguments; " + std::to_string(roles.size()) +
             " roles given");
      t.arg_roles = {Role::kAny, Role::kAny, Role::kAny};
      for (size_t k = 0; k < roles.size(); ++k) t.arg_roles[k] = role(roles[k], k > 0);
      tail = trim(tail.substr(close + 1));
    }
    if (!tail.empty() && tail.rfind("->", 0) == 0) {
      const size_t gap = tail.find_first_of(" \t", tail.find_first_not_of(" \t", 2));
      t.output_role = role(trim(tail.substr(2, gap == std::string::npos ? std::string::npos : gap - 2)), true);
      tail = gap == std::string::npos ? "" : trim(tail.substr(gap));
    }
    if (tail == "broadcasting") {
      if (op->kind != OpKind::kAdd && op->kind != OpKind::kMul) fail("only add and mul take 'broadcasting'");
      t.broadcasting = true;
    } else if (!tail.empty()) {
      fail("unexpected '" + tail + "' (expected '(ROLES)', '-> ROLE' or 'broadcasting')");
    }
    if (t.arity == 0 && t.output_role == Role::kSame)
      fail(name + " takes no arguments: give its output role (-> ROLE)");
    return t;
  }

  std::string origin_;
  util::Limits limits_;
  int line_ = 0;
  Space* space_ = nullptr;
};

}  // namespace

bool OpTemplate::symmetric_roles() const {
  for (int a = 1; a < arity; ++a)
    if (arg_roles[a] != Role::kSame && arg_roles[a] != arg_roles[0]) return false;
  return true;
}

Shape World::alternative_shape(const std::string& kind) const {
  for (const Variable& v : variables)
    if (variable_kind(v.name) == kind) return v.alternative;
  throw std::invalid_argument("no variable kind '" + kind + "' in world '" + name + "'");
}

std::vector<std::string> Space::operators() const {
  std::vector<std::string> out;
  for (const WorldSpec& w : worlds)
    for (const OpTemplate& t : w.templates)
      if (std::find(out.begin(), out.end(), t.op->name) == out.end()) out.push_back(t.op->name);
  return out;
}

Space parse_space(const std::string& text, const std::string& origin, const util::Limits& limits) {
  return SpaceParser(origin, limits).parse(text);
}

std::vector<std::string> builtin_space_names() {
  std::vector<std::string> out;
  for (const auto& [name, text] : builtin_space_files()) out.push_back(name);
  return out;
}

Space load_space(const std::string& name_or_file, const util::Limits& limits) {
  for (const auto& [name, text] : builtin_space_files())
    if (name == name_or_file) return parse_space(text, "spaces/" + name + ".space", limits);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(name_or_file, ec)) {
    std::string names;
    for (const auto& n : builtin_space_names()) names += (names.empty() ? "" : ", ") + n;
    throw std::invalid_argument("--space: '" + name_or_file + "' is neither a built-in space (" + names +
                                ") nor a file");
  }
  const auto size = std::filesystem::file_size(name_or_file, ec);
  if (!ec && !util::within(static_cast<double>(size), limits.max_bytes))
    throw std::invalid_argument("--space: '" + name_or_file +
                                "': " + util::byte_limit_message("the file", static_cast<double>(size), limits));
  std::ifstream in(name_or_file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in && !in.eof()) throw std::invalid_argument("--space: cannot read '" + name_or_file + "'");
  return parse_space(text.str(), name_or_file, limits);
}

std::vector<std::string> default_operator_set() { return load_space("default").operators(); }

std::vector<World> build_worlds(const SpaceOptions& options) {
  Space loaded;
  if (!options.parsed) loaded = load_space(options.space);
  const Space& space = options.parsed ? *options.parsed : loaded;
  const std::vector<std::string> all = space.operators();
  for (const auto& n : options.ops) {
    if (!OpTable::instance().find(n)) throw std::invalid_argument("--ops: unknown operator '" + n + "'");
    if (std::find(all.begin(), all.end(), n) == all.end()) {
      std::string can;
      for (const auto& op : all) can += (can.empty() ? "" : ", ") + op;
      throw std::invalid_argument("--ops: the space '" + space.name + "' does not enumerate '" + n +
                                  "' (it can: " + can + ")");
    }
  }
  const int n = options.vars_per_kind ? options.vars_per_kind : space.vars_per_kind;
  if (n < 1 || n > 9) throw std::invalid_argument("--vars-per-kind must be in [1, 9]");
  const std::set<std::string> selected = options.ops.empty()
                                             ? std::set<std::string>(all.begin(), all.end())
                                             : std::set<std::string>(options.ops.begin(), options.ops.end());

  std::vector<World> worlds;
  for (const WorldSpec& spec : space.worlds) {
    // A world that needs an operator not selected is left out: without it,
    // its other operators would only repeat another world's rules.
    if (!std::all_of(spec.needs.begin(), spec.needs.end(), [&](const std::string& op) { return selected.count(op); }))
      continue;
    World w{spec.name, {}, {}, space.limits.max_elements};
    double bytes = 0;  // of the variables' values in the prime field (8 bytes an element), both sizes
    for (const VariableKind& k : spec.kinds)
      for (int i = 0; i < std::min(n, k.at_most); ++i) {
        w.variables.push_back({k.kind + std::to_string(i), k.shape, k.role, k.alternative});
        for (const Shape* s : {&k.shape, &k.alternative}) {
          double count = 1;
          for (int64_t d : *s) count *= static_cast<double>(d);
          bytes += 8 * count;
        }
      }
    if (!util::within(bytes, space.limits.max_bytes))
      throw std::invalid_argument(space.name + ": world '" + spec.name +
                                  "': " + util::byte_limit_message("the variables' values", bytes, space.limits));
    for (const OpTemplate& t : spec.templates)
      if (selected.count(t.op->name)) w.templates.push_back(t);
    if (!w.templates.empty()) worlds.push_back(std::move(w));
  }
  return worlds;
}

}  // namespace tgr::gen
