// `rules`: inspect and query the rules database.
//
//   rules --db F stats                                  counts by status, kind, size; the runs
//   rules --db F list [--status S] [--operator OP] [--axiom A] [--format text|json|rules]
//   rules --db F show ID                                every field of one rule
//   rules --db F show ID --dot                          the rule's two sides in Graphviz dot (| dot -Tsvg)
//   rules --db F lookup "SRC => DST" [--shapes S]       by canonical text, else whether stored rules imply it:
//                                                       exit 0 stored or implied, 1 neither, 2 syntax error
//   rules --db F unknowns [--examples N]                why the prover left rules unknown, classified
//   rules --db F import FILE...                         insert the rules of rule files as candidates
//   rules --db F check FILE... [--status S]             every rule of the files is in the database or implied
//                                                       by rules in it (with status S)
//   rules --db F check FILE... --derive [LIMITS]        ... or derived from its proved rules by a chain of them
//   rules --db F derive "SRC => DST | SHAPES" [LIMITS]  whether the database's proved rules derive the rule (a
//                                                       chain of instances proved at its shapes; saturation/
//                                                       derive.h); prints the chain: exit 0 derived, 1 not, 2 usage
//                                                       LIMITS: --iterations N --node-limit N --time-limit S
//   rules --db F import-costs --device D FILE...        measured operator costs (SIGNATURE<TAB>MS lines) into op_costs
//   rules --db F costs --device D                       the op_costs of a device, as such lines
//   rules diff A B                                      rules only in A, only in B, with another status
//   rules merge A B -o C                                a new database with the rules of both
//
// --db may come before or after the subcommand.
//
// Rule files (rules/default.rules): one rule a line, "SRC => DST | SHAPES"
// (SHAPES: the variables' shapes, as in the variables column), '#' starts a
// comment. Cost files (rules/onnxruntime_cpu.costs, tools/calibrate_ort.py):
// one operator signature (ir/op_signature.h), a tab and milliseconds a line.
// Only `import` and `import-costs` create a missing database; the others
// report it.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <string>

#include "generator/implication.h"
#include "ir/canonical.h"
#include "ir/graph_dot.h"
#include "ir/text.h"
#include "optimizer/instance.h"
#include "optimizer/rule_set.h"
#include "rules_db/rule_json.h"
#include "rules_db/rules_db.h"
#include "saturation/derive.h"
#include "tools/cli_app.h"
#include "tools/cli_common.h"
#include "tools/data_paths.h"
#include "tools/rule_sets.h"
#include "verifier/axioms.h"
#include "verifier/prover.h"

