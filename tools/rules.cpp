// `rules`: inspect and query the rules database.
//
//   rules --db F stats                                  counts by status, kind, size; the runs
//   rules --db F list [--status S] [--format text|json]
//   rules --db F show ID                                every field of one rule
//   rules --db F show ID --dot                          the rule's two sides in Graphviz dot (| dot -Tsvg)
//   rules --db F lookup "SRC => DST"                    by canonical text: exit 0 found, 1 not, 2 syntax error
//   rules --db F import FILE...                         insert the rules of rule files as candidates
//   rules --db F check FILE... [--status S]             every rule of the files is in the database (with status S)
//
// Rule files (rules/default.rules): one rule a line, "SRC => DST | SHAPES"
// (SHAPES: the variables' shapes, as in the variables column), '#' starts a
// comment. Only `import` creates a missing database; the others report it.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>

#include "ir/canonical.h"
#include "ir/graph_dot.h"
#include "ir/text.h"
#include "rules_db/rules_db.h"
#include "tools/cli_common.h"

namespace {

using tgr::rules_db::RuleRecord;
using tgr::rules_db::RulesDb;

// Shortest text that reads back as `v` (for `show`).
std::string number_text(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

// Every column of a rule; absent optional columns are null.
nlohmann::ordered_json rule_json(const RuleRecord& r) {
  auto optional = [](const std::optional<std::string>& v) { return v ? nlohmann::ordered_json(*v) : nullptr; };
  return {
      {"id", r.id},
      {"canonical", r.canonical},
      {"source", r.source},
      {"target", r.target},
      {"variables", r.variables},
      {"constraints", r.constraints},
      {"source_ops", r.source_ops},
      {"target_ops", r.target_ops},
      {"operators", r.operators},
      {"kind", r.kind},
      {"status", r.status},
      {"proof_ms", r.proof_ms ? nlohmann::ordered_json(*r.proof_ms) : nullptr},  // not finite: null
      {"axioms", optional(r.axioms)},
      {"counterexample", optional(r.counterexample)},
      {"region_map", optional(r.region_map)},
      {"correction", optional(r.correction)},
      {"note", optional(r.note)},
      {"generator_run", r.generator_run ? nlohmann::ordered_json(r.generator_run) : nullptr},
      {"created_at", r.created_at},
  };
}

int cmd_stats(const RulesDb& db) {
  std::printf("database %s (schema version %d): %lld rules\n", db.path().c_str(), db.schema_version(),
              static_cast<long long>(db.count_rules()));
  std::printf("by status:\n");
  for (const auto& [status, n] : db.counts_by_status()) std::printf("  %-10s %8lld\n", status.c_str(), static_cast<long long>(n));
  std::printf("by kind:\n");
  for (const auto& [kind, n] : db.counts_by_kind()) std::printf("  %-10s %8lld\n", kind.c_str(), static_cast<long long>(n));
  std::printf("by size (source ops -> target ops):\n");
  for (const auto& [src, dst, n] : db.counts_by_size()) {
    const std::string size = std::to_string(src) + " -> " + std::to_string(dst);
    std::printf("  %-10s %8lld\n", size.c_str(), static_cast<long long>(n));
  }
  const auto runs = db.list_runs();
  std::printf("runs: %zu\n", runs.size());
  if (!runs.empty()) std::printf("  %-6s %-10s %-12s %8s  %s\n", "id", "kind", "status", "inserted", "started");
  for (const auto& r : runs)
    std::printf("  %-6lld %-10s %-12s %8lld  %s\n", static_cast<long long>(r.run.id), r.run.kind.c_str(),
                r.run.status.c_str(), static_cast<long long>(r.rules_inserted), r.run.started_at.c_str());
  return 0;
}

int cmd_list(const RulesDb& db, const std::optional<std::string>& status, const std::string& format) {
  const auto rules = db.list_rules(status);
  if (format == "json") {
    // One rule a line, as before the JSON library (grep-able). Text from a
    // database is not checked for UTF-8 on the way in: a bad byte is shown
    // as U+FFFD rather than making the listing fail.
    std::string out = "[";
    for (size_t i = 0; i < rules.size(); ++i)
      out += (i ? ",\n " : "\n ") +
             rule_json(rules[i]).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    out += rules.empty() ? "]\n" : "\n]\n";
    std::fputs(out.c_str(), stdout);
    return 0;
  }
  for (const auto& r : rules)
    std::printf("%lld  %-9s  %s\n", static_cast<long long>(r.id), r.status.c_str(), r.rule_text().c_str());
  return 0;
}

int cmd_show(const RulesDb& db, int64_t id, bool dot) {
  const auto rule = db.get_rule(id);
  if (!rule) throw std::runtime_error("no rule with id " + std::to_string(id) + " in '" + db.path() + "'");
  const RuleRecord& r = *rule;
  if (dot) {  // both sides built at the rule's own shapes
    tgr::DTypeMap dtypes;
    const tgr::ShapeMap shapes = tgr::parse_shape_map(r.variables, &dtypes);
    std::fputs(tgr::rule_to_dot(tgr::build_rule(r.rule_text(), shapes, dtypes),
                                "rule " + std::to_string(r.id) + ": " + r.rule_text())
                   .c_str(),
               stdout);
    return 0;
  }
  // One field per line: line breaks inside a value are shown as \n.
  auto line = [](const char* key, const std::string& value) {
    std::string v;
    for (const char c : value) v += c == '\n' ? std::string("\\n") : c == '\r' ? std::string("\\r") : std::string(1, c);
    std::printf("%-15s %s\n", key, v.c_str());
  };
  auto opt = [&line](const char* key, const std::optional<std::string>& v) { line(key, v ? *v : "(none)"); };
  line("id:", std::to_string(r.id));
  line("rule:", r.rule_text());
  line("canonical:", r.canonical);
  line("source:", r.source);
  line("target:", r.target);
  line("variables:", r.variables);
  line("constraints:", r.constraints);
  line("source_ops:", std::to_string(r.source_ops));
  line("target_ops:", std::to_string(r.target_ops));
  line("operators:", r.operators);
  line("kind:", r.kind);
  line("status:", r.status);
  line("proof_ms:", r.proof_ms ? number_text(*r.proof_ms) : "(none)");
  opt("axioms:", r.axioms);
  opt("counterexample:", r.counterexample);
  opt("region_map:", r.region_map);
  opt("correction:", r.correction);
  opt("note:", r.note);
  line("generator_run:", r.generator_run ? std::to_string(r.generator_run) : "(none)");
  line("created_at:", r.created_at);
  return 0;
}

int cmd_lookup(const RulesDb& db, const std::string& text) {
  std::string canonical;
  try {
    canonical = tgr::canonical_rule_text(text);
  } catch (const tgr::ParseError& e) {
    std::fprintf(stderr, "rules: error: %s\n", e.what());
    return 2;
  }
  const auto rule = db.find_by_canonical(canonical);
  if (!rule) {
    std::printf("not found (canonical form: %s)\n", canonical.c_str());
    return 1;
  }
  std::printf("%lld %s %s\n", static_cast<long long>(rule->id), rule->status.c_str(), rule->canonical.c_str());
  return 0;
}

// One rule of a rule file.
struct RuleLine {
  std::string where;  // FILE:LINE
  std::string text, variables;
};

std::vector<RuleLine> read_rule_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read the rule file '" + path + "'");
  std::vector<RuleLine> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    RuleLine r;
    r.where = path;
    r.where += ":";
    r.where += std::to_string(n);
    const auto bar = line.find('|');
    r.text = line.substr(0, bar);
    if (bar != std::string::npos) r.variables = line.substr(bar + 1);
    auto trim = [](std::string& t) {
      t.erase(0, t.find_first_not_of(" \t\r"));
      t.erase(t.find_last_not_of(" \t\r") + 1);
    };
    trim(r.text);
    trim(r.variables);
    out.push_back(std::move(r));
  }
  return out;
}

