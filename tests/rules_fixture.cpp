// rules_fixture DB: writes a small rules database for the `rules` tool tests
// (ctest fixture rules_tool_db): three rules in one generator run.
//   1 proved     matmul(matmul(x0, w0), w1) => matmul(x0, matmul(w0, w1))
//   2 candidate  mul(add(x0, x1), x2) => add(mul(x0, x2), mul(x1, x2))
//   3 refuted    relu(conv2d(i0, k0)) => conv2d[act=relu](i0, k0)   (a note with quotes, tab, newline)
#include <cstdio>
#include <filesystem>
#include <string>

#include "rules_db/rules_db.h"
#include "tools/cli_common.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: rules_fixture DB\n");
    return 2;
  }
  return tgr::cli::guarded("rules_fixture", [&] {
    namespace rdb = tgr::rules_db;
    const std::string path = argv[1];
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
    rdb::RulesDb db = rdb::RulesDb::open(path, true);
    const int64_t run = db.begin_run("generate", R"({"max_ops": 2})");
    auto r1 = rdb::rule_record_from_text("matmul(matmul(x0, w0), w1) => matmul(x0, matmul(w0, w1))",
                                         "x0=2x3,w0=3x4,w1=4x5");
    r1.status = "proved";
    r1.proof_ms = 12.5;
    r1.axioms = "matmul_assoc";
    auto r2 = rdb::rule_record_from_text("mul(add(x0, x1), x2) => add(mul(x0, x2), mul(x1, x2))", "x0=2x2,x1=2x2,x2=2x2");
    auto r3 = rdb::rule_record_from_text("relu(conv2d(i0, k0)) => conv2d[act=relu](i0, k0)", "i0=1x3x8x8,k0=4x3x3x3");
    r3.status = "refuted";
    r3.counterexample = "{\"i0\": [1, -2]}";
    r3.note = "a \"quoted\"\tnote\nwith a newline and a backslash \\";
    for (auto* r : {&r1, &r2, &r3}) r->generator_run = run;
    const int n = db.insert_rules({r1, r2, r3});
    db.finish_run(run, "finished", R"({"inserted": 3})");
    std::printf("%s: %d rules\n", path.c_str(), n);
    return n == 3 ? 0 : 1;
  });
}
