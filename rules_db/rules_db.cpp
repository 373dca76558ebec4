#include "rules_db/rules_db.h"

#include <signal.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "ir/canonical.h"
#include "ir/text.h"
#include "rules_db/schema.h"
#include "util/version.h"

namespace tgr::rules_db {

namespace {

constexpr int kBusyTimeoutMs = 30'000;

std::string quote_path(const std::string& path) { return "'" + path + "'"; }

// An SQLite failure as a DbError naming the file; a file that is not a
// database or is damaged gets the message the tools promise.
[[noreturn]] void fail(sqlite3* db, int rc, const std::string& path, const std::string& what) {
  const char* msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  const int primary = rc & 0xff;
  if (primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT)
    throw DbError(quote_path(path) + " is not a valid SQLite database (" + msg + ")");
  throw DbError(quote_path(path) + ": " + what + ": " + msg);
}

// One prepared statement (RAII). Text columns that are NULL read as "".
class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& path, const char* sql) : db_(db), path_(path) {
    const int rc = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
    if (rc != SQLITE_OK) fail(db, rc, path, "preparing a query");
  }
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& bind(int i, const std::string& v) { return check(sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT)); }
  Stmt& bind(int i, int64_t v) { return check(sqlite3_bind_int64(stmt_, i, v)); }
  Stmt& bind(int i, int v) { return check(sqlite3_bind_int(stmt_, i, v)); }
  Stmt& bind(int i, double v) { return check(sqlite3_bind_double(stmt_, i, v)); }
  Stmt& bind_null(int i) { return check(sqlite3_bind_null(stmt_, i)); }
  template <class T>
  Stmt& bind(int i, const std::optional<T>& v) {
    return v ? bind(i, *v) : bind_null(i);
  }

  // true: a row is ready; false: done.
  bool step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail(db_, rc, path_, "running a query");
  }
  void run() {
    while (step()) {
    }
  }
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }

  bool is_null(int c) const { return sqlite3_column_type(stmt_, c) == SQLITE_NULL; }
  int64_t i64(int c) const { return sqlite3_column_int64(stmt_, c); }
  double f64(int c) const { return sqlite3_column_double(stmt_, c); }
  std::string text(int c) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, c));
    return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt_, c))) : std::string();
  }
  std::optional<std::string> opt_text(int c) const {
    if (is_null(c)) return std::nullopt;
    return text(c);
  }

 private:
  Stmt& check(int rc) {
    if (rc != SQLITE_OK) fail(db_, rc, path_, "binding a parameter");
    return *this;
  }
  sqlite3* db_;
  const std::string& path_;
  sqlite3_stmt* stmt_ = nullptr;
};

void exec(sqlite3* db, const std::string& path, const char* sql, const char* what) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    const std::string msg = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    const int primary = rc & 0xff;
    if (primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT)
      throw DbError(quote_path(path) + " is not a valid SQLite database (" + msg + ")");
    throw DbError(quote_path(path) + ": " + what + ": " + msg);
  }
}

