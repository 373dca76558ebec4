#include "generator/generate.h"
#include "ir/hash.h"
#include "util/progress.h"

#include <tbb/enumerable_thread_specific.h>
#include <nlohmann/json.hpp>

#include <unistd.h>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <thread>

#include "rules_db/rules_db.h"

namespace tgr::gen {
namespace {

double peak_memory_mb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;  // kB
  return 0;
}

// The settings identify a run: an unfinished run with the same settings
// text is resumed, so the keys keep their order (ordered_json) and the text
// stays what earlier versions wrote.
std::string settings_json(const GenerateOptions& o) {
  return nlohmann::ordered_json{{"max_ops", o.max_ops},
                                {"ops", o.ops.empty() ? default_operator_set() : o.ops},
                                {"vars_per_kind", o.vars_per_kind},
                                {"seed", o.seed}}
      .dump();
}

// Pass 1's memory: a Bloom filter of the class keys seen, and the keys seen
// again (an exact list, as long as what pass 2 keeps, plus the filter's rare
// false positives, which only make pass 2 keep a few single graphs). Batches
// from the threads go in one at a time, so a key's second arrival always
// finds its first: the repeated keys are the same whatever the scheduling.
class RepeatedKeys {
 public:
  explicit RepeatedKeys(int log2_bits) : words_(size_t{1} << (log2_bits - 6)), mask_((uint64_t{1} << log2_bits) - 1) {}

  void add(const std::vector<uint64_t>& keys) {
    std::lock_guard lock(mutex_);
    for (uint64_t key : keys) {
      bool seen = true;
      for (uint64_t probe = 0; probe < 3; ++probe) {
        const uint64_t bit = hash(key, probe) & mask_;
        uint64_t& word = words_[bit >> 6];
        seen = seen && (word >> (bit & 63) & 1);
        word |= uint64_t{1} << (bit & 63);
      }
      if (seen) repeated_.push_back(key);
    }
  }

  std::vector<uint64_t> take() {
    std::sort(repeated_.begin(), repeated_.end());
    repeated_.erase(std::unique(repeated_.begin(), repeated_.end()), repeated_.end());
    return std::move(repeated_);
  }

