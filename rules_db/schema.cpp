// The rules database schema, in one place. Never edit a migration that has
// shipped: append a new one (and describe its change in docs/database.md).
// The migration runner (rules_db.cpp) records the version in `meta` after
// each step; migration 1 also writes it itself, so running its SQL alone
// gives a valid version-1 database (the schema tests do that).
#include "rules_db/schema.h"

#include <array>

namespace tgr::rules_db {

namespace {

// Timestamps are UTC ISO-8601 text with milliseconds: 2024-05-01T12:00:00.123Z.
#define TGR_NOW "(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))"

constexpr const char* kV1 = R"sql(
CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
INSERT INTO meta (key, value) VALUES ('application', 'tgr-rules'), ('schema_version', '1');

CREATE TABLE runs (
  id          INTEGER PRIMARY KEY,
  kind        TEXT NOT NULL,
  settings    TEXT NOT NULL DEFAULT '{}',
  started_at  TEXT NOT NULL DEFAULT )sql" TGR_NOW R"sql(,
  finished_at TEXT,
  status      TEXT NOT NULL DEFAULT 'running'
              CHECK (status IN ('running', 'interrupted', 'finished', 'failed')),
  stats       TEXT NOT NULL DEFAULT '{}',
  checkpoint  TEXT
);
CREATE INDEX runs_kind_settings ON runs (kind, settings);

CREATE TABLE rules (
  id             INTEGER PRIMARY KEY,
  canonical      TEXT NOT NULL UNIQUE,
  source         TEXT NOT NULL,
  target         TEXT NOT NULL,
  variables      TEXT NOT NULL DEFAULT '',
  constraints    TEXT NOT NULL DEFAULT '{}',
  source_ops     INTEGER NOT NULL,
  target_ops     INTEGER NOT NULL,
  operators      TEXT NOT NULL,
  kind           TEXT NOT NULL DEFAULT 'full' CHECK (kind IN ('full', 'partial')),
  status         TEXT NOT NULL DEFAULT 'candidate'
                 CHECK (status IN ('candidate', 'proved', 'refuted', 'unknown', 'partial')),
  proof_ms       REAL,
  axioms         TEXT,
  counterexample TEXT,
  region_map     TEXT,
  correction     TEXT,
  note           TEXT,
  generator_run  INTEGER REFERENCES runs (id),
  created_at     TEXT NOT NULL DEFAULT )sql" TGR_NOW R"sql(
);
CREATE INDEX rules_status ON rules (status);
CREATE INDEX rules_kind ON rules (kind);
CREATE INDEX rules_generator_run ON rules (generator_run);
)sql";

constexpr const char* kV2 = R"sql(
CREATE VIEW proved_rules AS
  SELECT id, source || ' => ' || target AS rule, source_ops, target_ops, axioms, proof_ms
  FROM rules WHERE status = 'proved' ORDER BY id;

CREATE VIEW rule_counts_by_status AS
  SELECT status, COUNT(*) AS n FROM rules GROUP BY status ORDER BY status;

CREATE VIEW rule_counts_by_size AS
  SELECT source_ops, target_ops, COUNT(*) AS n FROM rules
  GROUP BY source_ops, target_ops ORDER BY source_ops, target_ops;

CREATE VIEW run_summary AS
  SELECT runs.id, runs.kind, runs.status, runs.started_at, runs.finished_at,
         (SELECT COUNT(*) FROM rules WHERE rules.generator_run = runs.id) AS rules_inserted
  FROM runs ORDER BY runs.id;
)sql";

// Measured per-operator costs for the optimizer's cost model, keyed by the
// device's name and the operator signature (ir/op_signature.h).
constexpr const char* kV3 = R"sql(
CREATE TABLE op_costs (
  device      TEXT NOT NULL,
  signature   TEXT NOT NULL,
  ms          REAL NOT NULL CHECK (ms >= 0),
  measured_at TEXT NOT NULL DEFAULT )sql" TGR_NOW R"sql(,
  PRIMARY KEY (device, signature)
);
)sql";

// Who executes a run: "HOST PID START" (START: the process's start time, so
// a reused pid is not taken for the same process). A run left 'running' by a
// process that is gone is marked 'failed' on the next writable open, and a
// second process does not join a run another live process executes.
constexpr const char* kV4 = R"sql(
ALTER TABLE runs ADD COLUMN owner TEXT;
)sql";

// What made each run: the program's version (util/version.h) and, for runs
// that read the operator axioms (verify), a hash of them, so that a proof can
// be traced to the axioms it came from. rule_constraints shows the JSON of
// rules.constraints (written by the generator) as columns.
constexpr const char* kV5 = R"sql(
ALTER TABLE runs ADD COLUMN tool_version TEXT;
ALTER TABLE runs ADD COLUMN axioms_hash TEXT;
CREATE VIEW rule_constraints AS
  SELECT id,
         json_extract(constraints, '$.generalizes') AS generalizes,
         json_extract(constraints, '$.checked_on') AS checked_on,
         json_extract(constraints, '$.reason') AS reason
  FROM rules ORDER BY id;
)sql";

// The search space a generate run enumerated (spaces/*.space, docs/spaces.md):
// the space file's full text, whose `space NAME` line names it; NULL for
// other runs and for runs of older programs.
constexpr const char* kV6 = R"sql(
ALTER TABLE runs ADD COLUMN space TEXT;
)sql";

// How each measured cost was timed (calibrate's method: its copies and the
// spacer between them, runtime/step_signature.h calibration_method), so that a
// table measured one way is not read as if measured another; '' for costs
// stored before methods were recorded, and for imported ones.
constexpr const char* kV7 = R"sql(
ALTER TABLE op_costs ADD COLUMN method TEXT NOT NULL DEFAULT '';
)sql";

// The GPU runtime's timed choices of implementation (runtime/kernel_choices.h:
// which cuDNN algorithm runs a convolution, ...), keyed by the device's name,
// the versions of the libraries that were timed (cuDNN's and cuBLAS's, as
// "cuDNN 91400, cuBLAS 13.1") and the runtime's key; `choice` is the runtime's
// text. calibrate stores them and bench reads them, so both run a
// convolution the same way.
constexpr const char* kV8 = R"sql(
CREATE TABLE kernel_choices (
  device      TEXT NOT NULL,
  libraries   TEXT NOT NULL,
  key         TEXT NOT NULL,
  choice      TEXT NOT NULL,
  measured_at TEXT NOT NULL DEFAULT )sql" TGR_NOW R"sql(,
  PRIMARY KEY (device, libraries, key)
);
)sql";

#undef TGR_NOW

constexpr std::array kMigrations = {
    Migration{1, "tables meta, runs, rules; indexes on status and kind", kV1},
    Migration{2, "views proved_rules, rule_counts_by_status, rule_counts_by_size, run_summary", kV2},
    Migration{3, "table op_costs: measured operator costs by device and signature", kV3},
    Migration{4, "column runs.owner: the process executing a run", kV4},
    Migration{5, "columns runs.tool_version, runs.axioms_hash; view rule_constraints", kV5},
    Migration{6, "column runs.space: the search space text of a generate run", kV6},
    Migration{7, "column op_costs.method: how a cost was timed", kV7},
    Migration{8, "table kernel_choices: the GPU runtime's timed choices by device and libraries", kV8},
};

}  // namespace

std::span<const Migration> migrations() { return kMigrations; }

int latest_schema_version() { return kMigrations.back().version; }

}  // namespace tgr::rules_db