// A write transaction. BEGIN IMMEDIATE takes the write lock at once (waiting
// up to the busy timeout for another writer): a deferred transaction that
// reads first and writes later can fail with SQLITE_BUSY in WAL mode without
// ever calling the busy handler.
class WriteTransaction {
 public:
  WriteTransaction(sqlite3* db, const std::string& path) : db_(db), path_(path) {
    exec(db, path, "BEGIN IMMEDIATE", "starting a write transaction");
  }
  ~WriteTransaction() {
    if (!done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  WriteTransaction(const WriteTransaction&) = delete;
  WriteTransaction& operator=(const WriteTransaction&) = delete;
  void commit() {
    exec(db_, path_, "COMMIT", "committing");
    done_ = true;
  }

 private:
  sqlite3* db_;
  const std::string& path_;
  bool done_ = false;
};

// A database is a regular file: a FIFO would block the first read forever,
// and SQLite would create DEVICE-journal beside a device.
void refuse_special_file(const std::filesystem::file_status& st, const std::string& path) {
  if (!std::filesystem::is_regular_file(st))
    throw DbError(quote_path(path) + " is not a regular file (a FIFO, device or socket), not a rules database");
}

struct Handle {
  sqlite3* db = nullptr;
  ~Handle() { sqlite3_close_v2(db); }
};

sqlite3* open_handle(const std::string& path, int flags, Handle& h) {
  const int rc = sqlite3_open_v2(path.c_str(), &h.db, flags, nullptr);
  if (rc != SQLITE_OK) fail(h.db, rc, path, "cannot open");
  sqlite3_extended_result_codes(h.db, 1);
  sqlite3_busy_timeout(h.db, kBusyTimeoutMs);
  return h.db;
}

bool table_exists(sqlite3* db, const std::string& path, const char* name) {
  Stmt s(db, path, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?");
  s.bind(1, std::string(name));
  return s.step();
}

int64_t object_count(sqlite3* db, const std::string& path) {
  Stmt s(db, path, "SELECT COUNT(*) FROM sqlite_master");
  s.step();
  return s.i64(0);
}

std::optional<std::string> meta_value(sqlite3* db, const std::string& path, const char* key) {
  Stmt s(db, path, "SELECT value FROM meta WHERE key = ?");
  s.bind(1, std::string(key));
  if (!s.step()) return std::nullopt;
  return s.text(0);
}

// The schema version of a database that has a `meta` table; throws when the
// file belongs to another application or is newer than this program.
int checked_version(sqlite3* db, const std::string& path) {
  const auto app = meta_value(db, path, "application");
  if (!app) throw DbError(quote_path(path) + " is not a tgr rules database (its meta table has no 'application')");
  if (*app != kApplication)
    throw DbError(quote_path(path) + " is not a tgr rules database (its application is '" + *app + "', expected '" +
                  kApplication + "')");
  const auto text = meta_value(db, path, "schema_version");
  int version = 0;
  try {
    size_t used = 0;
    version = text ? std::stoi(*text, &used) : 0;
    if (!text || used != text->size() || version < 1) throw std::invalid_argument("");
  } catch (const std::invalid_argument&) {  // from std::stoi and the checks above
    throw DbError(quote_path(path) + " is not a tgr rules database (bad schema_version '" + text.value_or("") + "')");
  } catch (const std::out_of_range&) {  // from std::stoi
    throw DbError(quote_path(path) + " is not a tgr rules database (bad schema_version '" + text.value_or("") + "')");
  }
  if (version > latest_schema_version())
    throw DbError(quote_path(path) + " has schema version " + std::to_string(version) +
                  ", newer than this program's version " + std::to_string(latest_schema_version()) +
                  " (use a newer tgr)");
  return version;
}

// Several reads from one snapshot: a read transaction, unless one is open.
class ReadSnapshot {
 public:
  ReadSnapshot(sqlite3* db, const std::string& path) : db_(db), own_(sqlite3_get_autocommit(db) != 0) {
    if (own_) exec(db, path, "BEGIN", "starting a read transaction");
  }
  ~ReadSnapshot() {
    if (own_) sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr);
  }
  ReadSnapshot(const ReadSnapshot&) = delete;
  ReadSnapshot& operator=(const ReadSnapshot&) = delete;

 private:
  sqlite3* db_;
  bool own_;
};

// The version of a database without a meta table: 0 when it holds nothing
// (a new file), else it is someone else's file. One snapshot: another process
// may be creating the schema meanwhile.
int version_of(sqlite3* db, const std::string& path) {
  ReadSnapshot snapshot(db, path);
  if (table_exists(db, path, "meta")) return checked_version(db, path);
  if (object_count(db, path) == 0) return 0;
  throw DbError(quote_path(path) + " is not a tgr rules database (it has no meta table)");
}

// Refuses a file that does not start with SQLite's header (an empty file
// passes: it is an empty database to SQLite).
void check_header(const std::string& path) {
  {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw DbError("cannot read " + quote_path(path));
    std::array<char, 16> header{};
    in.read(header.data(), header.size());
    const auto got = in.gcount();
    // An empty file is an empty database to SQLite (a new one: it may have
    // pages in a -wal file already, while another process creates it).
    static constexpr char kMagic[16] = "SQLite format 3";  // with its final NUL
    if (got > 0 && (got < 16 || !std::equal(header.begin(), header.end(), kMagic)))
      throw DbError(quote_path(path) + " is not a valid SQLite database (no SQLite header)");
  }
}

// Files up to this size get PRAGMA integrity_check before a write, larger
// ones the faster quick_check (which skips the index contents).
constexpr uintmax_t kFullCheckBytes = 64u << 20;

// Refuses a damaged file before anything writes to it: a damaged page that
// opening does not read would otherwise be written around (and the damage
// spread) by generate or verify.
void check_integrity(sqlite3* db, const std::string& path) {
  std::error_code ec;
  const uintmax_t bytes = std::filesystem::file_size(path, ec);
  const bool full = !ec && bytes <= kFullCheckBytes;
  Stmt s(db, path, full ? "PRAGMA integrity_check(3)" : "PRAGMA quick_check(3)");
  std::string problems;
  while (s.step()) {
    const std::string row = s.text(0);
    if (row == "ok") continue;
    problems += (problems.empty() ? "" : "; ") + row;
  }
  if (!problems.empty())
    throw DbError(quote_path(path) + " is damaged (PRAGMA " + (full ? "integrity_check" : "quick_check") + ": " +
                  problems + "); it was not changed");
}

// Looks at an existing file without writing to it: its schema version, 0 for
// an empty file (or an SQLite file with no tables). Throws for a file that is
// not SQLite, is damaged, belongs to another application or is too new.
int inspect_read_only(const std::string& path) {
  check_header(path);
  Handle h;
  sqlite3* db = open_handle(path, SQLITE_OPEN_READONLY, h);
  const int version = version_of(db, path);
  if (version > 0) check_integrity(db, path);
  return version;
}

// A path as an SQLite URI ("file:" and the path with '%', '?' and '#'
// escaped), for the immutable=1 read-only fallback.
std::string file_uri(const std::string& path) {
  std::string uri = "file:";
  for (const char c : path) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '/' || c == '.' || c == '-' || c == '_' || c == '~') {
      uri += c;
    } else {
      static constexpr char kHex[] = "0123456789ABCDEF";
      uri += '%';
      uri += kHex[u >> 4];
      uri += kHex[u & 15];
    }
  }
  return uri;
}

