// `generate`: enumerate operator graphs, fingerprint them and store candidate rules (issue 4).
#include <CLI/CLI.hpp>

#include "tools/cli_common.h"

int main(int argc, char** argv) {
  CLI::App app{"generate: enumerate operator graphs, fingerprint them and store candidate rules (issue 4)"};
  CLI11_PARSE(app, argc, argv);
  return tgr::cli::not_yet("generate", "this command");
}
