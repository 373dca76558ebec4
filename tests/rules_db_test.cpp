// The rules database: records, runs, schema versions and migrations, refusal
// of foreign and damaged files (left untouched), concurrent writers, views.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ir/text.h"
#include "rules_db/rules_db.h"
#include "rules_db/schema.h"

namespace tgr::rules_db {
namespace {

namespace fs = std::filesystem;

// A unique path under the temp directory; the file and its WAL/SHM companions
// are removed at the end.
class TempDb {
 public:
  TempDb() {
    static std::atomic<int> counter{0};
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = (fs::temp_directory_path() / ("tgr_rules_db_" + std::to_string(::getpid()) + "_" +
                                          std::to_string(counter++) + "_" + info->name() + ".db"))
                .string();
    remove();
  }
  ~TempDb() { remove(); }
  const std::string& path() const { return path_; }

 private:
  void remove() const {
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(path_ + suffix);
  }
  std::string path_;
};

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

// A raw sqlite3 connection (what a person with the sqlite3 shell sees).
class Raw {
 public:
  explicit Raw(const std::string& path) {
    EXPECT_EQ(sqlite3_open(path.c_str(), &db_), SQLITE_OK);
    sqlite3_busy_timeout(db_, 30'000);
  }
  ~Raw() { sqlite3_close(db_); }
  void exec(const std::string& sql) {
    char* err = nullptr;
    const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
    EXPECT_EQ(rc, SQLITE_OK) << sql << ": " << (err ? err : "");
    sqlite3_free(err);
  }
  // Rows as "a|b|c" (NULL as "NULL").
  std::vector<std::string> rows(const std::string& sql) {
    std::vector<std::string> out;
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr), SQLITE_OK) << sql << ": " << sqlite3_errmsg(db_);
    while (sqlite3_step(s) == SQLITE_ROW) {
      std::string row;
      for (int c = 0; c < sqlite3_column_count(s); ++c) {
        if (c) row += "|";
        const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(s, c));
        row += t ? t : "NULL";
      }
      out.push_back(row);
    }
    sqlite3_finalize(s);
    return out;
  }
  sqlite3* get() { return db_; }

 private:
  sqlite3* db_ = nullptr;
};

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const DbError& e) {
    return e.what();
  }
  return "(no DbError)";
}

RuleRecord full_record() {
  RuleRecord r = rule_record_from_text("matmul(matmul(x7, w3), w1) => matmul(x7, matmul(w3, w1))", "x0=2x3,w0=3x4,w1=4x5");
  r.constraints = R"({"x0.cols": "w0.rows"})";
  r.kind = "partial";
  r.status = "partial";
  r.proof_ms = 3.25;
  r.axioms = "matmul_assoc,matmul_dist";
  r.counterexample = "none";
  r.region_map = R"({"boxes": [[0, 2]]})";
  r.correction = "matmul(x0, w0)";
  r.note = "it's \"fine\"";
  return r;
}

// ---- records ----

TEST(RuleRecordFromText, CanonicalSidesSizesOperators) {
  const RuleRecord r = rule_record_from_text("mul(x2, add(x1, x0)) => add(mul(x2, x1), mul(x0, x2))", "x0=2x2");
  EXPECT_EQ(r.canonical, "add(mul(x0, x1), mul(x0, x2)) => mul(add(x1, x2), x0)");
  EXPECT_EQ(r.source, "add(mul(x0, x1), mul(x0, x2))");
  EXPECT_EQ(r.target, "mul(add(x1, x2), x0)");
  EXPECT_EQ(r.rule_text(), r.canonical);
  EXPECT_EQ(r.source_ops, 3);
  EXPECT_EQ(r.target_ops, 2);
  EXPECT_EQ(r.operators, "add,mul");
  EXPECT_EQ(r.variables, "x2=2x2");  // the shape of the x0 written is the canonical x2's
  // A subexpression written twice is one node; split's outputs are one node.
  EXPECT_EQ(rule_record_from_text("add(relu(x0), relu(x0)) => add(relu(x0), relu(x0))").source_ops, 2);
  const RuleRecord s = rule_record_from_text(
      "concat[axis=0](split[axis=0, sizes=2x2](x0).0, split[axis=0, sizes=2x2](x0).1) => x0");
  EXPECT_EQ(s.source_ops, 2);
  EXPECT_EQ(s.target_ops, 0);
  EXPECT_EQ(s.operators, "concat,split");
  EXPECT_THROW(rule_record_from_text("matmul(x0, => x1"), ParseError);
}

