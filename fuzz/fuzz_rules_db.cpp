// libFuzzer target: opening a rules database file (RulesDb::open_read_only
// and the writable RulesDb::open with its checks, migrations and run
// bookkeeping) on arbitrary bytes, then reading everything `rules stats` and
// `rules list` read. A damaged or foreign file must end as a DbError.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>

#include "rules_db/rules_db.h"

namespace {

void read_all(const tgr::rules_db::RulesDb& db) {
  (void)db.schema_version();
  (void)db.count_rules();
  (void)db.counts_by_status();
  (void)db.counts_by_kind();
  (void)db.counts_by_size();
  (void)db.list_runs();
  (void)db.list_rules();
  (void)db.op_costs("H100");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace fs = std::filesystem;
  // One file per process (libFuzzer -jobs runs several), in memory where possible.
  static const std::string path = ((fs::exists("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path()) /
                                   ("tgr_fuzz_rules_db_" + std::to_string(getpid()) + ".db"))
                                      .string();
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(path + suffix);
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    read_all(tgr::rules_db::RulesDb::open_read_only(path));
  } catch (const std::exception&) {
  }
  try {
    tgr::rules_db::RulesDb db = tgr::rules_db::RulesDb::open(path, false);
    read_all(db);
    db.finish_run(db.begin_run("verify", "{}"), "finished", "{}");
  } catch (const std::exception&) {
  }
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(path + suffix);
  return 0;
}