std::string now_sql() { return "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"; }

// ---- run owners ----

std::string host_name() {
  std::array<char, 256> name{};
  if (gethostname(name.data(), name.size() - 1) != 0) return "unknown-host";
  return name.data();
}

// A process's start time (clock ticks since boot, /proc/PID/stat field 22);
// "" when there is no such process; "?" when it cannot be read (no /proc).
std::string process_start(long pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  if (!in) {
    if (kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM) return "?";
    return "";
  }
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = stat.rfind(')');  // the command name may hold spaces and parentheses
  if (close == std::string::npos) return "?";
  std::istringstream fields(stat.substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
  }
  return field.empty() ? "?" : field;
}

// This process, as stored in runs.owner. Not cached: a forked child is
// another process.
std::string own_owner() {
  const long pid = static_cast<long>(getpid());
  return host_name() + " " + std::to_string(pid) + " " + process_start(pid);
}

enum class Liveness { kAlive, kGone, kUnknown };

// Whether the process an owner text names still runs: only a process of this
// host can be looked at; an owner written by an older program is unknown.
Liveness owner_liveness(const std::string& owner) {
  std::istringstream in(owner);
  std::string host, start;
  long pid = 0;
  if (!(in >> host >> pid >> start) || pid <= 0) return Liveness::kUnknown;
  if (host != host_name()) return Liveness::kUnknown;
  const std::string now = process_start(pid);
  if (now.empty()) return Liveness::kGone;
  if (now == "?" || start == "?") return Liveness::kAlive;
  return now == start ? Liveness::kAlive : Liveness::kGone;
}

std::string owner_words(const std::string& owner) {
  std::istringstream in(owner);
  std::string host, pid;
  in >> host >> pid;
  return "process " + pid + " on " + host;
}

// Marks the runs whose process died while they were 'running' (killed, out
// of memory, disk full) as 'failed', saying so in their stats. Inside the
// caller's write transaction.
void mark_dead_runs(sqlite3* db, const std::string& path) {
  std::vector<std::pair<int64_t, std::string>> dead;
  {
    Stmt s(db, path, "SELECT id, owner FROM runs WHERE status = 'running' AND owner IS NOT NULL");
    while (s.step())
      if (owner_liveness(s.text(1)) == Liveness::kGone) dead.emplace_back(s.i64(0), s.text(1));
  }
  const std::string sql = "UPDATE runs SET status = 'failed', finished_at = " + now_sql() +
                          ", stats = json_set(CASE WHEN json_valid(stats) THEN stats ELSE '{}' END, '$.ended', ?) "
                          "WHERE id = ? AND status = 'running' AND owner = ?";
  Stmt u(db, path, sql.c_str());
  for (const auto& [id, owner] : dead) {
    u.reset();
    u.bind(1, "the " + owner_words(owner) + " ended without finishing the run").bind(2, id).bind(3, owner).run();
  }
}

// ---- rows ----

constexpr const char* kRuleColumns =
    "id, canonical, source, target, variables, constraints, source_ops, target_ops, operators, kind, status, "
    "proof_ms, axioms, counterexample, region_map, correction, note, generator_run, created_at";

