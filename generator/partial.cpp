#include "generator/partial.h"

#include <chrono>
#include <cstdio>
#include <set>

#include "ir/text.h"
#include "rules_db/rules_db.h"
#include "pet/correction.h"
#include "pet/mutants.h"

namespace tgr::gen {

std::vector<PartialSource> default_partial_sources() {
  return {
      {"two convolutions", "(conv2d(i0, k0), conv2d(i1, k0))", "i0=1x2x6x6,i1=1x2x6x6,k0=2x2x3x3"},
      {"two strided convolutions", "(conv2d[stride=2x2](i0, k0), conv2d[stride=2x2](i1, k0))",
       "i0=1x2x8x8,i1=1x2x8x8,k0=2x2x3x3"},
      {"two average poolings", "(avgpool[kernel=3x3](i0), avgpool[kernel=3x3](i1))", "i0=1x2x6x6,i1=1x2x6x6"},
      {"a convolution", "conv2d(i0, k0)", "i0=1x2x8x8,k0=2x2x3x3"},
      {"an average pooling", "avgpool[kernel=3x3](i0)", "i0=1x2x8x8"},
  };
}

namespace {

void collect_ops(const Expr& e, std::set<std::string>& ops) {
  if (e.kind == Expr::Kind::kCall) ops.insert(e.name);
  for (const Expr& a : e.args) collect_ops(a, ops);
}

std::set<std::string> ops_of(const std::string& program) {
  std::set<std::string> ops;
  for (const Expr& e : parse_tuple(program)) collect_ops(e, ops);
  return ops;
}

}  // namespace

std::string partial_kind(const std::string& source_program, const std::string& mutant_program) {
  const std::set<std::string> src = ops_of(source_program), dst = ops_of(mutant_program);
  std::string kind;
  for (const std::string& op : src) {
    if (!kind.empty()) kind += '+';
    kind += op;
  }
  kind += ": ";
  std::string added;
  for (const std::string& op : dst)
    if (!src.count(op)) {
      if (!added.empty()) added += '+';
      added += op;
    }
  kind += added.empty() ? std::string("other parameters") : added;
  return kind;
}

PartialReport generate_partial(const PartialOptions& options, const std::atomic<bool>& stop) {
  const auto start = std::chrono::steady_clock::now();
  rules_db::RulesDb db = rules_db::RulesDb::open(options.db, true);
  std::string settings = "{\"partial\":true,\"max_ops\":" + std::to_string(options.max_ops);
  settings += ",\"trials\":" + std::to_string(options.trials);
  settings += ",\"seed\":" + std::to_string(options.seed);
  settings += '}';
  PartialReport report;
  report.run = db.claim_run("generate", settings, {"generate"}).run.id;
  pet::MutantOptions mo;
  mo.max_ops = options.max_ops;
  mo.check.trials = options.trials;
  mo.check.seed = options.seed;
  for (const PartialSource& src : options.sources) {
    if (stop) break;
    const ShapeMap shapes = parse_shape_map(src.shapes);
    const Graph source = build_graph(src.program, shapes);
    const pet::MutantReport found = pet::find_mutants(source, mo);
    report.programs += found.programs;
    report.checked += found.checked;
    report.full += static_cast<int64_t>(found.full.size());
    report.partial += static_cast<int64_t>(found.partial.size());
    std::vector<rules_db::RuleRecord> records;
    std::vector<std::string> kinds;
    for (const pet::Mutant& m : found.partial) {
      const std::string source_text = to_text(source);
      rules_db::RuleRecord r = rules_db::rule_record_from_text(source_text + " => " + m.text, src.shapes);
      r.kind = "partial";
      r.status = "partial";
      r.region_map = pet::region_map_json(m.result, src.shapes, source_text, m.text);
      const Graph mutant = build_graph(m.text, shapes);
      r.correction = to_text(pet::corrected_graph(source, mutant, m.result));
      kinds.push_back(partial_kind(source_text, m.text));
      std::string note = "kind: " + kinds.back();
      note += "; source: ";
      note += src.label;
      note += "; region_map and correction hold for the shapes in `variables` (re-derive for others: "
              "verify --check RULE --shapes S --correction)";
      r.note = note;
      r.generator_run = report.run;
      records.push_back(std::move(r));
    }
    // One at a time, so that what each kind adds is counted (duplicates,
    // such as the same mutant with its outputs swapped, are skipped).
    for (size_t i = 0; i < records.size(); ++i)
      if (db.insert_rules({records[i]}) == 1) {
        ++report.inserted;
        ++report.by_kind[kinds[i]];
      }
    if (options.progress)
      std::fprintf(stderr, "generate --partial: %s: %lld programs, %lld checked, %zu full, %zu partial\n",
                   src.label.c_str(), static_cast<long long>(found.programs), static_cast<long long>(found.checked),
                   found.full.size(), found.partial.size());
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::string stats = "{\"programs\":" + std::to_string(report.programs);
  stats += ",\"checked\":" + std::to_string(report.checked);
  stats += ",\"full\":" + std::to_string(report.full);
  stats += ",\"partial\":" + std::to_string(report.partial);
  stats += ",\"inserted\":" + std::to_string(report.inserted);
  stats += '}';
  db.finish_run(report.run, stop ? "interrupted" : "finished", stats);
  return report;
}

}  // namespace tgr::gen
