// The rules database schema: an ordered list of migrations. Migration N takes
// a database from schema version N-1 to N; a new database runs all of them.
// Exposed so tests can build a file at an older version.
#pragma once

#include <span>

namespace tgr::rules_db {

struct Migration {
  int version;              // the schema version this migration produces
  const char* description;  // one line, for people reading the history
  const char* sql;          // statements run in one transaction with the others
};

// All migrations, in order (migrations()[i].version == i + 1).
std::span<const Migration> migrations();

// The newest schema version this program knows.
int latest_schema_version();

// The value of `application` in the `meta` table of every rules database.
inline constexpr const char* kApplication = "tgr-rules";

}  // namespace tgr::rules_db