RuleRecord read_rule(const Stmt& s) {
  RuleRecord r;
  r.id = s.i64(0);
  r.canonical = s.text(1);
  r.source = s.text(2);
  r.target = s.text(3);
  r.variables = s.text(4);
  r.constraints = s.text(5);
  r.source_ops = static_cast<int>(s.i64(6));
  r.target_ops = static_cast<int>(s.i64(7));
  r.operators = s.text(8);
  r.kind = s.text(9);
  r.status = s.text(10);
  if (!s.is_null(11)) r.proof_ms = s.f64(11);
  r.axioms = s.opt_text(12);
  r.counterexample = s.opt_text(13);
  r.region_map = s.opt_text(14);
  r.correction = s.opt_text(15);
  r.note = s.opt_text(16);
  r.generator_run = s.is_null(17) ? 0 : s.i64(17);
  r.created_at = s.text(18);
  return r;
}

std::optional<std::string> null_if_empty(const std::string& text) {
  return text.empty() ? std::nullopt : std::optional<std::string>(text);
}

constexpr const char* kRunColumns =
    "id, kind, settings, started_at, finished_at, status, stats, checkpoint, tool_version, axioms_hash, space";
constexpr int kRunColumnCount = 11;

RunRecord read_run(const Stmt& s) {
  RunRecord r;
  r.id = s.i64(0);
  r.kind = s.text(1);
  r.settings = s.text(2);
  r.started_at = s.text(3);
  r.finished_at = s.text(4);
  r.status = s.text(5);
  r.stats = s.text(6);
  r.checkpoint = s.text(7);
  r.tool_version = s.text(8);
  r.axioms_hash = s.text(9);
  r.space = s.text(10);
  return r;
}

void count_calls(const Expr& e, std::set<std::string>& nodes, std::set<std::string>& ops) {
  if (e.kind != Expr::Kind::kCall) return;
  Expr node = e;
  node.output = -1;  // split(x).0 and split(x).1 are one node
  nodes.insert(to_text(node));
  ops.insert(e.name);
  for (const Expr& a : e.args) count_calls(a, nodes, ops);
}

}  // namespace

// ---- free functions ----

RuleRecord rule_record_from_text(std::string_view rule_text, std::string variables) {
  RuleRecord r;
  // The canonical text renames variables; their shapes follow them.
  std::map<std::string, std::string> renaming;
  r.canonical = canonical_rule_text(parse_rule_expr(rule_text), true, true, &renaming);
  std::string renamed;
  for (size_t at = 0; at < variables.size();) {
    size_t comma = variables.find(',', at);
    if (comma == std::string::npos) comma = variables.size();
    std::string entry = variables.substr(at, comma - at);
    const size_t eq = entry.find('=');
    if (eq != std::string::npos) {
      std::string name = entry.substr(0, eq);
      name.erase(0, name.find_first_not_of(' '));
      name.erase(name.find_last_not_of(' ') + 1);
      if (auto it = renaming.find(name); it != renaming.end()) entry = it->second + entry.substr(eq);
    }
    if (!renamed.empty()) renamed += ',';
    renamed += entry;
    at = comma + 1;
  }
  variables = std::move(renamed);
  const size_t arrow = r.canonical.find(" => ");
  if (arrow == std::string::npos) throw DbError("canonical rule text without ' => ': " + r.canonical);
  r.source = r.canonical.substr(0, arrow);
  r.target = r.canonical.substr(arrow + 4);
  std::set<std::string> ops;
  for (auto [side, count] : {std::pair{&r.source, &r.source_ops}, std::pair{&r.target, &r.target_ops}}) {
    std::set<std::string> nodes;
    for (const Expr& e : parse_tuple(*side)) count_calls(e, nodes, ops);
    *count = static_cast<int>(nodes.size());
  }
  for (const std::string& op : ops) r.operators += (r.operators.empty() ? "" : ",") + op;
  r.variables = std::move(variables);
  return r;
}

// ---- RulesDb ----

void RulesDb::Closer::operator()(sqlite3* db) const { sqlite3_close_v2(db); }

RulesDb::RulesDb(std::string path, sqlite3* db) : path_(std::move(path)), db_(db) {}