TEST(RulesDb, CreateInsertReadBackEveryField) {
  TempDb tmp;
  RulesDb db = RulesDb::open(tmp.path(), true);
  const int64_t run = db.begin_run("generate", "{}");
  RuleRecord r = full_record();
  r.generator_run = run;
  EXPECT_EQ(db.insert_rules({r}), 1);

  const auto got = db.find_by_canonical(r.canonical);
  ASSERT_TRUE(got);
  EXPECT_GT(got->id, 0);
  EXPECT_EQ(got->canonical, "matmul(matmul(x0, w0), w1) => matmul(x0, matmul(w0, w1))");
  EXPECT_EQ(got->source, "matmul(matmul(x0, w0), w1)");
  EXPECT_EQ(got->target, "matmul(x0, matmul(w0, w1))");
  EXPECT_EQ(got->variables, "x0=2x3,w0=3x4,w1=4x5");
  EXPECT_EQ(got->constraints, r.constraints);
  EXPECT_EQ(got->source_ops, 2);
  EXPECT_EQ(got->target_ops, 2);
  EXPECT_EQ(got->operators, "matmul");
  EXPECT_EQ(got->kind, "partial");
  EXPECT_EQ(got->status, "partial");
  EXPECT_EQ(got->proof_ms, 3.25);
  EXPECT_EQ(got->axioms, r.axioms);
  EXPECT_EQ(got->counterexample, r.counterexample);
  EXPECT_EQ(got->region_map, r.region_map);
  EXPECT_EQ(got->correction, r.correction);
  EXPECT_EQ(got->note, r.note);
  EXPECT_EQ(got->generator_run, run);
  EXPECT_EQ(got->created_at.size(), 24u) << got->created_at;  // 2024-05-01T12:00:00.123Z

  const auto by_id = db.get_rule(got->id);
  ASSERT_TRUE(by_id);
  EXPECT_EQ(by_id->canonical, got->canonical);
  EXPECT_FALSE(db.get_rule(got->id + 100));
  EXPECT_FALSE(db.find_by_canonical("x0 => x0"));

  // Defaults: NULL evidence and no run.
  RuleRecord plain = rule_record_from_text("relu(relu(x0)) => relu(x0)");
  EXPECT_EQ(db.insert_rules({plain}), 1);
  const auto p = db.find_by_canonical(plain.canonical);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->kind, "full");
  EXPECT_EQ(p->status, "candidate");
  EXPECT_EQ(p->constraints, "{}");
  EXPECT_FALSE(p->proof_ms);
  EXPECT_FALSE(p->axioms);
  EXPECT_FALSE(p->note);
  EXPECT_EQ(p->generator_run, 0);
}

TEST(RulesDb, DuplicateCanonicalIsSkipped) {
  TempDb tmp;
  RulesDb db = RulesDb::open(tmp.path(), true);
  const RuleRecord r = rule_record_from_text("add(x0, x1) => add(x1, x0)");
  EXPECT_EQ(db.insert_rules({r}), 1);
  EXPECT_EQ(db.insert_rules({r}), 0);
  // The same rule in another spelling has the same key.
  EXPECT_EQ(db.insert_rules({rule_record_from_text("add(x5, x3) => add(x3, x5)")}), 0);
  // A batch: the duplicate skipped, the new one in, a duplicate inside the batch once.
  const RuleRecord n = rule_record_from_text("relu(relu(x0)) => relu(x0)");
  EXPECT_EQ(db.insert_rules({r, n, n}), 1);
  EXPECT_EQ(db.count_rules(), 2);
  EXPECT_EQ(db.insert_rules({}), 0);
}

TEST(RulesDb, BadRecordsAreRejectedAndRollBackTheBatch) {
  TempDb tmp;
  RulesDb db = RulesDb::open(tmp.path(), true);
  RuleRecord good = rule_record_from_text("relu(relu(x0)) => relu(x0)");
  RuleRecord bad = rule_record_from_text("add(x0, x1) => add(x1, x0)");
  bad.status = "proven";  // not a status: the CHECK constraint
  EXPECT_NE(error_of([&] { db.insert_rules({good, bad}); }).find("CHECK constraint failed"), std::string::npos);
  EXPECT_EQ(db.count_rules(), 0);  // the whole batch rolled back
  bad.status = "candidate";
  bad.kind = "half";
  EXPECT_THROW(db.insert_rules({bad}), DbError);
  bad.kind = "full";
  bad.generator_run = 42;  // no such run: the foreign key
  EXPECT_NE(error_of([&] { db.insert_rules({bad}); }).find("FOREIGN KEY"), std::string::npos);
  RuleRecord empty;
  EXPECT_NE(error_of([&] { db.insert_rules({empty}); }).find("without canonical text"), std::string::npos);
  EXPECT_EQ(db.count_rules(), 0);
  // The handle is still usable after the failed transactions.
  EXPECT_EQ(db.insert_rules({good}), 1);
}

TEST(RulesDb, ListByStatusAndCounts) {
  TempDb tmp;
  RulesDb db = RulesDb::open(tmp.path(), true);
  std::vector<RuleRecord> rules = {
      rule_record_from_text("relu(relu(x0)) => relu(x0)"),                                      // 2 -> 1
      rule_record_from_text("add(x0, x1) => add(x1, x0)"),                                      // 1 -> 1
      rule_record_from_text("matmul(matmul(x0, w0), w1) => matmul(x0, matmul(w0, w1))"),        // 2 -> 2
      rule_record_from_text("mul(add(x0, x1), x2) => add(mul(x0, x2), mul(x1, x2))"),          // 2 -> 3 (canonical: 3 -> 2)
  };
  rules[0].status = "proved";
  rules[2].status = "proved";
  rules[3].status = "refuted";
  rules[3].kind = "partial";
  EXPECT_EQ(db.insert_rules(rules), 4);

  const auto proved = db.list_rules("proved");
  ASSERT_EQ(proved.size(), 2u);
  EXPECT_LT(proved[0].id, proved[1].id);
  EXPECT_EQ(proved[0].canonical, rules[0].canonical);
  EXPECT_EQ(proved[1].canonical, rules[2].canonical);
  EXPECT_EQ(db.list_rules().size(), 4u);
  EXPECT_TRUE(db.list_rules("unknown").empty());

  using Counts = std::vector<std::pair<std::string, int64_t>>;
  EXPECT_EQ(db.counts_by_status(), (Counts{{"candidate", 1}, {"proved", 2}, {"refuted", 1}}));
  EXPECT_EQ(db.counts_by_kind(), (Counts{{"full", 3}, {"partial", 1}}));
  using Sizes = std::vector<std::tuple<int, int, int64_t>>;
  EXPECT_EQ(db.counts_by_size(), (Sizes{{1, 1, 1}, {2, 1, 1}, {2, 2, 1}, {3, 2, 1}}));
}

