#include "generator/generate.h"
#include "ir/hash.h"
#include "util/progress.h"

#include <tbb/enumerable_thread_specific.h>
#include <nlohmann/json.hpp>

#include <sys/mman.h>
#include <unistd.h>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
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
// text is resumed, so the keys keep their order (ordered_json). The space
// is named and hashed (its text): a changed space file is a new run.
std::string settings_json(const GenerateOptions& o, const Space& space) {
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx", (unsigned long long)fnv1a(space.text));
  return nlohmann::ordered_json{{"max_ops", o.max_ops},
                                {"space", space.name},
                                {"space_hash", hash},
                                {"ops", o.ops.empty() ? space.operators() : o.ops},
                                {"vars_per_kind", o.vars_per_kind ? o.vars_per_kind : space.vars_per_kind},
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
  // The words are an anonymous mapping: zero pages that are only backed
  // when touched, so a small space's few keys touch few pages of a filter
  // sized for the default space (2 GiB at --max-ops 5). (calloc would not
  // do: the TBB allocator that replaces it clears the whole block.)
  explicit RepeatedKeys(int log2_bits)
      : bytes_((size_t{1} << log2_bits) / 8),
        words_(
            static_cast<uint64_t*>(mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0))),
        mask_((uint64_t{1} << log2_bits) - 1) {
    if (words_ == MAP_FAILED) throw std::bad_alloc();
  }
  ~RepeatedKeys() { munmap(words_, bytes_); }
  RepeatedKeys(const RepeatedKeys&) = delete;
  RepeatedKeys& operator=(const RepeatedKeys&) = delete;

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
  size_t bytes_;
  uint64_t* words_;
  uint64_t mask_;
  std::vector<uint64_t> repeated_;
};

// About 16 filter bits per graph expected at this size, on one of `ranks`
// ranks (each sees its share of the keys).
int filter_bits(int max_ops, int ranks) {
  int bits = max_ops <= 2 ? 22 : max_ops == 3 ? 26 : max_ops == 4 ? 31 : 34;
  for (int r = ranks; r > 1 && bits > 20; r /= 2) --bits;
  return bits;
}

// The enumeration's branches of a world go in this many rounds on each
// rank, each followed by an exchange: what one round buffers is a part of
// the pass, not all of it.
constexpr size_t kRounds = 16;

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
                                {"pruned_instances", c.instances},
                                {"candidates", c.kept},
                                {"inserted", inserted},
                                {"already_in_database", found_stored},
                                {"seconds", std::round(seconds * 100) / 100},  // centiseconds are enough
                                {"enumeration_seconds", std::round(enumeration_seconds * 100) / 100},
                                {"pairing_seconds", std::round(c.pairing_seconds * 100) / 100},
                                {"generalization_seconds", std::round(c.generalization_seconds * 100) / 100},
                                {"storing_seconds", std::round(storing_seconds * 100) / 100},
                                {"peak_memory_mb", std::llround(peak_memory_mb)},
                                {"ranks", ranks}}
      .dump();
}

GenerateReport generate(const GenerateOptions& o, const std::atomic<bool>& stop) {
  util::SingleProcess one;
  return generate(o, stop, one);
}

namespace {

// One generation run (generate): its worlds' enumerators, the database
// (rank 0), the progress line, and the steps in the order they happen.
// Pass 1: every fingerprint; the classes with two or more graphs. Pass 2:
// the same enumeration again, keeping only those classes' graphs, so memory
// follows what is kept, not what is enumerated. Each rank enumerates every
// size()-th branch (Enumerator::branches) and sends each graph's key (pass
// 1) and record (pass 2) to the rank that owns the key, so that each class
// is gathered on one rank; the branches go in rounds, to bound what is in
// flight. Then pairing and pruning (find_candidates), then storing.
class GenerationRun {
 public:
  GenerationRun(const GenerateOptions& o, const std::atomic<bool>& stop, util::Ranks& ranks);
  GenerateReport run();