RulesDb RulesDb::open(const std::string& path, bool create) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) {
    if (!create) throw DbError("no such database " + quote_path(path));
  } else {
    if (fs::is_directory(st)) throw DbError(quote_path(path) + " is a directory, not a rules database");
    refuse_special_file(st, path);
    // Check before writing anything: a foreign or damaged file stays as it is.
    if (inspect_read_only(path) == 0 && !create)
      throw DbError(quote_path(path) + " is not a tgr rules database (it is empty)");
  }

  Handle h;
  sqlite3* db = open_handle(path, SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0), h);
  exec(db, path, "PRAGMA foreign_keys = ON", "enabling foreign keys");
  // Migrate: check without the write lock first (the usual case: up to date),
  // then again under BEGIN IMMEDIATE, since another process may be migrating.
  // Before the switch to WAL below, which rewrites the file's header: a
  // migration that fails rolls back and leaves the file byte for byte as it was.
  if (version_of(db, path) < latest_schema_version()) {
    WriteTransaction t(db, path);
    const int from = version_of(db, path);
    for (const Migration& m : migrations()) {
      if (m.version <= from) continue;
      exec(db, path, m.sql, ("migrating to schema version " + std::to_string(m.version)).c_str());
      Stmt s(db, path, "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)");
      s.bind(1, std::to_string(m.version)).run();
    }
    t.commit();
  }
  // Persistent in the file. Readers do not block the writer and the writer
  // does not block readers; NORMAL sync is safe in WAL mode (a power cut may
  // lose the last commits, never corrupt the file).
  // Switching to WAL takes an exclusive lock for a moment, and SQLite may
  // answer SQLITE_BUSY without calling the busy handler while another
  // process creates or switches the same file (seen with six processes
  // opening one new file on a loaded machine); so the switch is retried for
  // up to the busy timeout, then a failure is reported as before.
  constexpr int kWalRetryMs = 10;
  for (int waited = 0; waited < kBusyTimeoutMs; waited += kWalRetryMs) {
    const int rc = sqlite3_exec(db, "PRAGMA journal_mode = WAL", nullptr, nullptr, nullptr);
    if ((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(kWalRetryMs));
  }
  exec(db, path, "PRAGMA journal_mode = WAL", "enabling WAL mode");
  exec(db, path, "PRAGMA synchronous = NORMAL", "setting synchronous mode");

  {
    // Runs whose process died stay 'running' otherwise, and would block or
    // mislead every later run.
    bool any = false;
    {
      Stmt s(db, path, "SELECT 1 FROM runs WHERE status = 'running' AND owner IS NOT NULL LIMIT 1");
      any = s.step();
    }
    if (any) {
      WriteTransaction t(db, path);
      mark_dead_runs(db, path);
      t.commit();
    }
  }
  RulesDb out(path, db);
  h.db = nullptr;
  return out;
}

RulesDb RulesDb::open_read_only(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) throw DbError("no such database " + quote_path(path));
  if (fs::is_directory(st)) throw DbError(quote_path(path) + " is a directory, not a rules database");
  refuse_special_file(st, path);
  check_header(path);
  // A WAL file needs its -shm (and the right to create it) even to be read;
  // in a read-only folder, or a file of another user, that fails. Then the
  // file is read as immutable (nobody can be writing it where we cannot),
  // unless a -wal holds committed changes, which immutable=1 would not see.
  Handle h;
  int rc = sqlite3_open_v2(path.c_str(), &h.db, SQLITE_OPEN_READONLY, nullptr);
  if (rc == SQLITE_OK) rc = sqlite3_exec(h.db, "SELECT COUNT(*) FROM sqlite_master", nullptr, nullptr, nullptr);
  const int primary = rc & 0xff;
  if (primary == SQLITE_CANTOPEN || primary == SQLITE_READONLY || primary == SQLITE_IOERR || primary == SQLITE_PERM) {
    sqlite3_close_v2(h.db);
    h.db = nullptr;
    // immutable=1 reads the main file alone: committed transactions still in
    // a -wal would be missed (a rule found "not found"), so that is refused.
    if (const uintmax_t wal_bytes = fs::file_size(path + "-wal", ec); !ec && wal_bytes > 0)
      throw DbError(quote_path(path) + " has committed changes in " + quote_path(path + "-wal") +
                    " that SQLite cannot read here (it needs " + quote_path(path + "-shm") +
                    ", which is missing and cannot be created in this folder); open the database once where it "
                    "can be written, which moves them into the file");
    rc = sqlite3_open_v2((file_uri(path) + "?immutable=1").c_str(), &h.db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI,
                         nullptr);
  }
  if (rc != SQLITE_OK && rc != SQLITE_ROW) fail(h.db, rc, path, "cannot open");
  sqlite3_extended_result_codes(h.db, 1);
  sqlite3_busy_timeout(h.db, kBusyTimeoutMs);
  const int version = version_of(h.db, path);
  if (version == 0) throw DbError(quote_path(path) + " is not a tgr rules database (it is empty)");
  if (version < latest_schema_version()) {
    // An older schema: migrate it, which needs write access.
    try {
      return open(path, false);
    } catch (const DbError& e) {
      throw DbError(std::string(e.what()) + " (it has schema version " + std::to_string(version) +
                    ", older than this program's " + std::to_string(latest_schema_version()) +
                    ": open it once with write access to migrate it)");
    }
  }
  RulesDb out(path, h.db);
  h.db = nullptr;
  return out;
}