TEST(RulesDb, UpdateRuleChangesStatusAndEvidence) {
  TempDb tmp;
  RulesDb db = RulesDb::open(tmp.path(), true);
  db.insert_rules({rule_record_from_text("relu(relu(x0)) => relu(x0)", "x0=2x2")});
  RuleRecord r = db.list_rules().at(0);
  r.status = "proved";
  r.proof_ms = 7.5;
  r.axioms = "relu_idempotent";
  r.note = "by Z3";
  r.variables = "changed";  // identity fields are not written
  db.update_rule(r);
  const RuleRecord got = *db.get_rule(r.id);
  EXPECT_EQ(got.status, "proved");
  EXPECT_EQ(got.proof_ms, 7.5);
  EXPECT_EQ(got.axioms, "relu_idempotent");
  EXPECT_EQ(got.note, "by Z3");
  EXPECT_EQ(got.variables, "x0=2x2");
  EXPECT_EQ(db.list_rules("candidate").size(), 0u);

  r.status = "refuted";
  r.proof_ms.reset();
  r.axioms.reset();
  r.counterexample = "x0=[-1]";
  db.update_rule(r);
  const RuleRecord again = *db.get_rule(r.id);
  EXPECT_EQ(again.status, "refuted");
  EXPECT_FALSE(again.proof_ms);
  EXPECT_FALSE(again.axioms);
  EXPECT_EQ(again.counterexample, "x0=[-1]");

  r.id = 999;
  EXPECT_NE(error_of([&] { db.update_rule(r); }).find("no rule 999"), std::string::npos);
  r.id = got.id;
  r.status = "bogus";
  EXPECT_THROW(db.update_rule(r), DbError);
  EXPECT_EQ(db.get_rule(got.id)->status, "refuted");
}

// ---- runs ----

// A generate run records its search space's text (schema 5: runs.space).
TEST(RulesDb, RunSpace) {
  TempDb tmp;
  RulesDb db = RulesDb::open(tmp.path(), true);
  const int64_t run = db.begin_run("generate", "{}");
  EXPECT_TRUE(db.get_run(run)->space.empty());
  EXPECT_EQ(db.get_run(run)->space_name(), "");
  const std::string text = "# a comment\nspace mine # named\nworld w\n";
  db.set_run_space(run, text);
  EXPECT_EQ(db.get_run(run)->space, text);
  EXPECT_EQ(db.get_run(run)->space_name(), "mine");
  EXPECT_EQ(db.list_runs().at(0).run.space_name(), "mine");
  EXPECT_THROW(db.set_run_space(run + 1, text), DbError);
}

TEST(RulesDb, Runs) {
  TempDb tmp;
  RulesDb db = RulesDb::open(tmp.path(), true);
  const std::string settings = R"({"max_ops": 3, "ops": ["matmul"]})";
  const int64_t a = db.begin_run("generate", settings);
  auto run = db.get_run(a);
  ASSERT_TRUE(run);
  EXPECT_EQ(run->kind, "generate");
  EXPECT_EQ(run->settings, settings);
  EXPECT_EQ(run->status, "running");
  EXPECT_FALSE(run->started_at.empty());
  EXPECT_TRUE(run->finished_at.empty());
  EXPECT_TRUE(run->checkpoint.empty());
  EXPECT_EQ(run->stats, "{}");

  db.set_checkpoint(a, "level=2 index=17");
  EXPECT_EQ(db.get_run(a)->checkpoint, "level=2 index=17");
  db.set_checkpoint(a, "level=3 index=0");
  EXPECT_EQ(db.get_run(a)->checkpoint, "level=3 index=0");
  db.finish_run(a, "interrupted", R"({"graphs": 100})");
  run = db.get_run(a);
  EXPECT_EQ(run->status, "interrupted");
  EXPECT_EQ(run->stats, R"({"graphs": 100})");
  EXPECT_FALSE(run->finished_at.empty());

  // Resuming: the interrupted run with equal settings, not others.
  const int64_t other = db.begin_run("generate", R"({"max_ops": 2})");
  db.finish_run(other, "interrupted", "{}");
  const int64_t done = db.begin_run("generate", R"({"max_ops": 4})");
  db.finish_run(done, "finished", "{}");
  const int64_t verify = db.begin_run("verify", settings);
  db.finish_run(verify, "interrupted", "{}");

  auto found = db.find_unfinished_run("generate", settings);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->id, a);
  EXPECT_EQ(found->checkpoint, "level=3 index=0");
  EXPECT_FALSE(db.find_unfinished_run("generate", R"({"max_ops": 4})"));   // finished
  EXPECT_FALSE(db.find_unfinished_run("generate", R"({"max_ops":3})"));    // other settings text
  EXPECT_EQ(db.find_unfinished_run("generate", R"({"max_ops": 2})")->id, other);
  EXPECT_EQ(db.find_unfinished_run("verify", settings)->id, verify);
  // Once finished it is no longer found; the most recent unfinished one wins.
  db.finish_run(a, "finished", "{}");
  EXPECT_FALSE(db.find_unfinished_run("generate", settings));
  const int64_t b = db.begin_run("generate", settings);
  const int64_t c = db.begin_run("generate", settings);
  db.finish_run(b, "failed", "{}");
  EXPECT_EQ(db.find_unfinished_run("generate", settings)->id, c);

  EXPECT_FALSE(db.get_run(12345));
  EXPECT_THROW(db.set_checkpoint(12345, "x"), DbError);
  EXPECT_THROW(db.finish_run(12345, "finished", "{}"), DbError);
  EXPECT_THROW(db.finish_run(c, "done", "{}"), DbError);  // not a status
  EXPECT_THROW(db.finish_run(c, "running", "{}"), DbError);

  const auto runs = db.list_runs();
  ASSERT_EQ(runs.size(), 6u);
  EXPECT_EQ(runs[0].run.id, a);
  EXPECT_EQ(runs[0].rules_inserted, 0);
}

