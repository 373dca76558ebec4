// A generation run: enumerate, fingerprint, pair, prune, re-check, store.
// Progress goes to stderr; setting `stop` (Ctrl-C) ends the run cleanly with
// what is stored committed; running the same settings again resumes it.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "generator/candidates.h"
#include "util/limits.h"
#include "util/ranks.h"

namespace tgr::gen {

struct GenerateOptions {
  std::string db;
  int max_ops = 3;
  std::string space = "default";  // a built-in space's name or a space file (docs/spaces.md)
  std::vector<std::string> ops;   // empty: every operator of the space
  int vars_per_kind = 0;          // 0: the space's variables-per-kind
  uint64_t seed = 1;
  bool progress = true;
  int64_t stop_after = -1;  // testing: behave as if interrupted after inserting this many rules
  util::Limits limits;      // what the space may ask for (load_space)
};

struct GenerateReport {
  int64_t run = 0;
  int ranks = 1;      // processes that shared the work (mpirun -np)
  std::string space;  // the space's name
  bool resumed = false, interrupted = false;
  uint64_t enumerated = 0;      // graphs built, every size
  uint64_t registered = 0;      // connected graphs fingerprinted
  uint64_t fingerprints = 0;    // distinct fingerprint classes
  CandidateStats candidates;
  int64_t inserted = 0;        // new rules this invocation stored
  int64_t found_stored = 0;    // candidates this invocation found already in the database (an earlier run's)
  int64_t already_stored = 0;  // candidates an earlier, interrupted invocation of this run stored
  double seconds = 0;
  double enumeration_seconds = 0, storing_seconds = 0;  // the two passes; storing (the rest: candidates.*_seconds)
  double peak_memory_mb = 0;                            // the largest of the ranks'
  std::string stats_json() const;
};

GenerateReport generate(const GenerateOptions& options, const std::atomic<bool>& stop);
// The same run shared among `ranks` (mpirun; docs/mpi.md): each enumerates a
// share of the graphs, each fingerprint class is gathered on the rank that
// owns its key, and rank 0 alone opens the database and stores the same
// rules a single process stores. Every rank returns the totals; only rank
// 0's report has the storing counts. An error rank 0 meets opening the
// database is thrown on every rank as util::AgreedError.
GenerateReport generate(const GenerateOptions& options, const std::atomic<bool>& stop, util::Ranks& ranks);

}  // namespace tgr::gen
