// `verify --db`: every candidate rule of a rules database gets a final status
// (proved, refuted or unknown) with its evidence, in parallel, with progress,
// resumable (only rules still 'candidate' are taken) and safe to interrupt
// (finished rules are committed in batches; the rest stay 'candidate').
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "rules_db/rules_db.h"
#include "util/ranks.h"
#include "verifier/prover.h"

namespace tgr::verifier {

struct VerifyDbOptions {
  std::string db;
  std::string specs;
  ProofOptions proof;
  bool retry_unknown = false;    // take 'unknown' rules again (after adding axioms, or with a larger budget)
  std::vector<int64_t> ids;      // only these rules (any status but 'partial'); empty: all candidates
  bool progress = true;
  int64_t stop_after = -1;       // testing: behave as if interrupted after this many rules
};

struct SlowProof {
  int64_t id = 0;
  double ms = 0;
  std::string rule, axioms;
};

struct VerifyDbReport {
  int64_t run = 0;
  size_t taken = 0;  // rules this invocation worked on
  size_t proved = 0, refuted = 0, unknown = 0;
  size_t remaining = 0;  // still 'candidate' (interrupted)
  bool interrupted = false;
  double seconds = 0;
  std::vector<SlowProof> slowest;                          // the five slowest proofs
  std::vector<std::pair<std::string, size_t>> axiom_uses;  // proofs citing each axiom, most used first
  std::vector<std::pair<std::string, size_t>> unknown_reasons;  // first words of the reasons, counted
  std::string stats_json() const;
};

VerifyDbReport verify_db(const VerifyDbOptions& options, const std::atomic<bool>& stop);
// The same shared among `ranks` (mpirun; docs/mpi.md): rank 0 alone opens
// the database and sends the rules out; each rank proves every size()-th
// rule of each batch; rank 0 commits the batch. The database ends as one
// process leaves it. Only rank 0's report has the counts. An error rank 0
// meets opening the database is thrown on every rank as util::AgreedError.
VerifyDbReport verify_db(const VerifyDbOptions& options, const std::atomic<bool>& stop, util::Ranks& ranks);

// Every 'proved' rule evaluated again in float64 on fresh random inputs (a
// check on the axioms and the prover: a proved rule must never differ). A
// rule found false is stored as 'refuted' with its counterexample (the
// database is opened for writing then only); one that cannot be evaluated
// is reported and keeps its status.
struct RecheckReport {
  size_t checked = 0;
  std::vector<std::pair<int64_t, std::string>> differing;  // rule id, counterexample (or why not evaluated)
  size_t refuted = 0;                                      // of them, set to 'refuted' in the database
  double seconds = 0;
};
RecheckReport recheck_proved(const std::string& db_path, int trials, uint64_t seed);

// The database form of an outcome: status, proof_ms, axioms (a JSON array of
// names), counterexample, and note (the core's instances, or the reason).
void store_result(const ProofResult& result, rules_db::RuleRecord& record);

}  // namespace tgr::verifier