int RulesDb::schema_version() const {
  const auto v = meta_value(db_.get(), path_, "schema_version");
  return v ? std::stoi(*v) : 0;
}

int64_t RulesDb::begin_run(const std::string& kind, const std::string& settings_json) {
  WriteTransaction t(db_.get(), path_);
  Stmt s(db_.get(), path_,
         "INSERT INTO runs (kind, settings, status, owner, tool_version) VALUES (?, ?, 'running', ?, ?)");
  s.bind(1, kind).bind(2, settings_json).bind(3, own_owner()).bind(4, std::string(tgr::version())).run();
  const int64_t id = sqlite3_last_insert_rowid(db_.get());
  t.commit();
  return id;
}

ClaimedRun RulesDb::claim_run(const std::string& kind, const std::string& settings_json,
                              const std::vector<std::string>& busy_kinds, const std::string& axioms_hash) {
  // One write transaction: two processes starting at once cannot both find
  // no live run and both go on.
  WriteTransaction t(db_.get(), path_);
  mark_dead_runs(db_.get(), path_);
  const std::string me = own_owner();
  {
    Stmt s(db_.get(), path_,
           (std::string("SELECT ") + kRunColumns + ", owner FROM runs WHERE status = 'running' ORDER BY id").c_str());
    while (s.step()) {
      const RunRecord r = read_run(s);
      const std::string owner = s.text(kRunColumnCount);
      if (std::find(busy_kinds.begin(), busy_kinds.end(), r.kind) == busy_kinds.end()) continue;
      if (owner.empty() || owner_liveness(owner) == Liveness::kGone) continue;  // older program: cannot tell
      throw DbError(quote_path(path_) + ": " + r.kind + " run " + std::to_string(r.id) + " is being executed by " +
                    (owner == me ? std::string("this process") : owner_words(owner)) +
                    "; wait until it ends (or stop it) and start this " + kind + " again");
    }
  }
  ClaimedRun out;
  if (auto unfinished = find_unfinished_run(kind, settings_json)) {
    // The version and axioms of the program that resumes it (the last to write its rules).
    Stmt s(db_.get(), path_,
           "UPDATE runs SET status = 'running', owner = ?, finished_at = NULL, tool_version = ?, axioms_hash = ? "
           "WHERE id = ?");
    s.bind(1, own_owner()).bind(2, std::string(tgr::version())).bind(3, null_if_empty(axioms_hash));
    s.bind(4, unfinished->id).run();
    out.run = *unfinished;
    out.resumed = true;
  } else {
    Stmt s(db_.get(), path_,
           "INSERT INTO runs (kind, settings, status, owner, tool_version, axioms_hash) "
           "VALUES (?, ?, 'running', ?, ?, ?)");
    s.bind(1, kind).bind(2, settings_json).bind(3, own_owner()).bind(4, std::string(tgr::version()));
    s.bind(5, null_if_empty(axioms_hash)).run();
    out.run.id = sqlite3_last_insert_rowid(db_.get());
    out.run.kind = kind;
    out.run.settings = settings_json;
  }
  out.run.status = "running";
  t.commit();
  return out;
}

void RulesDb::set_checkpoint(int64_t run, const std::string& checkpoint) {
  WriteTransaction t(db_.get(), path_);
  Stmt s(db_.get(), path_, "UPDATE runs SET checkpoint = ? WHERE id = ?");
  s.bind(1, checkpoint).bind(2, run).run();
  if (sqlite3_changes(db_.get()) == 0) throw DbError(quote_path(path_) + ": no run " + std::to_string(run));
  t.commit();
}

void RulesDb::set_run_space(int64_t run, const std::string& space_text) {
  WriteTransaction t(db_.get(), path_);
  Stmt s(db_.get(), path_, "UPDATE runs SET space = ? WHERE id = ?");
  s.bind(1, space_text).bind(2, run).run();
  if (sqlite3_changes(db_.get()) == 0) throw DbError(quote_path(path_) + ": no run " + std::to_string(run));
  t.commit();
}

void RulesDb::finish_run(int64_t run, const std::string& status, const std::string& stats_json) {
  if (status == "running") throw DbError("finish_run: status 'running' does not finish a run");
  WriteTransaction t(db_.get(), path_);
  const std::string sql = "UPDATE runs SET status = ?, stats = ?, finished_at = " + now_sql() + " WHERE id = ?";
  Stmt s(db_.get(), path_, sql.c_str());
  s.bind(1, status).bind(2, stats_json).bind(3, run).run();
  if (sqlite3_changes(db_.get()) == 0) throw DbError(quote_path(path_) + ": no run " + std::to_string(run));
  t.commit();
}

