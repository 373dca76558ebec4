// `verify`: prove candidate rules with Z3 and check partial ones (issues 5, 6).
#include <CLI/CLI.hpp>

#include "tools/cli_common.h"

int main(int argc, char** argv) {
  CLI::App app{"verify: prove candidate rules with Z3 and check partial ones (issues 5, 6)"};
  CLI11_PARSE(app, argc, argv);
  return tgr::cli::not_yet("verify", "this command");
}