 private:
  void claim_run();
  std::string progress_line() const;
  std::string done_of(uint64_t done, uint64_t total, const char* unit) const;
  int owner(uint64_t key) const { return static_cast<int>(mix64(key) % ranks_.size()); }
  std::vector<std::vector<size_t>> rounds_of(size_t w) const;
  bool stopped() { return stopped_ = stopped_ || ranks_.any(stop_); }
  std::vector<uint64_t> repeated_keys(size_t w);
  void keep_repeated_classes(size_t w, const std::vector<uint64_t>& repeated, std::vector<GraphRecord>& kept);
  void count_fingerprints(const std::vector<GraphRecord>& kept);
  void store(const std::vector<Candidate>& candidates);

  const GenerateOptions& o_;
  const std::atomic<bool>& stop_;
  util::Ranks& ranks_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  const Space space_;
  const std::vector<World> worlds_;
  std::vector<Enumerator> enumerators_;
  std::optional<rules_db::RulesDb> db_;  // rank 0's
  GenerateReport report_;
  bool stopped_ = false;
  // What the progress line shows. What pass 2 and storing have before them
  // is known (pass 2 enumerates what pass 1 did; storing, the candidates):
  // their lines show it and an ETA.
  EnumerationCounters counters_, again_;
  std::atomic<EnumerationCounters*> shown_{&counters_};
  std::atomic<int> phase_{1};  // 1, 2: enumeration passes; 3: pairing; 4: storing
  std::atomic<double> phase_began_{0};
  std::atomic<uint64_t> pass_total_{0}, stored_{0}, to_store_{0};
};

GenerationRun::GenerationRun(const GenerateOptions& o, const std::atomic<bool>& stop, util::Ranks& ranks)
    : o_(o),
      stop_(stop),
      ranks_(ranks),
      space_(load_space(o.space, o.limits)),
      worlds_(build_worlds({o.ops, o.vars_per_kind, "", &space_})) {
  for (size_t w = 0; w < worlds_.size(); ++w)
    enumerators_.emplace_back(worlds_[w], static_cast<uint8_t>(w), o.max_ops, o.seed);
  report_.ranks = ranks.size();
  report_.space = space_.name;
}

// Rank 0 alone opens the database and claims (or resumes) the run; the
// others learn the run from it (or its error, which every rank then
// reports as its own).
void GenerationRun::claim_run() {
  std::string claim;  // "RUN RESUMED ALREADY_STORED", or "!" and the error
  if (ranks_.root()) {
    try {
      db_.emplace(rules_db::RulesDb::open(o_.db, true));
      // A second generate on this database waits for no one: it refuses while
      // another process executes a generate run (it would join that run).
      const rules_db::ClaimedRun claimed = db_->claim_run("generate", settings_json(o_, space_), {"generate"});
      db_->set_run_space(claimed.run.id, space_.text);  // what the rules were generated from
      int64_t already = 0;
      if (claimed.resumed && claimed.run.checkpoint.rfind("inserted=", 0) == 0)
        already = std::stoll(claimed.run.checkpoint.substr(9));
      claim = std::to_string(claimed.run.id) + " " + (claimed.resumed ? "1" : "0") + " " + std::to_string(already);
    } catch (const std::exception& e) {
      if (ranks_.size() == 1) throw;  // as it is: one process has no one to tell
      claim = std::string("!") + e.what();
    }
  }
  claim = ranks_.broadcast(claim);
  if (claim.rfind('!', 0) == 0) throw util::AgreedError(claim.substr(1));
  std::istringstream in(claim);
  int resumed = 0;
  in >> report_.run >> resumed >> report_.already_stored;
  report_.resumed = resumed != 0;
}

std::string GenerationRun::done_of(uint64_t done, uint64_t total, const char* unit) const {
  char text[128];
  const double rate = done / std::max(since(start_) - phase_began_.load(), 1e-9);
  std::snprintf(text, sizeof text, "%llu of %llu %s (%.0f%%), ETA %.0f s", (unsigned long long)done,
                (unsigned long long)total, unit, 100.0 * done / std::max<uint64_t>(total, 1),
                rate > 0 && total > done ? (total - done) / rate : 0.0);
  return text;
}

std::string GenerationRun::progress_line() const {
  char line[320];
  const double s = since(start_);
  const char* of_rank = ranks_.size() > 1 ? " (rank 0)" : "";
  if (phase_ == 1) {
    const EnumerationCounters& c = *shown_.load();
    std::snprintf(line, sizeof line, "generate: pass 1 of 2: %llu graphs%s, %llu fingerprinted, %.0f graphs/s, %.1f s",
                  (unsigned long long)c.states.load(), of_rank, (unsigned long long)c.registered.load(),
                  c.states.load() / std::max(s, 1e-9), s);
  } else if (phase_ == 2) {
    std::snprintf(line, sizeof line, "generate: pass 2 of 2: %s%s, %.1f s",
                  done_of(again_.states.load(), pass_total_.load(), "graphs").c_str(), of_rank, s);
  } else if (phase_ == 3) {
    std::snprintf(line, sizeof line, "generate: pairing and pruning, %.1f s", s);
  } else {
    std::snprintf(line, sizeof line, "generate: storing %s, %.1f s",
                  done_of(stored_.load(), to_store_.load(), "rules").c_str(), s);
  }
  return line;
}

// This rank's branches of world w, in rounds (every rank runs as many).
std::vector<std::vector<size_t>> GenerationRun::rounds_of(size_t w) const {
  const size_t n = static_cast<size_t>(ranks_.size());
  const size_t branches = enumerators_[w].branches();
  const size_t per_rank = (branches + n - 1) / n;
  const size_t per_round = std::max<size_t>(1, (per_rank + kRounds - 1) / kRounds);
  std::vector<std::vector<size_t>> rounds((per_rank + per_round - 1) / per_round);
  for (size_t b = static_cast<size_t>(ranks_.rank()); b < branches; b += n) rounds[(b / n) / per_round].push_back(b);
  return rounds;
}

// Pass 1 of world w: this rank's keys seen twice or more, sorted. The keys
// arrive in the order of the ranks, so which are repeated does not depend
// on the scheduling.
std::vector<uint64_t> GenerationRun::repeated_keys(size_t w) {
  const int n = ranks_.size();
  RepeatedKeys filter(filter_bits(o_.max_ops, n));
  for (const auto& round : rounds_of(w)) {
    if (stopped()) break;
    tbb::enumerable_thread_specific<std::vector<std::vector<uint64_t>>> buffers(
        [n] { return std::vector<std::vector<uint64_t>>(n); });
    enumerators_[w].run_branches(
        round, [&](const GraphRecord& r) { buffers.local()[owner(r.key)].push_back(r.key); }, stop_, counters_);
    std::vector<std::string> to(n);
    for (auto& buffer : buffers)
      for (int r = 0; r < n; ++r)
        for (uint64_t key : buffer[r]) util::append_bytes(to[r], key);
    buffers.clear();
    for (const std::string& keys : ranks_.exchange(std::move(to))) filter.add(util::from_bytes<uint64_t>(keys));
  }
  return filter.take();
}

// Pass 2 of world w: the graphs of the repeated classes this rank owns,
// appended to `kept`. This rank's own keys are looked up here; the others',
// by their owner.
void GenerationRun::keep_repeated_classes(size_t w, const std::vector<uint64_t>& rep, std::vector<GraphRecord>& kept) {
  const int n = ranks_.size();
  for (const auto& round : rounds_of(w)) {
    if (stopped()) break;
    tbb::enumerable_thread_specific<std::vector<std::vector<GraphRecord>>> local(
        [n] { return std::vector<std::vector<GraphRecord>>(n); });
    enumerators_[w].run_branches(
        round,
        [&](const GraphRecord& r) {
          const int to = owner(r.key);
          if (to != ranks_.rank() || std::binary_search(rep.begin(), rep.end(), r.key)) local.local()[to].push_back(r);
        },
        stop_, again_);
    std::vector<std::string> to(n);
    for (auto& buffer : local)
      for (int r = 0; r < n; ++r)
        for (const GraphRecord& record : buffer[r]) util::append_bytes(to[r], record);
    local.clear();
    for (const std::string& records : ranks_.exchange(std::move(to)))
      for (const GraphRecord& r : util::from_bytes<GraphRecord>(records))
        if (std::binary_search(rep.begin(), rep.end(), r.key)) kept.push_back(r);
  }
}

// Classes: one per graph outside the repeated classes, plus those.
void GenerationRun::count_fingerprints(const std::vector<GraphRecord>& kept) {
  std::vector<std::pair<uint8_t, uint64_t>> keys;
  for (const GraphRecord& r : kept) keys.emplace_back(r.world, r.key);
  std::sort(keys.begin(), keys.end());
  const uint64_t distinct = static_cast<uint64_t>(std::unique(keys.begin(), keys.end()) - keys.begin());
  report_.fingerprints = report_.registered - ranks_.sum(kept.size()) + ranks_.sum(distinct);
}

// Rank 0 stores in batches; the checkpoint counts what is stored, so a
// re-run continues after it (the candidate list is the same for the same
// settings).
void GenerationRun::store(const std::vector<Candidate>& candidates) {
  int64_t index = report_.already_stored;
  const double storing_began = since(start_);
  if (!stopped_) {
    phase_began_ = since(start_);
    to_store_ = candidates.size() - std::min<uint64_t>(candidates.size(), index);
    phase_ = 4;
  }
  const size_t batch = 500;
  int64_t taken = 0;  // candidates this invocation stored or found stored
  while (!stopped_ && !stop_ && index < static_cast<int64_t>(candidates.size())) {
    if (o_.stop_after >= 0 && taken >= o_.stop_after) break;
    std::vector<rules_db::RuleRecord> records;
    for (size_t k = 0; k < batch && index + static_cast<int64_t>(k) < static_cast<int64_t>(candidates.size()); ++k) {
      if (o_.stop_after >= 0 && taken + static_cast<int64_t>(k) >= o_.stop_after) break;
      const Candidate& c = candidates[index + k];
      rules_db::RuleRecord r = rules_db::rule_record_from_text(c.canonical, c.variables);
      r.generator_run = report_.run;
      r.note = "found as: " + c.text;
      r.constraints = c.constraints;
      records.push_back(std::move(r));
    }
    const int fresh = db_->insert_rules(records);  // rules already in the database are skipped
    index += static_cast<int64_t>(records.size());
    taken += static_cast<int64_t>(records.size());
    stored_ = static_cast<uint64_t>(taken);
    report_.inserted += fresh;
    report_.found_stored += static_cast<int64_t>(records.size()) - fresh;
    db_->set_checkpoint(report_.run, "inserted=" + std::to_string(index));
  }
  report_.interrupted = stopped_ || stop_ || index < static_cast<int64_t>(candidates.size());
  report_.seconds = since(start_);
  report_.storing_seconds = report_.seconds - storing_began;
  report_.peak_memory_mb = std::max(report_.peak_memory_mb, peak_memory_mb());
  db_->finish_run(report_.run, report_.interrupted ? "interrupted" : "finished", report_.stats_json());
}

GenerateReport GenerationRun::run() {
  claim_run();
  util::Progress progress(o_.progress && ranks_.root(), [&] { return progress_line(); });
  std::vector<std::vector<uint64_t>> repeated(enumerators_.size());  // per world, this rank's keys, sorted
  for (size_t w = 0; w < enumerators_.size() && !stopped_; ++w) repeated[w] = repeated_keys(w);
  report_.enumerated = ranks_.sum(counters_.states.load());
  report_.registered = ranks_.sum(counters_.registered.load());
  std::vector<GraphRecord> kept;  // pass 2 also counts the distinct classes exactly
  if (!stopped_) {
    phase_began_ = since(start_);
    shown_ = &again_;
    pass_total_ = counters_.states.load();
    phase_ = 2;
    for (size_t w = 0; w < enumerators_.size() && !stopped_; ++w) keep_repeated_classes(w, repeated[w], kept);
    stopped();
  }
  report_.enumeration_seconds = since(start_);
  count_fingerprints(kept);
  std::vector<Candidate> candidates;
  if (!stopped_) {
    phase_ = 3;
    candidates = find_candidates(enumerators_, std::move(kept), o_.seed, report_.candidates, stop_, ranks_);
    stopped();
  }
  report_.peak_memory_mb = ranks_.max(peak_memory_mb());
  if (!ranks_.root()) {  // rank 0 stores
    report_.interrupted = stopped_;
    report_.seconds = since(start_);
    return report_;
  }
  store(candidates);
  return report_;
}

}  // namespace

GenerateReport generate(const GenerateOptions& o, const std::atomic<bool>& stop, util::Ranks& ranks) {
  return GenerationRun(o, stop, ranks).run();
}

}  // namespace tgr::gen