 private:
  static uint64_t hash(uint64_t key, uint64_t probe) {
    return mix64(key + (probe + 1) * kGoldenGamma);
  }
  std::mutex mutex_;
  std::vector<uint64_t> words_;
  uint64_t mask_;
  std::vector<uint64_t> repeated_;
};

// About 16 filter bits per graph expected at this size.
int filter_bits(int max_ops) { return max_ops <= 2 ? 22 : max_ops == 3 ? 26 : max_ops == 4 ? 31 : 34; }

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

std::string GenerateReport::stats_json() const {
  const CandidateStats& c = candidates;
  return nlohmann::ordered_json{{"enumerated", enumerated},
                                {"registered", registered},
                                {"fingerprint_classes", fingerprints},
                                {"multi_classes", c.classes},
                                {"class_graphs", c.class_graphs},
                                {"pairs", c.pairs},
                                {"pruned_trivial", c.trivial},
                                {"pruned_renaming", c.renaming},
                                {"pruned_commutative", c.commutative},
                                {"pruned_common_subgraph", c.common_subgraph},
                                {"pruned_common_supergraph", c.common_supergraph},
                                {"float64_rejected", c.float64_rejected},
                                {"candidates", c.kept},
                                {"inserted", inserted},
                                {"already_in_database", found_stored},
                                {"seconds", std::round(seconds * 100) / 100},  // centiseconds are enough
                                {"peak_memory_mb", std::llround(peak_memory_mb)}}
      .dump();
}

GenerateReport generate(const GenerateOptions& o, const std::atomic<bool>& stop) {
  const auto start = std::chrono::steady_clock::now();
  GenerateReport report;
  const std::vector<World> worlds = build_worlds({o.ops, o.vars_per_kind});
  std::vector<Enumerator> enumerators;
  for (size_t w = 0; w < worlds.size(); ++w) enumerators.emplace_back(worlds[w], static_cast<uint8_t>(w), o.max_ops, o.seed);

  rules_db::RulesDb db = rules_db::RulesDb::open(o.db, true);
  const std::string settings = settings_json(o);
  // A second generate on this database waits for no one: it refuses while
  // another process executes a generate run (it would join that run).
  const rules_db::ClaimedRun claimed = db.claim_run("generate", settings, {"generate"});
  report.run = claimed.run.id;
  if (claimed.resumed) {
    report.resumed = true;
    if (claimed.run.checkpoint.rfind("inserted=", 0) == 0)
      report.already_stored = std::stoll(claimed.run.checkpoint.substr(9));
  }

  // Pass 1: every fingerprint; the classes with two or more graphs.
  // Pass 2: the same enumeration again, keeping only those classes' graphs,
  // so memory follows what is kept, not what is enumerated.
  EnumerationCounters counters, again;
  std::atomic<EnumerationCounters*> shown{&counters};
  std::atomic<int> phase{1};  // 1, 2: enumeration passes; 3: pairing; 4: storing
  std::atomic<double> phase_began{0};
  // What pass 2 and storing have before them is known (pass 2 enumerates
  // what pass 1 did; storing, the candidates): their lines show it and an ETA.
  std::atomic<uint64_t> pass_total{0}, stored{0}, to_store{0};
  auto done_of = [&](uint64_t done, uint64_t total, const char* unit) {
    char text[128];
    const double rate = done / std::max(since(start) - phase_began.load(), 1e-9);
    std::snprintf(text, sizeof text, "%llu of %llu %s (%.0f%%), ETA %.0f s", (unsigned long long)done,
                  (unsigned long long)total, unit, 100.0 * done / std::max<uint64_t>(total, 1),
                  rate > 0 && total > done ? (total - done) / rate : 0.0);
    return std::string(text);
  };
  util::Progress progress(o.progress, [&] {
    char line[320];
    const double s = since(start);
    if (phase == 1) {
      const EnumerationCounters& c = *shown.load();
      std::snprintf(line, sizeof line, "generate: pass 1 of 2: %llu graphs, %llu fingerprinted, %.0f graphs/s, %.1f s",
                    (unsigned long long)c.states.load(), (unsigned long long)c.registered.load(),
                    c.states.load() / std::max(s, 1e-9), s);
    } else if (phase == 2) {
      std::snprintf(line, sizeof line, "generate: pass 2 of 2: %s, %.1f s",
                    done_of(again.states.load(), pass_total.load(), "graphs").c_str(), s);
    } else if (phase == 3) {
      std::snprintf(line, sizeof line, "generate: pairing and pruning, %.1f s", s);
    } else {
      std::snprintf(line, sizeof line, "generate: storing %s, %.1f s",
                    done_of(stored.load(), to_store.load(), "rules").c_str(), s);
    }
    return std::string(line);
  });
  std::vector<std::vector<uint64_t>> repeated(enumerators.size());  // per world, sorted
  for (size_t w = 0; w < enumerators.size() && !stop; ++w) {
    RepeatedKeys filter(filter_bits(o.max_ops));
    tbb::enumerable_thread_specific<std::vector<uint64_t>> buffers;
    const size_t flush_at = 1 << 16;
    enumerators[w].run([&](const GraphRecord& r) {
      std::vector<uint64_t>& buffer = buffers.local();
      buffer.push_back(r.key);
      if (buffer.size() >= flush_at) {
        filter.add(buffer);
        buffer.clear();
      }
    }, stop, counters);
    for (auto& buffer : buffers) filter.add(buffer);
    repeated[w] = filter.take();
  }
  report.enumerated = counters.states.load();
  report.registered = counters.registered.load();
  std::vector<GraphRecord> kept;  // pass 2 also counts the distinct classes exactly
  if (!stop) {
    phase_began = since(start);
    shown = &again;
    pass_total = counters.states.load();
    phase = 2;
    for (size_t w = 0; w < enumerators.size() && !stop; ++w) {
      tbb::enumerable_thread_specific<std::vector<GraphRecord>> local;
      const auto& rep = repeated[w];
      enumerators[w].run([&](const GraphRecord& r) {
        if (std::binary_search(rep.begin(), rep.end(), r.key)) local.local().push_back(r);
      }, stop, again);
      for (auto& v : local) kept.insert(kept.end(), v.begin(), v.end());
    }
  }
  // Classes: one per graph outside the repeated classes, plus those.
  {
    std::vector<std::pair<uint8_t, uint64_t>> keys;
    for (const GraphRecord& r : kept) keys.emplace_back(r.world, r.key);
    std::sort(keys.begin(), keys.end());
    const uint64_t distinct = static_cast<uint64_t>(std::unique(keys.begin(), keys.end()) - keys.begin());
    report.fingerprints = report.registered - kept.size() + distinct;
  }
  std::vector<Candidate> candidates;
  if (!stop) {
    phase = 3;
    candidates = find_candidates(enumerators, std::move(kept), o.seed, report.candidates, stop);
  }

  // Store in batches; the checkpoint counts what is stored, so a re-run
  // continues after it (the candidate list is the same for the same settings).
  int64_t index = report.already_stored;
  if (!stop) {
    phase_began = since(start);
    to_store = candidates.size() - std::min<uint64_t>(candidates.size(), index);
    phase = 4;
  }
  const size_t batch = 500;
  int64_t taken = 0;  // candidates this invocation stored or found stored
  while (!stop && index < static_cast<int64_t>(candidates.size())) {
    if (o.stop_after >= 0 && taken >= o.stop_after) break;
    std::vector<rules_db::RuleRecord> records;
    for (size_t k = 0; k < batch && index + static_cast<int64_t>(k) < static_cast<int64_t>(candidates.size()); ++k) {
      if (o.stop_after >= 0 && taken + static_cast<int64_t>(k) >= o.stop_after) break;
      const Candidate& c = candidates[index + k];
      rules_db::RuleRecord r = rules_db::rule_record_from_text(c.canonical, c.variables);
      r.generator_run = report.run;
      r.note = "found as: " + c.text;
      r.constraints = c.constraints;
      records.push_back(std::move(r));
    }
    const int fresh = db.insert_rules(records);  // rules already in the database are skipped
    index += static_cast<int64_t>(records.size());
    taken += static_cast<int64_t>(records.size());
    stored = static_cast<uint64_t>(taken);
    report.inserted += fresh;
    report.found_stored += static_cast<int64_t>(records.size()) - fresh;
    db.set_checkpoint(report.run, "inserted=" + std::to_string(index));
  }
  report.interrupted = stop || index < static_cast<int64_t>(candidates.size());
  report.seconds = since(start);
  report.peak_memory_mb = peak_memory_mb();
  db.finish_run(report.run, report.interrupted ? "interrupted" : "finished", report.stats_json());
  return report;
}

}  // namespace tgr::gen