std::optional<RunRecord> RulesDb::get_run(int64_t run) const {
  Stmt s(db_.get(), path_, (std::string("SELECT ") + kRunColumns + " FROM runs WHERE id = ?").c_str());
  s.bind(1, run);
  if (!s.step()) return std::nullopt;
  return read_run(s);
}

std::optional<RunRecord> RulesDb::find_unfinished_run(const std::string& kind, const std::string& settings_json) const {
  Stmt s(db_.get(), path_,
         (std::string("SELECT ") + kRunColumns +
          " FROM runs WHERE kind = ? AND settings = ? AND status <> 'finished' ORDER BY id DESC LIMIT 1")
             .c_str());
  s.bind(1, kind).bind(2, settings_json);
  if (!s.step()) return std::nullopt;
  return read_run(s);
}

std::vector<RunSummary> RulesDb::list_runs() const {
  Stmt s(db_.get(), path_,
         (std::string("SELECT ") + kRunColumns +
          ", (SELECT COUNT(*) FROM rules WHERE rules.generator_run = runs.id) FROM runs ORDER BY id")
             .c_str());
  std::vector<RunSummary> out;
  while (s.step()) out.push_back({read_run(s), s.i64(kRunColumnCount)});
  return out;
}

int RulesDb::insert_rules(const std::vector<RuleRecord>& rules) {
  if (rules.empty()) return 0;
  WriteTransaction t(db_.get(), path_);
  Stmt s(db_.get(), path_,
         "INSERT INTO rules (canonical, source, target, variables, constraints, source_ops, target_ops, operators, "
         "kind, status, proof_ms, axioms, counterexample, region_map, correction, note, generator_run) "
         "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (canonical) DO NOTHING");
  int inserted = 0;
  for (const RuleRecord& r : rules) {
    if (r.canonical.empty()) throw DbError(quote_path(path_) + ": a rule without canonical text (" + r.rule_text() + ")");
    s.reset();
    s.bind(1, r.canonical).bind(2, r.source).bind(3, r.target).bind(4, r.variables).bind(5, r.constraints);
    s.bind(6, r.source_ops).bind(7, r.target_ops).bind(8, r.operators).bind(9, r.kind).bind(10, r.status);
    s.bind(11, r.proof_ms).bind(12, r.axioms).bind(13, r.counterexample).bind(14, r.region_map);
    s.bind(15, r.correction).bind(16, r.note);
    if (r.generator_run != 0)
      s.bind(17, r.generator_run);
    else
      s.bind_null(17);
    s.run();
    inserted += sqlite3_changes(db_.get());
  }
  t.commit();
  return inserted;
}

void RulesDb::update_rule(const RuleRecord& r) { update_rules({r}); }

void RulesDb::update_rules(const std::vector<RuleRecord>& rules) {
  WriteTransaction t(db_.get(), path_);
  Stmt s(db_.get(), path_,
         "UPDATE rules SET kind = ?, status = ?, constraints = ?, proof_ms = ?, axioms = ?, counterexample = ?, "
         "region_map = ?, correction = ?, note = ? WHERE id = ?");
  for (const RuleRecord& r : rules) {
    s.reset();
    s.bind(1, r.kind).bind(2, r.status).bind(3, r.constraints).bind(4, r.proof_ms).bind(5, r.axioms);
    s.bind(6, r.counterexample).bind(7, r.region_map).bind(8, r.correction).bind(9, r.note).bind(10, r.id);
    s.run();
    if (sqlite3_changes(db_.get()) == 0) throw DbError(quote_path(path_) + ": no rule " + std::to_string(r.id));
  }
  t.commit();
}

std::optional<RuleRecord> RulesDb::get_rule(int64_t id) const {
  Stmt s(db_.get(), path_, (std::string("SELECT ") + kRuleColumns + " FROM rules WHERE id = ?").c_str());
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  return read_rule(s);
}

std::optional<RuleRecord> RulesDb::find_by_canonical(const std::string& canonical) const {
  Stmt s(db_.get(), path_, (std::string("SELECT ") + kRuleColumns + " FROM rules WHERE canonical = ?").c_str());
  s.bind(1, canonical);
  if (!s.step()) return std::nullopt;
  return read_rule(s);
}

std::vector<RuleRecord> RulesDb::list_rules(const std::optional<std::string>& status) const {
  const std::string sql = std::string("SELECT ") + kRuleColumns + " FROM rules" +
                          (status ? " WHERE status = ?" : "") + " ORDER BY id";
  Stmt s(db_.get(), path_, sql.c_str());
  if (status) s.bind(1, *status);
  std::vector<RuleRecord> out;
  while (s.step()) out.push_back(read_rule(s));
  return out;
}