// ---- schema ----

TEST(RulesDbSchema, FreshFileIsAtTheLatestVersionInWalMode) {
  TempDb tmp;
  RulesDb db = RulesDb::open(tmp.path(), true);
  EXPECT_EQ(db.schema_version(), latest_schema_version());
  EXPECT_EQ(db.path(), tmp.path());
  Raw raw(tmp.path());
  EXPECT_EQ(raw.rows("SELECT value FROM meta WHERE key = 'application'"), std::vector<std::string>{"tgr-rules"});
  EXPECT_EQ(raw.rows("SELECT value FROM meta WHERE key = 'schema_version'"),
            std::vector<std::string>{std::to_string(latest_schema_version())});
  EXPECT_EQ(raw.rows("PRAGMA journal_mode"), std::vector<std::string>{"wal"});
  EXPECT_EQ(raw.rows("SELECT name FROM sqlite_master WHERE type = 'index' AND name IN ('rules_status', 'rules_kind') ORDER BY name"),
            (std::vector<std::string>{"rules_kind", "rules_status"}));
  // Reopening changes nothing.
  RulesDb again = RulesDb::open(tmp.path(), false);
  EXPECT_EQ(again.schema_version(), latest_schema_version());
}

TEST(RulesDbSchema, MigrationsAreNumberedInOrder) {
  const auto all = migrations();
  ASSERT_GE(all.size(), 2u);
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i].version, static_cast<int>(i) + 1);
  EXPECT_EQ(latest_schema_version(), all.back().version);
}

TEST(RulesDbSchema, VersionOneFileIsMigratedOnOpen) {
  TempDb tmp;
  {
    Raw raw(tmp.path());
    raw.exec(migrations()[0].sql);
    raw.exec("INSERT INTO runs (kind) VALUES ('generate')");
    raw.exec("INSERT INTO rules (canonical, source, target, source_ops, target_ops, operators, status, generator_run) "
             "VALUES ('relu(x0) => relu(x0)', 'relu(x0)', 'relu(x0)', 1, 1, 'relu', 'proved', 1)");
    EXPECT_EQ(raw.rows("SELECT value FROM meta WHERE key = 'schema_version'"), std::vector<std::string>{"1"});
    EXPECT_TRUE(raw.rows("SELECT name FROM sqlite_master WHERE type = 'view'").empty());
  }
  RulesDb db = RulesDb::open(tmp.path(), false);
  EXPECT_EQ(db.schema_version(), latest_schema_version());
  ASSERT_EQ(db.list_rules().size(), 1u);  // data kept
  EXPECT_EQ(db.list_rules()[0].status, "proved");
  Raw raw(tmp.path());
  EXPECT_EQ(raw.rows("SELECT rule FROM proved_rules"), std::vector<std::string>{"relu(x0) => relu(x0)"});
}

// Schema 7: each cost with how it was timed; costs stored before keep their
// values, with the method not recorded ('').
TEST(RulesDbSchema, CostsOfAVersionSixFileKeepTheirValuesWithNoMethod) {
  TempDb tmp;
  {
    Raw raw(tmp.path());
    for (const Migration& m : migrations())
      if (m.version <= 6) raw.exec(m.sql);
    raw.exec("UPDATE meta SET value = '6' WHERE key = 'schema_version'");  // as the migration runner leaves it
    raw.exec("INSERT INTO op_costs (device, signature, ms) VALUES ('gpu', 'step node: relu(float:4)', 0.25)");
  }
  RulesDb db = RulesDb::open(tmp.path(), true);
  EXPECT_EQ(db.schema_version(), latest_schema_version());
  ASSERT_EQ(db.op_cost_rows("gpu").size(), 1u);
  EXPECT_EQ(db.op_cost_rows("gpu")[0].ms, 0.25);
  EXPECT_EQ(db.op_cost_rows("gpu")[0].method, "");
  // Measured again with a method: the row is replaced, method and all.
  db.put_op_cost("gpu", "step node: relu(float:4)", 0.5, "copies 8..64, spacer 65536 floats");
  db.put_op_cost("gpu", "step node: relu(float:8)", 0.75);
  const std::vector<RulesDb::OpCost> rows = db.op_cost_rows("gpu");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].signature, "step node: relu(float:4)");
  EXPECT_EQ(rows[0].ms, 0.5);
  EXPECT_EQ(rows[0].method, "copies 8..64, spacer 65536 floats");
  EXPECT_EQ(rows[1].method, "");
  EXPECT_EQ(db.op_costs("gpu").size(), 2u);
  EXPECT_TRUE(db.op_cost_rows("other").empty());
}