namespace {

using tgr::rules_db::rule_json;
using tgr::rules_db::RuleRecord;
using tgr::rules_db::RulesDb;

// Shortest text that reads back as `v` (for `show`).
std::string number_text(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
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
  if (!runs.empty())
    std::printf("  %-6s %-10s %-12s %8s  %-12s %-24s  %s\n", "id", "kind", "status", "inserted", "space", "started",
                "version");
  for (const auto& r : runs) {
    const std::string space = r.run.space_name();  // generate runs: the search space
    std::printf("  %-6lld %-10s %-12s %8lld  %-12s %-24s  %s\n", static_cast<long long>(r.run.id), r.run.kind.c_str(),
                r.run.status.c_str(), static_cast<long long>(r.rules_inserted), space.empty() ? "-" : space.c_str(),
                r.run.started_at.c_str(), r.run.tool_version.empty() ? "-" : r.run.tool_version.c_str());
  }
  return 0;
}

int cmd_list(const RulesDb& db, const std::optional<std::string>& status, const tgr::cli::RuleFilter& filter,
             const std::string& format) {
  std::vector<RuleRecord> rules = db.list_rules(status);
  std::erase_if(rules, [&](const RuleRecord& r) { return !filter.keeps(r); });
  if (format == "rules") {
    std::printf("# %zu rules of %s (rules list --format rules; rules import reads it back)\n", rules.size(),
                db.path().c_str());
    for (const auto& r : rules) std::printf("%s\n", tgr::cli::rule_file_line(r).c_str());
    return 0;
  }
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

// The stored rules as an implication index (generator/implication.h), built
// on first use: refuted rules and partial ones imply nothing.
class StoredRules {
 public:
  // `only`: index the rules of this status alone.
  explicit StoredRules(const RulesDb& db, std::optional<std::string> only = std::nullopt)
      : db_(db), only_(std::move(only)) {}

  // How stored rules imply the rule `text` (any spelling) whose variables
  // have `shapes` (by the text's names; empty: from the variable kinds'
  // shapes in the database).
  std::optional<tgr::Implication> explain(const std::string& text, const tgr::ShapeMap& shapes) {
    if (!index_) load();
    tgr::ShapeMap by_name = shapes;
    if (by_name.empty()) {
      auto from_kinds = tgr::shapes_from_kinds(text, by_kind_);
      if (!from_kinds) return std::nullopt;  // a kind the database has no single shape for
      by_name = std::move(*from_kinds);
    }
    return index_->explain(text, by_name);
  }

  const RuleRecord& rule(int64_t id) { return rules_.at(id); }

 private:
  void load() {
    index_.emplace();
    for (RuleRecord& r : db_.list_rules()) {
      if (r.status == "refuted" || r.kind != "full" || (only_ && r.status != *only_)) continue;
      index_->add(r.id, r.canonical, r.variables);
      rules_.emplace(r.id, std::move(r));
    }
    by_kind_ = index_->shapes_by_kind();
  }

  const RulesDb& db_;
  std::optional<std::string> only_;
  std::optional<tgr::ImplicationIndex> index_;
  std::map<int64_t, RuleRecord> rules_;
  tgr::ShapeMap by_kind_;
};

// "(by #3, #9; transitivity)", with the substitution when there is one.
std::string implication_text(const tgr::Implication& how) {
  std::string out = "(by ";
  for (size_t i = 0; i < how.by.size(); ++i) out += (i ? ", #" : "#") + std::to_string(how.by[i]);
  out += "; " + how.pass;
  if (!how.detail.empty()) out += ": " + how.detail;
  return out + ")";
}

int cmd_lookup(const RulesDb& db, const std::string& text, const std::string& shapes_text) {
  std::string canonical;
  tgr::ShapeMap shapes;
  try {
    canonical = tgr::canonical_rule_text(text);
  } catch (const tgr::ParseError& e) {
    std::fprintf(stderr, "rules: error: %s\n", e.what());
    return 2;
  }
  try {
    shapes = tgr::parse_shape_map(shapes_text);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rules: error: --shapes: %s\n", e.what());
    return 2;
  }
  const auto rule = db.find_by_canonical(canonical);
  if (rule) {
    std::printf("%lld %s %s\n", static_cast<long long>(rule->id), rule->status.c_str(), rule->canonical.c_str());
    return 0;
  }
  StoredRules stored(db);
  const auto how = stored.explain(text, shapes);
  if (!how) {
    std::printf("not found (canonical form: %s)\n", canonical.c_str());
    return 1;
  }
  std::printf("implied: %s %s\n", canonical.c_str(), implication_text(*how).c_str());
  for (int64_t id : how->by) {
    const RuleRecord& r = stored.rule(id);
    std::printf("  %lld %s %s\n", static_cast<long long>(id), r.status.c_str(), r.canonical.c_str());
  }
  return 0;
}

// Why rules are unknown: the prover's outcome (its note: no common form, Z3
// gave up, the search budget), then whether proved rules imply the rule
// (the prover missed a consequence of what it proved), whether another
// unknown rule does (the same missing fact), and for the rest what they
// involve: constant tensors, whose values need facts of their own; pieces of
// a split concatenated in another order (permutations); convolutions of
// concatenated channels (grouped); scalar arithmetic; or else their
// operators. A triage for writing axioms (by text patterns), not a proof.
int cmd_unknowns(const RulesDb& db, int examples) {
  const std::vector<RuleRecord> unknown = db.list_rules(std::string("unknown"));
  std::printf("unknown rules: %zu\n", unknown.size());
  if (unknown.empty()) return 0;
  std::map<std::string, int64_t> outcome;
  for (const RuleRecord& r : unknown) {
    const std::string note = r.note.value_or("(no note)");
    ++outcome[note.substr(0, std::min(note.find(" ("), note.find(':')))];
  }
  std::printf("by the prover's outcome:\n");
  for (const auto& [why, n] : outcome) std::printf("  %8lld  %s\n", static_cast<long long>(n), why.c_str());

  StoredRules proved(db, "proved"), unproved(db, "unknown");
  struct Family {
    int64_t n = 0;
    std::vector<const RuleRecord*> examples;
  };
  std::map<std::string, Family> families;
  auto count = [&](const std::string& family, const RuleRecord& r) {
    Family& f = families[family];
    ++f.n;
    if (static_cast<int>(f.examples.size()) < examples) f.examples.push_back(&r);
  };
  for (const RuleRecord& r : unknown) {
    const tgr::ShapeMap shapes = tgr::parse_shape_map(r.variables);
    if (const auto how = proved.explain(r.canonical, shapes)) {
      count("1 implied by proved rules (" + how->pass + ")", r);
    } else if (unproved.explain(r.canonical, shapes)) {
      count("2 an instance of another unknown rule (the same missing fact)", r);
    } else {
      std::string constants;
      for (const char* op : {"ones", "eye", "conv_identity", "pool_kernel"})
        if (("," + r.operators + ",").find("," + std::string(op) + ",") != std::string::npos)
          constants += (constants.empty() ? "" : ",") + std::string(op);
      const std::string& c = r.canonical;
      std::string family = "7 operators " + r.operators;
      if (!constants.empty()) family = "3 constant tensors " + constants + ": facts about their values";
      else if (c.find(").1, split[") != std::string::npos)
        family = "4 pieces of a split put back in another order: facts about permutations";
      else if (c.find("conv2d(concat[axis=1](") != std::string::npos ||
               c.find("conv2d[act=relu](concat[axis=1](") != std::string::npos)
        family = "5 convolution of concatenated channels: grouped convolution";
      else if (r.variables.find_first_not_of("s0123456789=,scalar") == std::string::npos)
        family = "6 scalar arithmetic beyond the search";
      count(family, r);
    }
  }
  std::vector<std::pair<std::string, Family>> sorted(families.begin(), families.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.first[0] != b.first[0] ? a.first[0] < b.first[0] : a.second.n > b.second.n;
  });
  std::printf("by what they need:\n");
  for (const auto& [family, f] : sorted) {
    std::printf("  %8lld  %s\n", static_cast<long long>(f.n), family.c_str() + 2);
    for (const RuleRecord* r : f.examples)
      std::printf("              #%lld %s\n", static_cast<long long>(r->id), r->canonical.c_str());
  }
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
  // getline stops at a read error as at the end: the rules after it would be lost silently.
  if (in.bad()) throw std::runtime_error("read error in the rule file '" + path + "'");
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

// The database's proved rules and a prover for their instances, loaded on
// first use: what `derive` and `check --derive` search with.
class Deriver {
 public:
  Deriver(std::string db_path, std::string specs_dir, tgr::saturation::DeriveOptions options)
      : db_path_(std::move(db_path)), specs_dir_(std::move(specs_dir)), options_(options) {}

  tgr::saturation::Derivation derive(const RuleLine& line) {
    if (!instances_) {
      rules_ = tgr::optimizer::load_rules(db_path_);
      prover_.emplace(tgr::axioms::load_axioms(specs_dir_));
      tgr::verifier::ProofOptions proof;
      proof.refute_trials = 0;  // as optimize: a failed proof is enough to skip an instance
      instances_.emplace(*prover_, proof);
    }
    tgr::Rule query;
    try {
      tgr::DTypeMap dtypes;
      const tgr::ShapeMap shapes = tgr::parse_shape_map(line.variables, &dtypes);
      query = tgr::build_rule(line.text, shapes, dtypes);
    } catch (const std::exception& e) {
      throw std::runtime_error(line.where + ": " + e.what());
    }
    return tgr::saturation::derive_rule(query, rules_, *instances_, options_);
  }

 private:
  std::string db_path_, specs_dir_;
  tgr::saturation::DeriveOptions options_;
  std::vector<tgr::optimizer::DirectedRule> rules_;
  std::optional<tgr::verifier::Prover> prover_;
  std::optional<tgr::optimizer::InstanceProver> instances_;
};

// The chain of a derivation, one application a line, each line starting with `indent`.
void print_chain(const tgr::saturation::Derivation& d, const char* indent) {
  std::printf("%schain of %zu rule application%s (%d iterations, %zu e-nodes, %.2f s)%s:\n", indent, d.chain.size(),
              d.chain.size() == 1 ? "" : "s", d.stats.iterations, d.enodes, d.seconds,
              d.confirmed
                  ? ""
                  : "; these rules alone did not derive it again: the chain passes through forms other rules added");
  for (size_t i = 0; i < d.chain.size(); ++i) {
    const tgr::saturation::ChainStep& s = d.chain[i];
    std::printf("%s  %zu. #%lld%s %s\n%s       at %s\n", indent, i + 1, static_cast<long long>(s.rule_id),
                s.reversed ? " (right to left)" : "", s.rule.c_str(), indent, s.instance.c_str());
  }
}

// `derive`: exit 0 derived, 1 not, 2 a rule that does not parse.
int cmd_derive(Deriver& deriver, const std::string& text) {
  RuleLine line;
  line.where = "the rule";
  const auto bar = text.find('|');
  line.text = text.substr(0, bar);
  if (bar != std::string::npos) line.variables = text.substr(bar + 1);
  for (std::string* t : {&line.text, &line.variables}) {
    t->erase(0, t->find_first_not_of(" \t"));
    t->erase(t->find_last_not_of(" \t") + 1);
  }
  if (line.variables.find_first_not_of(" \t") == std::string::npos)
    throw tgr::cli::UsageError("the rule needs its variables' shapes: \"SRC => DST | x0=2x4,...\"");
  try {  // what does not parse or type-check at its shapes is a usage error
    tgr::canonical_rule_text(line.text);
    tgr::DTypeMap dtypes;
    const tgr::ShapeMap shapes = tgr::parse_shape_map(line.variables, &dtypes);
    tgr::build_rule(line.text, shapes, dtypes);
  } catch (const std::exception& e) {
    throw tgr::cli::UsageError(e.what());
  }
  const tgr::saturation::Derivation d = deriver.derive(line);
  if (!d.derived) {
    std::printf("not derived: %s (%s)\n", line.text.c_str(), tgr::saturation::not_derived_reason(d).c_str());
    return 1;
  }
  std::printf("derived: %s\n", line.text.c_str());
  print_chain(d, "  ");
  return 0;
}

// Each rule of the files: stored (silent), implied by stored rules
// ("implied: RULE (by #a, #b; PASS)"), or neither ("not found: RULE"). With
// a status, a stored rule must have it, and so must the rules implying one.
// With a `deriver`, a rule neither stored nor implied may be derived by a
// chain of proved rules ("derived: RULE" and the chain).
int cmd_check(const RulesDb& db, const std::vector<std::string>& files, const std::optional<std::string>& status,
              Deriver* deriver) {
  StoredRules stored_rules(db);
  int stored = 0, implied = 0, derived = 0, missing = 0, total = 0;
  for (const auto& f : files)
    for (const auto& line : read_rule_file(f)) {
      ++total;
      const RuleRecord record = record_of(line);
      const auto rule = db.find_by_canonical(record.canonical);
      if (rule) {
        if (status && rule->status != *status) {
          std::printf("%s: %s, not %s: %s\n", line.where.c_str(), rule->status.c_str(), status->c_str(),
                      line.text.c_str());
          ++missing;
        } else {
          ++stored;
        }
        continue;
      }
      const auto how = stored_rules.explain(line.text, tgr::parse_shape_map(line.variables));
      if (!how && deriver) {
        const tgr::saturation::Derivation d = deriver->derive(line);
        if (d.derived) {
          std::printf("%s: derived: %s\n", line.where.c_str(), line.text.c_str());
          print_chain(d, "    ");
          ++derived;
        } else {
          std::printf("%s: not found: %s (%s)\n", line.where.c_str(), line.text.c_str(),
                      tgr::saturation::not_derived_reason(d).c_str());
          ++missing;
        }
        std::fflush(stdout);
        continue;
      }
      if (!how) {
        std::printf("%s: not found: %s\n", line.where.c_str(), line.text.c_str());
        ++missing;
        continue;
      }
      std::string wrong;  // implying rules of another status
      for (int64_t id : how->by)
        if (status && stored_rules.rule(id).status != *status)
          wrong += (wrong.empty() ? "#" : ", #") + std::to_string(id) + " " + stored_rules.rule(id).status;
      if (!wrong.empty()) {
        std::printf("%s: implied by rules not %s (%s): %s\n", line.where.c_str(), status->c_str(), wrong.c_str(),
                    line.text.c_str());
        ++missing;
      } else {
        std::printf("%s: implied: %s %s\n", line.where.c_str(), line.text.c_str(), implication_text(*how).c_str());
        ++implied;
      }
    }
  if (deriver)
    std::printf("%d of %d rules found%s%s: %d stored, %d implied, %d derived, %d not found\n",
                stored + implied + derived, total, status ? " with status " : "", status ? status->c_str() : "", stored,
                implied, derived, missing);
  else
    std::printf("%d of %d rules found%s%s: %d stored, %d implied, %d not found\n", stored + implied, total,
                status ? " with status " : "", status ? status->c_str() : "", stored, implied, missing);
  return missing ? 1 : 0;
}

int cmd_diff(const std::string& a_path, const std::string& b_path) {
  const std::vector<RuleRecord> a = RulesDb::open_read_only(a_path).list_rules();
  const std::vector<RuleRecord> b = RulesDb::open_read_only(b_path).list_rules();
  const tgr::cli::RuleSetDiff d = tgr::cli::diff_rules(a, b);
  for (const auto& r : d.only_a)
    std::printf("< %lld  %-9s  %s\n", (long long)r.id, r.status.c_str(), r.rule_text().c_str());
  for (const auto& r : d.only_b)
    std::printf("> %lld  %-9s  %s\n", (long long)r.id, r.status.c_str(), r.rule_text().c_str());
  for (const auto& [ra, rb] : d.other_status)
    std::printf("~ %lld/%lld  %s -> %s  %s\n", (long long)ra.id, (long long)rb.id, ra.status.c_str(), rb.status.c_str(),
                ra.rule_text().c_str());
  std::printf("%zu rules only in %s, %zu only in %s, %zu with another status, %zu the same\n", d.only_a.size(),
              a_path.c_str(), d.only_b.size(), b_path.c_str(), d.other_status.size(), d.same);
  return d.differ() ? 1 : 0;
}

int cmd_merge(const std::string& a_path, const std::string& b_path, const std::string& out_path) {
  tgr::cli::refuse_same_files({{"A", a_path}, {"B", b_path}, {"-o", out_path, true}});
  std::error_code ec;
  if (out_path == "-") throw tgr::cli::UsageError("-o -: a database cannot be written to stdout");
  if (std::filesystem::exists(out_path, ec))
    throw tgr::cli::UsageError("-o '" + out_path + "' exists: merge writes a new database (refusing to change it)");
  const RulesDb a = RulesDb::open_read_only(a_path), b = RulesDb::open_read_only(b_path);
  const std::vector<RuleRecord> rules =
      tgr::cli::merge_rules(a.list_rules(), b.list_rules());  // checked before C exists
  // Built under a temporary name in C's folder and given C's name at the
  // end (a hard link, which fails rather than replace a C made meanwhile):
  // an interrupted merge leaves no half database under C's name.
  const std::string tmp = out_path + ".tmp" + std::to_string(::getpid());
  auto remove_tmp = [&] {
    std::error_code ignored;
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(tmp + suffix, ignored);
  };
  int inserted = 0;
  try {
    RulesDb out = RulesDb::open(tmp, /*create=*/true);
    const nlohmann::json settings = {{"sources", {a_path, b_path}}};
    const int64_t run = out.begin_run("merge", settings.dump());
    inserted = out.insert_rules(rules);
    out.finish_run(run, "finished", nlohmann::json{{"rules", inserted}}.dump());
  } catch (...) {  // closed first (the database's destructor), then removed
    remove_tmp();
    throw;
  }
  if (::link(tmp.c_str(), out_path.c_str()) != 0) {
    const int error = errno;
    remove_tmp();
    throw std::runtime_error("cannot write '" + out_path + "': " + std::strerror(error));
  }
  remove_tmp();
  std::printf("%d rules from %s (%lld) and %s (%lld) written to %s\n", inserted, a_path.c_str(),
              (long long)a.count_rules(), b_path.c_str(), (long long)b.count_rules(), out_path.c_str());
  return 0;
}

// Reads SIGNATURE<TAB>MS lines ('#' starts a comment) into op_costs for `device`.
int cmd_import_costs(RulesDb& db, const std::string& device, const std::vector<std::string>& files) {
  int count = 0;
  for (const std::string& file : files) {
    std::ifstream in(file);
    if (!in) throw std::runtime_error("cannot read '" + file + "'");
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      if (line.empty() || line[0] == '#') continue;
      const size_t tab = line.rfind('\t');
      double ms = -1;
      if (tab != std::string::npos) {
        const char* end = line.data() + line.size();
        if (auto [ptr, ec] = std::from_chars(line.data() + tab + 1, end, ms); ec != std::errc() || ptr != end) ms = -1;
      }
      if (tab == std::string::npos || tab == 0 || !(ms >= 0) || !std::isfinite(ms))
        throw std::runtime_error(file + ":" + std::to_string(number) +
                                 ": expected an operator signature, a tab and milliseconds (a number >= 0)");
      db.put_op_cost(device, line.substr(0, tab), ms);
      ++count;
    }
    if (in.bad()) throw std::runtime_error("read error in '" + file + "'");  // not the end of the file
  }
  std::printf("imported %d operator costs for device '%s'\n", count, device.c_str());
  return 0;
}

int cmd_costs(const RulesDb& db, const std::string& device) {
  for (const auto& [signature, ms] : db.op_costs(device))
    std::printf("%s\t%s\n", signature.c_str(), number_text(ms).c_str());
  return 0;
}

// What the command line gives, for every subcommand.
struct Args {
  std::string db_path;
  std::optional<std::string> status;
  std::string format = "text";
  tgr::cli::RuleFilter filter;
  int64_t id = 0;
  bool dot = false;
  std::string text, shapes;
  int examples = 1;
  std::vector<std::string> files;
  bool derive_flag = false;
  tgr::saturation::DeriveOptions derive_options;
  std::string specs_dir = tgr::cli::default_specs_dir();
  std::string device;
  std::vector<std::string> pair;  // diff, merge: A B
  std::string merged;             // merge: C
};

struct Subcommands {
  CLI::App *stats, *list, *show, *lookup, *unknowns, *import, *check, *derive, *import_costs, *costs, *diff, *merge;
};

const CLI::IsMember& statuses() {
  static const CLI::IsMember member({"candidate", "proved", "refuted", "unknown", "partial"});
  return member;
}

// stats, list, show, lookup, unknowns: the queries of one database.
void add_queries(CLI::App& app, Args& a, Subcommands& s) {
  s.stats = app.add_subcommand("stats", "rules by status, kind and size; the runs");
  s.list = app.add_subcommand("list", "one line per rule: ID  STATUS  SOURCE => TARGET");
  s.list->add_option("--status", a.status, "only rules of this status")->check(statuses());
  s.list->add_option("--operator", a.filter.operators, "only rules using this operator (repeat: all of them)");
  s.list->add_option("--axiom", a.filter.axioms, "only rules whose proof cites this axiom (repeat: all of them)");
  s.list
      ->add_option("--format", a.format,
                   "text; json (every column); rules (a rule file, SRC => DST | SHAPES, that import reads back)")
      ->check(CLI::IsMember({"text", "json", "rules"}));
  s.show = app.add_subcommand("show", "every field of one rule");
  s.show->add_option("id", a.id, "rule id")->required();
  s.show->add_flag("--dot", a.dot, "print the rule's two sides as a Graphviz graph (render: | dot -Tsvg)");
  s.lookup = app.add_subcommand("lookup",
                                "find a rule by its canonical text, or how stored rules imply it (exit 0 stored or "
                                "implied, 1 neither, 2 bad text)");
  s.lookup->add_option("rule", a.text, "\"SRC => DST\" in the text form")->required();
  s.lookup->add_option("--shapes", a.shapes,
                       "the variables' shapes, x0=2x4,... (default: the shapes of their kinds in the database)");
  s.unknowns = app.add_subcommand("unknowns", "why the prover left rules unknown, classified");
  s.unknowns->add_option("--examples", a.examples, "example rules shown per class")->check(CLI::Range(0, 100));
}

// import, check, derive: rule files in, and rules checked or derived against the database.
void add_rule_files(CLI::App& app, Args& a, Subcommands& s) {
  s.import = app.add_subcommand("import", "insert the rules of rule files (SRC => DST | SHAPES) as candidates");
  s.import->add_option("files", a.files, "rule files")->required()->check(CLI::ExistingFile);
  s.check =
      app.add_subcommand("check", "exit 0 when every rule of the files is in the database or implied by its rules");
  s.check->add_option("files", a.files, "rule files")->required()->check(CLI::ExistingFile);
  s.check->add_option("--status", a.status, "and has this status")->check(statuses());
  s.check->add_flag("--derive", a.derive_flag,
                    "a rule neither stored nor implied may be derived by a chain of proved rules (as derive)");
  s.derive = app.add_subcommand("derive",
                                "whether the database's proved rules derive a rule by a chain of them; prints the "
                                "chain (exit 0 derived, 1 not, 2 bad text)");
  s.derive->add_option("rule", a.text, "\"SRC => DST | SHAPES\", the rule at its variables' shapes")->required();
  for (CLI::App* sub : {s.check, s.derive}) {
    sub->add_option("--iterations", a.derive_options.iteration_limit, "derivation: saturation iterations at most")
        ->capture_default_str()
        ->check(CLI::Range(1, 1000));
    sub->add_option("--node-limit", a.derive_options.node_limit, "derivation: e-nodes at most")
        ->capture_default_str()
        ->check(CLI::Range(size_t{1}, size_t{10000000}));
    sub->add_option("--time-limit", a.derive_options.time_limit_s, "derivation: seconds of search per rule")
        ->capture_default_str()
        ->check(CLI::Range(0.001, 1e6));
    sub->add_option("--specs", a.specs_dir, "derivation: the axioms the instance proofs use")->capture_default_str();
  }
}

// import-costs, costs, diff, merge.
void add_costs_and_pairs(CLI::App& app, Args& a, Subcommands& s) {
  s.import_costs = app.add_subcommand("import-costs", "measured operator costs (SIGNATURE<TAB>MS lines) into op_costs");
  s.import_costs->add_option("--device", a.device, "the device (or runtime) they were measured on")->required();
  s.import_costs->add_option("files", a.files, "cost files")->required()->check(CLI::ExistingFile);
  s.costs = app.add_subcommand("costs", "print the op_costs of a device as SIGNATURE<TAB>MS lines");
  s.costs->add_option("--device", a.device, "the device (or runtime)")->required();
  s.diff = app.add_subcommand("diff", "rules only in A, only in B, or with another status (exit 0 same, 1 differ)");
  s.diff->add_option("databases", a.pair, "A B")->required()->expected(2)->check(CLI::ExistingFile);
  s.merge = app.add_subcommand("merge", "write the rules of A and B into a new database C");
  s.merge->add_option("databases", a.pair, "A B")->required()->expected(2)->check(CLI::ExistingFile);
  s.merge->add_option("-o,--output", a.merged, "C, the new database (must not exist)")->required();
}

// The subcommand given; its exit status.
int run(const Subcommands& s, const Args& a) {
  if (*s.diff) return cmd_diff(a.pair[0], a.pair[1]);
  if (*s.merge) return cmd_merge(a.pair[0], a.pair[1], a.merged);
  if (a.db_path.empty()) throw tgr::cli::UsageError("--db is required for this subcommand");
  if (*s.import) {
    const std::vector<RuleRecord> records = read_records(a.files);
    RulesDb db = RulesDb::open(a.db_path, /*create=*/true);
    return cmd_import(db, records);
  }
  if (*s.import_costs) {
    RulesDb db = RulesDb::open(a.db_path, /*create=*/true);
    return cmd_import_costs(db, a.device, a.files);
  }
  const RulesDb db = RulesDb::open_read_only(a.db_path);  // works in a read-only folder
  Deriver deriver(a.db_path, a.specs_dir, a.derive_options);
  if (*s.check) return cmd_check(db, a.files, a.status, a.derive_flag ? &deriver : nullptr);
  if (*s.derive) return cmd_derive(deriver, a.text);
  if (*s.stats) return cmd_stats(db);
  if (*s.list) return cmd_list(db, a.status, a.filter, a.format);
  if (*s.show) return cmd_show(db, a.id, a.dot);
  if (*s.lookup) return cmd_lookup(db, a.text, a.shapes);
  if (*s.unknowns) return cmd_unknowns(db, a.examples);
  if (*s.costs) return cmd_costs(db, a.device);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rules: inspect, query, compare and merge rules databases", "rules"};
  tgr::cli::setup(app);
  Args a;
  app.add_option("--db", a.db_path,
                 "the rules database (an SQLite file; created by import only); before or after the "
                 "subcommand");
  app.require_subcommand(1);
  Subcommands s{};
  add_queries(app, a, s);
  add_rule_files(app, a, s);
  add_costs_and_pairs(app, a, s);
  if (auto rc = tgr::cli::parse(app, argc, argv)) return *rc;
  return tgr::cli::guarded("rules", [&]() -> int { return run(s, a); });
}