int64_t RulesDb::count_rules() const {
  Stmt s(db_.get(), path_, "SELECT COUNT(*) FROM rules");
  s.step();
  return s.i64(0);
}

void RulesDb::put_op_cost(const std::string& device, const std::string& signature, double ms,
                          const std::string& method) {
  if (!(ms >= 0)) throw DbError(quote_path(path_) + ": an operator cost must be >= 0 ms");
  WriteTransaction t(db_.get(), path_);
  std::string sql = "INSERT OR REPLACE INTO op_costs (device, signature, ms, method, measured_at) VALUES (?, ?, ?, ?, ";
  sql += now_sql();
  sql += ")";
  Stmt s(db_.get(), path_, sql.c_str());
  s.bind(1, device).bind(2, signature).bind(3, ms).bind(4, method).run();
  t.commit();
}

std::vector<RulesDb::OpCost> RulesDb::op_cost_rows(const std::string& device) const {
  Stmt s(db_.get(), path_, "SELECT signature, ms, method FROM op_costs WHERE device = ? ORDER BY signature");
  s.bind(1, device);
  std::vector<OpCost> out;
  while (s.step()) out.push_back({s.text(0), s.f64(1), s.text(2)});
  return out;
}

void RulesDb::put_kernel_choices(const std::string& device, const std::string& libraries,
                                 const std::vector<std::pair<std::string, std::string>>& choices) {
  if (choices.empty()) return;
  WriteTransaction t(db_.get(), path_);
  std::string sql =
      "INSERT OR REPLACE INTO kernel_choices (device, libraries, key, choice, measured_at) VALUES (?, ?, ?, ?, ";
  sql += now_sql();
  sql += ")";
  for (const auto& [key, choice] : choices) {
    Stmt s(db_.get(), path_, sql.c_str());
    s.bind(1, device).bind(2, libraries).bind(3, key).bind(4, choice).run();
  }
  t.commit();
}

std::vector<std::pair<std::string, std::string>> RulesDb::kernel_choices(const std::string& device,
                                                                         const std::string& libraries) const {
  Stmt s(db_.get(), path_, "SELECT key, choice FROM kernel_choices WHERE device = ? AND libraries = ? ORDER BY key");
  s.bind(1, device).bind(2, libraries);
  std::vector<std::pair<std::string, std::string>> out;
  while (s.step()) out.emplace_back(s.text(0), s.text(1));
  return out;
}

std::vector<std::pair<std::string, double>> RulesDb::op_costs(const std::string& device) const {
  Stmt s(db_.get(), path_, "SELECT signature, ms FROM op_costs WHERE device = ? ORDER BY signature");
  s.bind(1, device);
  std::vector<std::pair<std::string, double>> out;
  while (s.step()) out.emplace_back(s.text(0), s.f64(1));
  return out;
}

std::vector<std::pair<std::string, int64_t>> RulesDb::counts_by_status() const {
  Stmt s(db_.get(), path_, "SELECT status, COUNT(*) FROM rules GROUP BY status ORDER BY status");
  std::vector<std::pair<std::string, int64_t>> out;
  while (s.step()) out.emplace_back(s.text(0), s.i64(1));
  return out;
}

std::vector<std::pair<std::string, int64_t>> RulesDb::counts_by_kind() const {
  Stmt s(db_.get(), path_, "SELECT kind, COUNT(*) FROM rules GROUP BY kind ORDER BY kind");
  std::vector<std::pair<std::string, int64_t>> out;
  while (s.step()) out.emplace_back(s.text(0), s.i64(1));
  return out;
}

std::vector<std::tuple<int, int, int64_t>> RulesDb::counts_by_size() const {
  Stmt s(db_.get(), path_,
         "SELECT source_ops, target_ops, COUNT(*) FROM rules GROUP BY source_ops, target_ops "
         "ORDER BY source_ops, target_ops");
  std::vector<std::tuple<int, int, int64_t>> out;
  while (s.step()) out.emplace_back(static_cast<int>(s.i64(0)), static_cast<int>(s.i64(1)), s.i64(2));
  return out;
}

}  // namespace tgr::rules_db

namespace tgr::rules_db {

std::string RunRecord::space_name() const {
  std::istringstream in(space);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line.substr(0, line.find('#')));
    std::string keyword, name;
    if (words >> keyword >> name && keyword == "space") return name;
  }
  return "";
}

}  // namespace tgr::rules_db