// Schema 8: the GPU runtime's timed choices, per device and library
// versions; a version-7 file (costs, no choices) gains the empty table.
TEST(RulesDbSchema, KernelChoicesAreKeptPerDeviceAndLibraries) {
  TempDb tmp;
  {
    Raw raw(tmp.path());
    for (const Migration& m : migrations())
      if (m.version <= 7) raw.exec(m.sql);
    raw.exec("UPDATE meta SET value = '7' WHERE key = 'schema_version'");
  }
  RulesDb db = RulesDb::open(tmp.path(), true);
  EXPECT_EQ(db.schema_version(), latest_schema_version());
  EXPECT_TRUE(db.kernel_choices("gpu", "cuDNN 91400").empty());
  db.put_kernel_choices("gpu", "cuDNN 91400", {{"conv-algo b", "1 0 0.5"}, {"conv-algo a", "6 4096 0.25"}});
  db.put_kernel_choices("gpu", "cuDNN 91400", {{"conv-algo b", "2 0 0.4"}});  // timed again: replaced
  db.put_kernel_choices("gpu", "cuDNN 90100", {{"conv-algo a", "0 0 0.3"}});
  db.put_kernel_choices("other gpu", "cuDNN 91400", {});  // nothing to store: no row
  using Rows = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(db.kernel_choices("gpu", "cuDNN 91400"),
            (Rows{{"conv-algo a", "6 4096 0.25"}, {"conv-algo b", "2 0 0.4"}}));
  EXPECT_EQ(db.kernel_choices("gpu", "cuDNN 90100"), (Rows{{"conv-algo a", "0 0 0.3"}}));
  EXPECT_TRUE(db.kernel_choices("other gpu", "cuDNN 91400").empty());
  // Read-only readers (bench) see them too.
  EXPECT_EQ(RulesDb::open_read_only(tmp.path()).kernel_choices("gpu", "cuDNN 91400").size(), 2u);
}

TEST(RulesDbSchema, NewerVersionIsRefusedNamingBothVersions) {
  TempDb tmp;
  { RulesDb::open(tmp.path(), true); }
  {
    Raw raw(tmp.path());
    raw.exec("UPDATE meta SET value = '99' WHERE key = 'schema_version'");
  }
  const std::string before = read_bytes(tmp.path());
  for (bool create : {false, true}) {
    const std::string msg = error_of([&] { RulesDb::open(tmp.path(), create); });
    EXPECT_NE(msg.find("schema version 99"), std::string::npos) << msg;
    EXPECT_NE(msg.find("version " + std::to_string(latest_schema_version())), std::string::npos) << msg;
    EXPECT_NE(msg.find(tmp.path()), std::string::npos) << msg;
  }
  EXPECT_EQ(read_bytes(tmp.path()), before);
}

TEST(RulesDbSchema, ForeignSqliteFileIsRefusedAndUntouched) {
  TempDb tmp;
  {
    Raw raw(tmp.path());
    raw.exec("CREATE TABLE foo (a INTEGER, b TEXT); INSERT INTO foo VALUES (1, 'x')");
  }
  const std::string before = read_bytes(tmp.path());
  ASSERT_FALSE(before.empty());
  for (bool create : {false, true}) {
    const std::string msg = error_of([&] { RulesDb::open(tmp.path(), create); });
    EXPECT_NE(msg.find("'" + tmp.path() + "' is not a tgr rules database ("), std::string::npos) << msg;
  }
  EXPECT_EQ(read_bytes(tmp.path()), before);
  EXPECT_FALSE(fs::exists(tmp.path() + "-wal"));

  // A meta table of another application.
  TempDb other;
  {
    Raw raw(other.path());
    raw.exec("CREATE TABLE meta (key TEXT, value TEXT); INSERT INTO meta VALUES ('application', 'photos')");
  }
  const std::string other_before = read_bytes(other.path());
  const std::string msg = error_of([&] { RulesDb::open(other.path(), true); });
  EXPECT_NE(msg.find("is not a tgr rules database (its application is 'photos'"), std::string::npos) << msg;
  EXPECT_EQ(read_bytes(other.path()), other_before);
}

