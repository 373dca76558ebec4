// The rules database: one SQLite file holding every rule found by the
// generator, its proof status and evidence, and the runs that produced it.
// Schema: rules_db/schema.cpp; docs/database.md documents it for people
// reading the file with sqlite3 (tests/schema_doc_check.py compares the two).
//
// A RulesDb is used from one thread at a time. Several processes (or several
// RulesDb objects) may open the same file: it is in WAL mode, so readers never
// wait, and a writer waits (busy timeout, 30 s) for another writer's
// transaction instead of failing.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

struct sqlite3;

namespace tgr::rules_db {

// Every error of this library: a file that is not a (valid, known) rules
// database, a constraint violated, an SQLite failure. The message names the file.
class DbError : public std::runtime_error {
  using runtime_error::runtime_error;
};

struct RuleRecord {
  int64_t id = 0;  // assigned by the database; ignored by insert_rules
  std::string canonical, source, target;  // canonical == source + " => " + target
  std::string variables, constraints = "{}";
  int source_ops = 0, target_ops = 0;
  std::string operators;  // sorted distinct operator names, comma-separated
  std::string kind = "full", status = "candidate";
  std::optional<double> proof_ms;
  std::optional<std::string> axioms, counterexample, region_map, correction, note;
  int64_t generator_run = 0;  // 0: none (stored as NULL)
  std::string created_at;     // set by the database; ignored on insert and update
  std::string rule_text() const { return source + " => " + target; }
};

// A record with canonical, source, target, source_ops, target_ops and
// operators filled in from a rule's text (any spelling: canonicalised with
// ir/canonical.h). Operators are counted as distinct nodes (a subexpression
// written twice is one node, as the parser shares it). Throws ParseError.
RuleRecord rule_record_from_text(std::string_view rule_text, std::string variables = "");

// finished_at, checkpoint, tool_version, axioms_hash, space: "" when NULL.
struct RunRecord {
  int64_t id = 0;
  std::string kind, settings, started_at, finished_at, status, stats, checkpoint;
  std::string tool_version;  // the program that began (or last resumed) the run: util/version.h
  std::string axioms_hash;   // runs that read the axioms (verify): verifier::axioms_hash
  std::string space;         // a generate run's search space file text (docs/spaces.md)
  // The NAME of the space text's `space NAME` line; "" when none.
  std::string space_name() const;
};

// A run claimed by claim_run: resumed (an unfinished run of equal settings,
// whose checkpoint says where it stopped) or new.
struct ClaimedRun {
  RunRecord run;
  bool resumed = false;
};

struct RunSummary {
  RunRecord run;
  int64_t rules_inserted = 0;  // rules whose generator_run is this run
};

class RulesDb {
 public:
  // Opens `path`. With create=true a missing (or empty) file is created with
  // the latest schema; an older schema is migrated. Errors (DbError): no such
  // file (create=false), not an SQLite file, an SQLite file of another
  // application, a schema newer than this program. A file that is refused is
  // never written to.
  // Before writing, an existing file must pass PRAGMA integrity_check
  // (quick_check above 64 MiB): a damaged file is refused untouched. Runs
  // left 'running' by a process that has died are marked 'failed'.
  static RulesDb open(const std::string& path, bool create);
  // For reading only (rules stats, optimize --rules): works on a read-only
  // file or folder and on another user's file (as SQLite's immutable file
  // when its WAL index cannot be made). A file of an older schema is opened
  // with open() to migrate it, which needs write access.
  static RulesDb open_read_only(const std::string& path);

  RulesDb(RulesDb&&) noexcept = default;
  RulesDb& operator=(RulesDb&&) noexcept = default;
  RulesDb(const RulesDb&) = delete;
  RulesDb& operator=(const RulesDb&) = delete;
  ~RulesDb() = default;

  const std::string& path() const { return path_; }
  int schema_version() const;

  // Runs. Statuses: 'running' (begin_run), 'interrupted', 'finished', 'failed'.
  int64_t begin_run(const std::string& kind, const std::string& settings_json);
  // What generate and verify start with, in one write transaction: refuses
  // (DbError naming the run and the process) while a live process executes a
  // run of one of `busy_kinds`; else resumes the unfinished run of `kind`
  // with these settings (status back to 'running', owned by this process) or
  // begins a new one.
  // Records this program's version and `axioms_hash` ("" when the run reads
  // no axioms) in the run.
  ClaimedRun claim_run(const std::string& kind, const std::string& settings_json,
                       const std::vector<std::string>& busy_kinds, const std::string& axioms_hash = "");
  void set_checkpoint(int64_t run, const std::string& checkpoint);  // its own small transaction
  void set_run_space(int64_t run, const std::string& space_text);   // runs.space; its own transaction
  void finish_run(int64_t run, const std::string& status, const std::string& stats_json);
  std::optional<RunRecord> get_run(int64_t run) const;
  // The most recent run of `kind` with exactly these settings whose status is
  // not 'finished' (to resume), if any.
  std::optional<RunRecord> find_unfinished_run(const std::string& kind, const std::string& settings_json) const;
  std::vector<RunSummary> list_runs() const;  // by id

  // Inserts in one transaction; rows whose `canonical` already exists are
  // skipped. Returns how many were inserted.
  int insert_rules(const std::vector<RuleRecord>& rules);
  // Writes the mutable fields of rule `rule.id` (kind, status, constraints,
  // proof_ms, axioms, counterexample, region_map, correction, note); the
  // identity (canonical, sides, variables, sizes, run) is kept. Unknown id: DbError.
  void update_rule(const RuleRecord& rule);
  // The same for many rules, in one transaction (all or none).
  void update_rules(const std::vector<RuleRecord>& rules);
  std::optional<RuleRecord> get_rule(int64_t id) const;
  std::optional<RuleRecord> find_by_canonical(const std::string& canonical) const;
  std::vector<RuleRecord> list_rules(const std::optional<std::string>& status = std::nullopt) const;  // by id
  int64_t count_rules() const;
  std::vector<std::pair<std::string, int64_t>> counts_by_status() const;  // by status
  std::vector<std::pair<std::string, int64_t>> counts_by_kind() const;    // by kind
  std::vector<std::tuple<int, int, int64_t>> counts_by_size() const;      // by (source_ops, target_ops)

  // Measured operator costs (table op_costs), in milliseconds, keyed by
  // device and operator signature (ir/op_signature.h), with how each was
  // timed (`method`; '' when not recorded). Putting a cost that exists
  // replaces it (and its measured_at and method).
  void put_op_cost(const std::string& device, const std::string& signature, double ms, const std::string& method = "");
  std::vector<std::pair<std::string, double>> op_costs(const std::string& device) const;  // by signature
  struct OpCost {
    std::string signature;
    double ms = 0;
    std::string method;
  };
  std::vector<OpCost> op_cost_rows(const std::string& device) const;  // by signature

  // The GPU runtime's timed choices (table kernel_choices,
  // runtime/kernel_choices.h) for a device and library versions, as (key,
  // choice) by key; putting replaces a key's choice. All in one transaction.
  void put_kernel_choices(const std::string& device, const std::string& libraries,
                          const std::vector<std::pair<std::string, std::string>>& choices);
  std::vector<std::pair<std::string, std::string>> kernel_choices(const std::string& device,
                                                                  const std::string& libraries) const;

 private:
  struct Closer {
    void operator()(sqlite3* db) const;
  };
  RulesDb(std::string path, sqlite3* db);

  std::string path_;
  std::unique_ptr<sqlite3, Closer> db_;
};

}  // namespace tgr::rules_db
