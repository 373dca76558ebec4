#include "runtime/cuda/cost_table.h"

#include <sqlite3.h>

#include <stdexcept>

namespace tgr {

std::string op_signature(const Graph& graph, const Node& node) {
  if (!node.is_op()) return node.is_constant() ? "constant" : "input";
  std::string s = node.op->name;
  bool first = true;
  for (const auto& [key, value] : node.params.entries()) {
    const ParamSpec* spec = node.op->find_param(key);
    if (spec && spec->default_value && *spec->default_value == value) continue;
    s += first ? "[" : ",";
    first = false;
    s += key;
    s += "=";
    s += param_value_to_string(value);
  }
  if (!first) s += "]";
  s += "(";
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (i) s += ",";
    s += dtype_name(graph.dtype(node.inputs[i]));
    s += ":";
    s += shape_to_string(graph.shape(node.inputs[i]));
  }
  s += ")";
  return s;
}

namespace {

class Statement {
 public:
  Statement(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK) fail();
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  void bind(int i, const std::string& text) {
    if (sqlite3_bind_text(stmt_, i, text.c_str(), -1, SQLITE_TRANSIENT) != SQLITE_OK) fail();
  }
  void bind(int i, double v) {
    if (sqlite3_bind_double(stmt_, i, v) != SQLITE_OK) fail();
  }
  bool step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc != SQLITE_DONE) fail();
    return false;
  }
  double column_double(int i) const { return sqlite3_column_double(stmt_, i); }
  int column_int(int i) const { return sqlite3_column_int(stmt_, i); }

 private:
  [[noreturn]] void fail() const {
    std::string msg = "cost table: ";
    msg += sqlite3_errmsg(db_);
    throw std::runtime_error(msg);
  }
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

}  // namespace

CostTable::CostTable(const std::string& path) {
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK) {
    std::string msg = "cannot open the cost database '";
    msg += path;
    msg += "': ";
    msg += db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw std::runtime_error(msg);
  }
  sqlite3_busy_timeout(db_, 10000);
  // The definition of the rules database's op_costs (schema version 3).
  Statement create(db_,
                   "CREATE TABLE IF NOT EXISTS op_costs (device TEXT NOT NULL, signature TEXT NOT NULL, "
                   "ms REAL NOT NULL CHECK (ms >= 0), measured_at TEXT NOT NULL DEFAULT "
                   "(strftime('%Y-%m-%dT%H:%M:%SZ', 'now')), PRIMARY KEY (device, signature))");
  create.step();
}

CostTable::~CostTable() { sqlite3_close(db_); }

std::optional<double> CostTable::lookup(const std::string& device, const std::string& signature) const {
  Statement q(db_, "SELECT ms FROM op_costs WHERE device = ? AND signature = ?");
  q.bind(1, device);
  q.bind(2, signature);
  if (q.step()) return q.column_double(0);
  return std::nullopt;
}

void CostTable::store(const std::string& device, const std::string& signature, double ms) {
  Statement q(db_,
              "INSERT OR REPLACE INTO op_costs (device, signature, ms, measured_at) "
              "VALUES (?, ?, ?, strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))");
  q.bind(1, device);
  q.bind(2, signature);
  q.bind(3, ms);
  q.step();
}

int CostTable::count(const std::string& device) const {
  Statement q(db_, "SELECT COUNT(*) FROM op_costs WHERE device = ?");
  q.bind(1, device);
  q.step();
  return q.column_int(0);
}

}  // namespace tgr