TEST(RulesDbSchema, NonSqliteFilesAreRefusedAndUntouched) {
  std::mt19937 rng(7);
  std::string random_bytes(4096, '\0');
  for (char& c : random_bytes) c = static_cast<char>(rng());
  // The SQLite header followed by garbage: a damaged database.
  std::string damaged = std::string("SQLite format 3") + '\0' + random_bytes;
  for (const std::string& content : {std::string("hello, this is a text file\n"), random_bytes, damaged}) {
    TempDb tmp;
    write_bytes(tmp.path(), content);
    for (bool create : {false, true}) {
      const std::string msg = error_of([&] { RulesDb::open(tmp.path(), create); });
      EXPECT_NE(msg.find("'" + tmp.path() + "' is not a valid SQLite database"), std::string::npos) << msg;
    }
    EXPECT_EQ(read_bytes(tmp.path()), content);
    // SQLite may leave an empty WAL beside a file it opened read-only; nothing is in it.
    EXPECT_TRUE(!fs::exists(tmp.path() + "-wal") || fs::file_size(tmp.path() + "-wal") == 0);
  }
}

TEST(RulesDbSchema, MissingAndEmptyFiles) {
  TempDb tmp;
  const std::string msg = error_of([&] { RulesDb::open(tmp.path(), false); });
  EXPECT_EQ(msg, "no such database '" + tmp.path() + "'");
  EXPECT_FALSE(fs::exists(tmp.path()));

  write_bytes(tmp.path(), "");  // e.g. from mktemp
  EXPECT_NE(error_of([&] { RulesDb::open(tmp.path(), false); }).find("is not a tgr rules database (it is empty)"),
            std::string::npos);
  EXPECT_EQ(fs::file_size(tmp.path()), 0u);
  EXPECT_EQ(RulesDb::open(tmp.path(), true).schema_version(), latest_schema_version());

  EXPECT_NE(error_of([&] { RulesDb::open(fs::temp_directory_path().string(), true); }).find("is a directory"),
            std::string::npos);
}

TEST(RulesDb, MoveOnlyHandle) {
  TempDb tmp;
  RulesDb a = RulesDb::open(tmp.path(), true);
  RulesDb b = std::move(a);
  EXPECT_EQ(b.insert_rules({rule_record_from_text("relu(relu(x0)) => relu(x0)")}), 1);
  RulesDb c = RulesDb::open(tmp.path(), false);
  c = std::move(b);
  EXPECT_EQ(c.count_rules(), 1);
  static_assert(!std::is_copy_constructible_v<RulesDb>);
}

// ---- concurrency ----

TEST(RulesDbConcurrency, SecondWriterWaitsForTheFirst) {
  TempDb tmp;
  RulesDb writer = RulesDb::open(tmp.path(), true);
  RulesDb reader = RulesDb::open(tmp.path(), false);
  writer.insert_rules({rule_record_from_text("relu(relu(x0)) => relu(x0)")});

  std::promise<void> locked;
  std::atomic<bool> committed{false};
  std::thread holder([&] {
    Raw raw(tmp.path());
    raw.exec("BEGIN IMMEDIATE");
    raw.exec("INSERT INTO runs (kind) VALUES ('holder')");
    locked.set_value();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    committed = true;
    raw.exec("COMMIT");
  });
  locked.get_future().wait();

  // WAL: a reader does not wait for the writer (and sees the last commit).
  EXPECT_EQ(reader.count_rules(), 1);
  EXPECT_FALSE(reader.get_run(1));  // the holder's run is not committed yet
  EXPECT_FALSE(committed.load()) << "the read waited for the writer";

  const auto t0 = std::chrono::steady_clock::now();
  int inserted = -1;
  EXPECT_NO_THROW(inserted = writer.insert_rules({rule_record_from_text("add(x0, x1) => add(x1, x0)")}));
  const auto waited = std::chrono::steady_clock::now() - t0;
  holder.join();
  EXPECT_EQ(inserted, 1);
  EXPECT_TRUE(committed.load());
  EXPECT_GE(waited, std::chrono::milliseconds(150)) << "the insert did not wait for the other writer";
  EXPECT_EQ(reader.count_rules(), 2);
  EXPECT_EQ(reader.get_run(1)->kind, "holder");
}

