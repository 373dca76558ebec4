#include "verifier/verify_db.h"

#include <tbb/parallel_for.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>

#include "ir/hash.h"
#include "util/progress.h"

namespace tgr::verifier {

namespace {

// The settings identify a run: an unfinished run with the same settings
// text is resumed, so the keys keep their order (ordered_json) and the text
// stays what earlier versions wrote.
std::string settings_json(const VerifyDbOptions& o) {
  return nlohmann::ordered_json{
      {"specs", o.specs},     {"timeout_ms", o.proof.timeout_ms}, {"max_states", o.proof.max_states},
      {"seed", o.proof.seed}, {"retry_unknown", o.retry_unknown}, {"ids", o.ids}}
      .dump();
}

// "no proof within the budget (...)" -> "no proof within the budget"
std::string reason_kind(const std::string& reason) {
  const size_t cut = std::min(reason.find(" ("), reason.find(':'));
  return reason.substr(0, cut);
}

// A hash of the axioms' canonical text, in order ("fnv1a64:0123456789abcdef"):
// equal for the same axioms however the files are laid out or commented.
// Each run records it (runs.axioms_hash), so a proof can be traced to them.
std::string axioms_hash(const std::vector<axioms::Axiom>& all) {
  uint64_t h = kFnvOffset;
  for (const axioms::Axiom& a : all) h = fnv1a(axioms::to_text(a) + "\n", h);
  char text[32];
  std::snprintf(text, sizeof text, "fnv1a64:%016llx", static_cast<unsigned long long>(h));
  return text;
}

}  // namespace

void store_result(const ProofResult& result, rules_db::RuleRecord& record) {
  record.status = std::string(status_name(result.status));
  record.proof_ms = result.ms;
  record.axioms.reset();
  record.counterexample.reset();
  record.note.reset();
  switch (result.status) {
    case ProofStatus::kProved:
      record.axioms = nlohmann::json(result.axioms).dump();
      record.note = "instances: " + nlohmann::json(result.instances).dump();
      break;
    case ProofStatus::kRefuted: record.counterexample = result.counterexample; break;
    case ProofStatus::kUnknown: record.note = result.reason; break;
  }
}

std::string VerifyDbReport::stats_json() const {
  return nlohmann::ordered_json{{"taken", taken},         {"proved", proved},
                                {"refuted", refuted},     {"unknown", unknown},
                                {"remaining", remaining}, {"seconds", std::round(seconds * 1000) / 1000}}
      // milliseconds are enough
      .dump();
}

VerifyDbReport verify_db(const VerifyDbOptions& o, const std::atomic<bool>& stop) {
  util::SingleProcess one;
  return verify_db(o, stop, one);
}

namespace {

// What the ranks send rank 0: a rule's place in the work list and its outcome.
std::string result_to_bytes(size_t index, const ProofResult& r) {
  std::string out;
  util::append_bytes(out, static_cast<uint64_t>(index));
  util::append_bytes(out, static_cast<int32_t>(r.status));
  util::append_bytes(out, r.ms);
  util::append_text(out, nlohmann::json(r.axioms).dump());
  util::append_text(out, nlohmann::json(r.instances).dump());
  util::append_text(out, r.counterexample);
  util::append_text(out, r.reason);
  return out;
}

void results_from_bytes(const std::string& bytes, size_t first, std::vector<std::optional<ProofResult>>& results) {
  for (util::TextReader in(bytes); !in.done();) {
    const auto index = in.value<uint64_t>();
    ProofResult r;
    r.status = static_cast<ProofStatus>(in.value<int32_t>());
    r.ms = in.value<double>();
    r.axioms = nlohmann::json::parse(in.next()).get<std::vector<std::string>>();
    r.instances = nlohmann::json::parse(in.next()).get<std::vector<std::string>>();
    r.counterexample = in.next();
    r.reason = in.next();
    results.at(index - first) = std::move(r);
  }
}

}  // namespace

namespace {

// The rules rank 0 works on: the candidates (and with retry_unknown the
// unknown ones), or the rules asked for by id.
std::vector<rules_db::RuleRecord> read_work(const VerifyDbOptions& o, rules_db::RulesDb& db) {
  std::vector<rules_db::RuleRecord> work;
  if (o.ids.empty()) {
    work = db.list_rules("candidate");
    if (o.retry_unknown) {
      auto unknown = db.list_rules("unknown");
      work.insert(work.end(), unknown.begin(), unknown.end());
      std::sort(work.begin(), work.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
    }
    return work;
  }
  for (int64_t id : o.ids) {
    auto r = db.get_rule(id);
    if (!r) throw std::runtime_error(o.db + ": no rule " + std::to_string(id));
    if (r->kind != "full")
      throw std::runtime_error("rule " + std::to_string(id) + " is a partial rule (verify --check)");
    work.push_back(std::move(*r));
  }
  return work;
}

// Rank 0 alone opens the database (into `db`) and claims the run; it sends
// every rank the run id and the work list (or its error, which every rank
// then throws as util::AgreedError).
std::vector<rules_db::RuleRecord> share_work(const VerifyDbOptions& o, const std::vector<axioms::Axiom>& axioms,
                                             util::Ranks& ranks, std::optional<rules_db::RulesDb>& db,
                                             VerifyDbReport& report) {
  std::vector<rules_db::RuleRecord> work;
  std::string shared;  // the run id and the work: ids, rules and variables; or "!" and the error
  if (ranks.root()) {
    try {
      db.emplace(rules_db::RulesDb::open(o.db, false));
      // Claimed before the candidates are read: while a generate run is still
      // storing rules, verify would prove a part of them (or none) and call it done.
      report.run = db->claim_run("verify", settings_json(o), {"generate", "verify"}, axioms_hash(axioms)).run.id;
      work = read_work(o, *db);
      util::append_bytes(shared, report.run);
      for (const auto& r : work) {
        util::append_bytes(shared, r.id);
        util::append_text(shared, r.source);
        util::append_text(shared, r.target);
        util::append_text(shared, r.variables);
      }
    } catch (const std::exception& e) {
      if (ranks.size() == 1) throw;  // as it is: one process has no one to tell
      shared = std::string("!") + e.what();
    }
  }
  shared = ranks.broadcast(std::move(shared));
  if (shared.rfind('!', 0) == 0) throw util::AgreedError(shared.substr(1));
  if (ranks.root()) return work;
  // One pass over the message (a copy of the rest per rule was quadratic:
  // at --max-ops 4, 203,583 rules, rank 1 spent minutes before proving).
  util::TextReader in(shared);
  report.run = in.value<decltype(report.run)>();
  while (!in.done()) {
    rules_db::RuleRecord r;
    r.id = in.value<decltype(r.id)>();
    r.source = in.next();
    r.target = in.next();
    r.variables = in.next();
    work.push_back(std::move(r));
  }
  return work;
}

// What the progress line shows.
struct Counts {
  std::atomic<size_t> done{0}, proved{0}, refuted{0}, unknown{0};
};

// One rule proved; a rule this build cannot read (an operator it does not
// have, bad shapes) stays unknown (prove() reports its own failures).
ProofResult prove_rule(const Prover& prover, const rules_db::RuleRecord& r, const ProofOptions& options) {
  ProofResult result;
  auto cannot_build = [&result](const std::exception& e) {
    result.status = ProofStatus::kUnknown;
    result.reason = std::string("error: the rule cannot be built: ") + e.what();
  };
  try {
    DTypeMap dtypes;
    const ShapeMap shapes = parse_shape_map(r.variables, &dtypes);
    result = prover.prove(build_rule(r.rule_text(), shapes, dtypes), options);
  } catch (const ParseError& e) {
    cannot_build(e);
  } catch (const ShapeSyntaxError& e) {
    cannot_build(e);
  }
  return result;
}

// This rank's rules of a batch (work[mine[k]]) proved in parallel, into
// results[i - begin]; a rule is left unproved once `stop` is set or past
// --stop-after.
void prove_batch(const VerifyDbOptions& o, const Prover& prover, const std::vector<rules_db::RuleRecord>& work,
                 const std::vector<size_t>& mine, size_t begin, const std::atomic<bool>& stop, Counts& counts,
                 std::vector<std::optional<ProofResult>>& results) {
  tbb::parallel_for(
      tbb::blocked_range<size_t>(0, mine.size(), 1),
      [&](const tbb::blocked_range<size_t>& range) {
        for (size_t k = range.begin(); k != range.end(); ++k) {
          const size_t i = mine[k];
          if (stop.load() || (o.stop_after >= 0 && i >= static_cast<size_t>(o.stop_after))) return;
          ProofResult result = prove_rule(prover, work[i], o.proof);
          (result.status == ProofStatus::kProved    ? counts.proved
           : result.status == ProofStatus::kRefuted ? counts.refuted
                                                    : counts.unknown)++;
          ++counts.done;
          results[i - begin] = std::move(result);
        }
      },
      tbb::simple_partitioner());
}

// Under several ranks: every rank's outcomes of the batch gathered on rank
// 0, whose progress line then counts them all.
void gather_batch(util::Ranks& ranks, const std::vector<size_t>& mine, size_t begin, const VerifyDbReport& report,
                  Counts& counts, std::vector<std::optional<ProofResult>>& results) {
  std::string outcomes;
  if (!ranks.root())
    for (size_t i : mine)
      if (results[i - begin]) outcomes += result_to_bytes(i, *results[i - begin]);
  const std::vector<std::string> all = ranks.all_gather(std::move(outcomes));
  if (!ranks.root()) return;
  for (int r = 1; r < ranks.size(); ++r) results_from_bytes(all[r], begin, results);
  size_t n_done = 0, n_proved = 0, n_refuted = 0, n_unknown = 0;
  for (const auto& res : results)
    if (res) {
      ++n_done;
      (res->status == ProofStatus::kProved ? n_proved : res->status == ProofStatus::kRefuted ? n_refuted : n_unknown)++;
    }
  counts.done = report.taken + n_done;
  counts.proved = report.proved + n_proved;
  counts.refuted = report.refuted + n_refuted;
  counts.unknown = report.unknown + n_unknown;
}

// What a rule's outcome adds to the report (and the counts behind it).
struct Tally {
  std::map<std::string, size_t> axiom_uses, unknown_reasons;
};

// Rank 0 stores the batch's outcomes (work[begin, end)) in one transaction
// and counts them; returns false when a rule of it was not proved (stopped).
bool commit_batch(const std::vector<rules_db::RuleRecord>& work, size_t begin, size_t end,
                  const std::vector<std::optional<ProofResult>>& results, rules_db::RulesDb& db, VerifyDbReport& report,
                  Tally& tally) {
  bool complete = true;
  std::vector<rules_db::RuleRecord> updates;
  for (size_t i = begin; i < end; ++i) {
    const auto& result = results[i - begin];
    if (!result) {
      complete = false;
      continue;
    }
    rules_db::RuleRecord r = work[i];
    store_result(*result, r);
    updates.push_back(r);
    ++report.taken;
    if (result->status == ProofStatus::kProved) {
      ++report.proved;
      for (const std::string& a : result->axioms) ++tally.axiom_uses[a];
      report.slowest.push_back({r.id, result->ms, r.rule_text(), *r.axioms});
      std::sort(report.slowest.begin(), report.slowest.end(), [](const auto& a, const auto& b) { return a.ms > b.ms; });
      if (report.slowest.size() > 5) report.slowest.pop_back();
    } else if (result->status == ProofStatus::kRefuted) {
      ++report.refuted;
    } else {
      ++report.unknown;
      ++tally.unknown_reasons[reason_kind(result->reason)];
    }
  }
  db.update_rules(updates);
  return complete;
}

// Rank 0's report completed and the run finished in the database.
void finish_report(size_t work_size, const Tally& tally, rules_db::RulesDb& db, VerifyDbReport& report) {
  report.remaining = work_size - report.taken;
  report.interrupted = report.remaining > 0;
  for (const auto& [name, n] : tally.axiom_uses) report.axiom_uses.emplace_back(name, n);
  std::stable_sort(report.axiom_uses.begin(), report.axiom_uses.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  for (const auto& [why, n] : tally.unknown_reasons) report.unknown_reasons.emplace_back(why, n);
  db.finish_run(report.run, report.interrupted ? "interrupted" : "finished", report.stats_json());
}

}  // namespace

VerifyDbReport verify_db(const VerifyDbOptions& o, const std::atomic<bool>& stop, util::Ranks& ranks) {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<axioms::Axiom> axioms = axioms::load_axioms(o.specs);
  const Prover prover(axioms);
  VerifyDbReport report;
  std::optional<rules_db::RulesDb> db;  // rank 0's
  const std::vector<rules_db::RuleRecord> work = share_work(o, axioms, ranks, db, report);

  Counts counts;
  util::Progress progress(o.progress && ranks.root(), [&] {
    char line[200];
    std::snprintf(line, sizeof line, "verify: %zu/%zu rules: %zu proved, %zu refuted, %zu unknown; %.0f s",
                  counts.done.load(), work.size(), counts.proved.load(), counts.refuted.load(), counts.unknown.load(),
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return std::string(line);
  });

  // Batches of kBatch rules per rank: rank r proves every size()-th rule of
  // the batch, rank 0 gathers the outcomes and commits them.
  Tally tally;
  constexpr size_t kBatch = 256;  // rules per rank per committed transaction
  const size_t step = static_cast<size_t>(ranks.size()), batch = kBatch * step;
  bool stopped = false;
  for (size_t begin = 0; begin < work.size() && !stopped; begin += batch) {
    const size_t end = std::min(work.size(), begin + batch);
    std::vector<size_t> mine;
    for (size_t i = begin + static_cast<size_t>(ranks.rank()); i < end; i += step) mine.push_back(i);
    std::vector<std::optional<ProofResult>> results(end - begin);
    prove_batch(o, prover, work, mine, begin, stop, counts, results);
    stopped = ranks.any(stop.load());
    if (ranks.size() > 1) gather_batch(ranks, mine, begin, report, counts, results);
    if (!ranks.root()) {
      for (size_t i : mine) report.taken += results[i - begin].has_value();
    } else if (!commit_batch(work, begin, end, results, *db, report, tally)) {
      stopped = true;
    }
    stopped = ranks.any(stopped);
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!ranks.root()) {
    report.interrupted = stopped;
    return report;
  }
  finish_report(work.size(), tally, *db, report);
  return report;
}

RecheckReport recheck_proved(const std::string& db_path, int trials, uint64_t seed) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<rules_db::RuleRecord> proved = rules_db::RulesDb::open_read_only(db_path).list_rules("proved");
  std::vector<std::optional<std::string>> found(proved.size());
  std::vector<char> evaluated(proved.size(), 0);  // found[i] is a counterexample, not an error
  tbb::parallel_for(size_t{0}, proved.size(), [&](size_t i) {
    const rules_db::RuleRecord& r = proved[i];
    try {
      DTypeMap dtypes;
      const ShapeMap shapes = parse_shape_map(r.variables, &dtypes);
      found[i] = find_counterexample(build_rule(r.rule_text(), shapes, dtypes), trials, seed ^ (0x9e37 * r.id));
      evaluated[i] = 1;
    } catch (const std::exception& e) {
      found[i] = std::string("cannot evaluate: ") + e.what();
    }
  });
  RecheckReport report;
  report.checked = proved.size();
  std::vector<rules_db::RuleRecord> refuted;
  for (size_t i = 0; i < proved.size(); ++i) {
    if (!found[i]) continue;
    report.differing.emplace_back(proved[i].id, *found[i]);
    if (!evaluated[i]) continue;  // not shown false: its status stays
    rules_db::RuleRecord& r = refuted.emplace_back(std::move(proved[i]));
    r.status = "refuted";
    r.counterexample = *found[i];
    r.note = "stored as proved, then found false by verify --recheck-proved (float64 on random inputs)";
  }
  // Never applied again: the database is opened for writing only when a
  // proved rule is false.
  if (!refuted.empty()) rules_db::RulesDb::open(db_path, false).update_rules(refuted);
  report.refuted = refuted.size();
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace tgr::verifier