RuleRecord record_of(const RuleLine& line) {
  try {
    tgr::parse_shape_map(line.variables);  // checks the shapes' syntax
    return tgr::rules_db::rule_record_from_text(line.text, line.variables);
  } catch (const std::exception& e) {
    throw std::runtime_error(line.where + ": " + e.what());
  }
}

// Every file is read and parsed before the database is opened (or
// created): a bad line leaves no trace.
std::vector<RuleRecord> read_records(const std::vector<std::string>& files) {
  std::vector<RuleRecord> records;
  for (const auto& f : files)
    for (const auto& line : read_rule_file(f)) records.push_back(record_of(line));
  return records;
}

int cmd_import(RulesDb& db, const std::vector<RuleRecord>& records) {
  const int inserted = db.insert_rules(records);
  std::printf("%zu rules read, %d new, %zu already in the database\n", records.size(), inserted,
              records.size() - static_cast<size_t>(inserted));
  return 0;
}

int cmd_check(const RulesDb& db, const std::vector<std::string>& files, const std::optional<std::string>& status) {
  int missing = 0, total = 0;
  for (const auto& f : files)
    for (const auto& line : read_rule_file(f)) {
      ++total;
      const auto rule = db.find_by_canonical(record_of(line).canonical);
      if (!rule) {
        std::printf("%s: not found: %s\n", line.where.c_str(), line.text.c_str());
        ++missing;
      } else if (status && rule->status != *status) {
        std::printf("%s: %s, not %s: %s\n", line.where.c_str(), rule->status.c_str(), status->c_str(), line.text.c_str());
        ++missing;
      }
    }
  std::printf("%d of %d rules found%s%s\n", total - missing, total, status ? " with status " : "",
              status ? status->c_str() : "");
  return missing ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rules: inspect and query the rules database"};
  std::string db_path;
  app.add_option("--db", db_path, "the rules database (an SQLite file; never created here)")->required();
  app.require_subcommand(1);

  auto* stats = app.add_subcommand("stats", "rules by status, kind and size; the runs");
  auto* list = app.add_subcommand("list", "one line per rule: ID  STATUS  SOURCE => TARGET");
  std::optional<std::string> status;
  std::string format = "text";
  list->add_option("--status", status, "only rules of this status")
      ->check(CLI::IsMember({"candidate", "proved", "refuted", "unknown", "partial"}));
  list->add_option("--format", format, "text or json (every column)")->check(CLI::IsMember({"text", "json"}));
  auto* show = app.add_subcommand("show", "every field of one rule");
  int64_t id = 0;
  show->add_option("id", id, "rule id")->required();
  bool dot = false;
  show->add_flag("--dot", dot, "print the rule's two sides as a Graphviz graph (render: | dot -Tsvg)");
  auto* lookup = app.add_subcommand("lookup", "find a rule by its canonical text (exit 0 found, 1 not, 2 bad text)");
  std::string text;
  lookup->add_option("rule", text, "\"SRC => DST\" in the text form")->required();

  auto* import = app.add_subcommand("import", "insert the rules of rule files (SRC => DST | SHAPES) as candidates");
  std::vector<std::string> files;
  import->add_option("files", files, "rule files")->required()->check(CLI::ExistingFile);
  auto* check = app.add_subcommand("check", "exit 0 when every rule of the files is in the database");
  check->add_option("files", files, "rule files")->required()->check(CLI::ExistingFile);
  check->add_option("--status", status, "and has this status")
      ->check(CLI::IsMember({"candidate", "proved", "refuted", "unknown", "partial"}));

  CLI11_PARSE(app, argc, argv);

  return tgr::cli::guarded("rules", [&]() -> int {
    if (*import) {
      const std::vector<RuleRecord> records = read_records(files);
      RulesDb db = RulesDb::open(db_path, /*create=*/true);
      return cmd_import(db, records);
    }
    const RulesDb db = RulesDb::open_read_only(db_path);  // works in a read-only folder
    if (*check) return cmd_check(db, files, status);
    if (*stats) return cmd_stats(db);
    if (*list) return cmd_list(db, status, format);
    if (*show) return cmd_show(db, id, dot);
    if (*lookup) return cmd_lookup(db, text);
    return 2;
  });
}