TEST(RulesDbConcurrency, ManyWritersOnOneFile) {
  TempDb tmp;
  { RulesDb::open(tmp.path(), true); }
  const std::vector<std::string> texts = {"relu(relu(x0)) => relu(x0)", "add(x0, x1) => add(x1, x0)",
                                          "mul(x0, x1) => mul(x1, x0)", "tanh(tanh(x0)) => tanh(x0)"};
  std::vector<std::thread> threads;
  std::atomic<int> total{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      RulesDb db = RulesDb::open(tmp.path(), false);
      const int64_t run = db.begin_run("generate", "{\"thread\": " + std::to_string(t) + "}");
      for (int i = 0; i < 20; ++i) {
        RuleRecord r = rule_record_from_text(texts[static_cast<size_t>(i + t) % texts.size()]);
        r.generator_run = run;
        total += db.insert_rules({r});
        db.set_checkpoint(run, std::to_string(i));
      }
      db.finish_run(run, "finished", "{}");
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(total.load(), 4);
  EXPECT_EQ(RulesDb::open(tmp.path(), false).count_rules(), 4);
}

TEST(RulesDbConcurrency, ManyProcessesCreateOneFile) {
  // Threads stand for processes: each opens (and maybe creates) the same new
  // file at once; exactly one schema results and every handle works.
  for (int round = 0; round < 5; ++round) {
    TempDb tmp;
    std::vector<std::thread> threads;
    std::atomic<int> ok{0};
    std::vector<std::string> errors(6);
    for (size_t t = 0; t < errors.size(); ++t)
      threads.emplace_back([&, t] {
        try {
          RulesDb db = RulesDb::open(tmp.path(), true);
          if (db.schema_version() == latest_schema_version()) ++ok;
          db.insert_rules({rule_record_from_text("relu(relu(x0)) => relu(x0)")});
        } catch (const std::exception& e) {
          errors[t] = e.what();
        }
      });
    for (auto& th : threads) th.join();
    for (const auto& e : errors) EXPECT_EQ(e, "");
    EXPECT_EQ(ok.load(), static_cast<int>(errors.size()));
    EXPECT_EQ(RulesDb::open(tmp.path(), false).count_rules(), 1);
  }
}

// ---- views ----

TEST(RulesDbViews, PlainSqliteQueries) {
  TempDb tmp;
  {
    RulesDb db = RulesDb::open(tmp.path(), true);
    const int64_t run1 = db.begin_run("generate", "{}");
    const int64_t run2 = db.begin_run("generate", "{\"max_ops\": 3}");
    std::vector<RuleRecord> rules = {
        rule_record_from_text("relu(relu(x0)) => relu(x0)"),
        rule_record_from_text("matmul(matmul(x0, w0), w1) => matmul(x0, matmul(w0, w1))"),
        rule_record_from_text("add(x0, x1) => add(x1, x0)"),
    };
    rules[0].status = "proved";
    rules[0].axioms = "relu_idem";
    rules[0].proof_ms = 1.5;
    rules[1].status = "proved";
    rules[1].axioms = "matmul_assoc";
    rules[1].proof_ms = 2;
    rules[0].generator_run = rules[1].generator_run = run1;
    rules[2].generator_run = run2;
    db.insert_rules(rules);
    db.finish_run(run1, "finished", "{}");
  }
  Raw raw(tmp.path());
  EXPECT_EQ(raw.rows("SELECT * FROM proved_rules"),
            (std::vector<std::string>{"1|relu(relu(x0)) => relu(x0)|2|1|relu_idem|1.5",
                                      "2|matmul(matmul(x0, w0), w1) => matmul(x0, matmul(w0, w1))|2|2|matmul_assoc|2.0"}));
  EXPECT_EQ(raw.rows("SELECT * FROM rule_counts_by_status"), (std::vector<std::string>{"candidate|1", "proved|2"}));
  EXPECT_EQ(raw.rows("SELECT * FROM rule_counts_by_size"), (std::vector<std::string>{"1|1|1", "2|1|1", "2|2|1"}));
  const auto runs = raw.rows("SELECT id, kind, status, finished_at IS NOT NULL, rules_inserted FROM run_summary");
  EXPECT_EQ(runs, (std::vector<std::string>{"1|generate|finished|1|2", "2|generate|running|0|1"}));
  EXPECT_EQ(raw.rows("SELECT COUNT(*) FROM run_summary WHERE started_at LIKE '____-__-__T__:__:__.___Z'"),
            std::vector<std::string>{"2"});
}

// Canonicalising renames variables (here outputs are reordered, so k0 and k1
// trade names); each variable's shape must move with it.
TEST(RuleRecordFromText, ShapesFollowTheCanonicalRenaming) {
  const RuleRecord r = rule_record_from_text(
      "(relu(conv2d(i0, k0)), conv2d(i0, k1)) => (relu(split[axis=1, sizes=2x3](conv2d(i0, concat[axis=0](k0, k1))).0), "
      "split[axis=1, sizes=2x3](conv2d(i0, concat[axis=0](k0, k1))).1)",
      "i0=1x4x5x5,k0=2x4x3x3,k1=3x4x3x3");
  ASSERT_EQ(r.canonical.rfind("(conv2d(i0, k0), relu(conv2d(i0, k1)))", 0), 0u) << r.canonical;
  EXPECT_EQ(r.variables, "i0=1x4x5x5,k1=2x4x3x3,k0=3x4x3x3");
  // Both sides build at the renamed shapes.
  const ShapeMap shapes = parse_shape_map(r.variables);
  EXPECT_NO_THROW(build_graph(r.source, shapes));
  EXPECT_NO_THROW(build_graph(r.target, shapes));
}

// ---- reliability: damaged files, runs whose process died, concurrent runs, read-only use ----

namespace reliability {

// A database of `n` rules with long notes (many pages), closed (its WAL
// checkpointed into the file).
void fill(const std::string& path, int n) {
  RulesDb db = RulesDb::open(path, true);
  std::vector<RuleRecord> rules;
  for (int i = 0; i < n; ++i) {
    RuleRecord r = rule_record_from_text("relu(relu(x0)) => relu(x0)");
    r.canonical += " #" + std::to_string(i);  // distinct keys
    r.note = std::string(300, static_cast<char>('a' + i % 26));
    rules.push_back(r);
  }
  db.insert_rules(rules);
}

TEST(RulesDbReliability, DamagedFileIsRefusedBeforeWritingAndLeftUntouched) {
  TempDb tmp;
  fill(tmp.path(), 400);
  // Garbage over the middle of the last page (a leaf of the rules table):
  // opening reads only page 1 and meta, so only an integrity check sees it.
  std::string bytes = read_bytes(tmp.path());
  constexpr size_t kPage = 4096;
  ASSERT_GT(bytes.size(), 4 * kPage);
  for (size_t i = bytes.size() - kPage + 16; i < bytes.size() - 16; ++i) bytes[i] = static_cast<char>(0xA5);
  write_bytes(tmp.path(), bytes);
  for (bool create : {false, true}) {
    const std::string msg = error_of([&] { RulesDb::open(tmp.path(), create); });
    EXPECT_TRUE(msg.find("is damaged") != std::string::npos ||
                msg.find("not a valid SQLite database") != std::string::npos)
        << msg;
    EXPECT_NE(msg.find(tmp.path()), std::string::npos) << msg;
    EXPECT_EQ(read_bytes(tmp.path()), bytes);
    // SQLite may leave an empty WAL beside a file it opened read-only; nothing is in it.
    EXPECT_TRUE(!fs::exists(tmp.path() + "-wal") || fs::file_size(tmp.path() + "-wal") == 0);
  }
}

// Runs `child` in a forked process that then exits without any cleanup
// (as a killed process would); returns its pid after it has exited.
template <class F>
pid_t in_dead_process(F child) {
  const pid_t pid = fork();
  if (pid == 0) {
    child();
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return pid;
}

TEST(RulesDbReliability, RunOfADeadProcessIsMarkedFailedOnTheNextOpen) {
  TempDb tmp;
  RulesDb::open(tmp.path(), true);
  const pid_t pid = in_dead_process([&] { RulesDb::open(tmp.path(), false).begin_run("generate", "{}"); });
  RulesDb db = RulesDb::open(tmp.path(), false);
  const auto run = db.get_run(1);
  ASSERT_TRUE(run);
  EXPECT_EQ(run->status, "failed");
  EXPECT_NE(run->finished_at, "");
  EXPECT_NE(run->stats.find("process " + std::to_string(pid) + " on "), std::string::npos) << run->stats;
  EXPECT_NE(run->stats.find("ended without finishing the run"), std::string::npos) << run->stats;
  // It can be resumed like an interrupted run.
  const ClaimedRun again = db.claim_run("generate", "{}", {"generate"});
  EXPECT_TRUE(again.resumed);
  EXPECT_EQ(again.run.id, 1);
  EXPECT_EQ(db.get_run(1)->status, "running");
}

TEST(RulesDbReliability, ASecondProcessDoesNotJoinALiveRun) {
  TempDb tmp;
  RulesDb::open(tmp.path(), true);
  int ready[2], release[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(release), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    RulesDb db = RulesDb::open(tmp.path(), false);
    db.claim_run("generate", R"({"max_ops":3})", {"generate"});
    char c = 1;
    if (write(ready[1], &c, 1) != 1 || read(release[0], &c, 1) != 1) _exit(1);
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  RulesDb db = RulesDb::open(tmp.path(), false);
  const std::string msg = error_of([&] { db.claim_run("generate", R"({"max_ops":3})", {"generate"}); });
  EXPECT_NE(msg.find("generate run 1 is being executed by process " + std::to_string(pid)), std::string::npos) << msg;
  // verify waits for no generate: it would prove a part of the rules.
  EXPECT_NE(error_of([&] {
              db.claim_run("verify", "{}", {"generate", "verify"});
            }).find("generate run 1"),
            std::string::npos);
  EXPECT_EQ(db.get_run(1)->status, "running");
  ASSERT_EQ(write(release[1], &c, 1), 1);
  int status = 0;
  waitpid(pid, &status, 0);
  const ClaimedRun claimed = db.claim_run("generate", R"({"max_ops":3})", {"generate"});
  EXPECT_TRUE(claimed.resumed);
  EXPECT_EQ(claimed.run.id, 1);
  for (int fd : {ready[0], ready[1], release[0], release[1]}) close(fd);
}

TEST(RulesDbReliability, ReadOnlyOpenWorksWhereTheWalIndexCannotBeMade) {
  // A folder only for this test, made read-only (as for a user who does not
  // own it); a directory in place of the -shm file stops SQLite from making
  // its WAL index even for root, who ignores permission bits.
  const fs::path dir = fs::temp_directory_path() / ("tgr_ro_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "rules.db").string();
  fill(path, 5);
  {
    RulesDb db = RulesDb::open(path, false);
    db.begin_run("verify", "{}");
  }
  ASSERT_FALSE(fs::exists(path + "-wal"));
  fs::create_directory(path + "-shm");
  fs::permissions(path, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read | fs::perms::group_exec |
                           fs::perms::others_read | fs::perms::others_exec);
  const std::string before = read_bytes(path);
  std::string error;
  try {
    const RulesDb db = RulesDb::open_read_only(path);
    EXPECT_EQ(db.count_rules(), 5);
    EXPECT_EQ(db.list_runs().size(), 1u);
    EXPECT_EQ(db.schema_version(), latest_schema_version());
  } catch (const DbError& e) {
    error = e.what();
  }
  EXPECT_EQ(error, "");
  EXPECT_EQ(read_bytes(path), before);
  fs::permissions(dir, fs::perms::owner_all);
  fs::remove_all(dir);
}

}  // namespace reliability

}  // namespace
}  // namespace tgr::rules_db
