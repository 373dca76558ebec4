// `rules`: inspect and query the rules database (issue 4).
#include <CLI/CLI.hpp>

#include "tools/cli_common.h"

int main(int argc, char** argv) {
  CLI::App app{"rules: inspect and query the rules database (issue 4)"};
  CLI11_PARSE(app, argc, argv);
  return tgr::cli::not_yet("rules", "this command");
}
