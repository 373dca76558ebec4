// `optimize`: optimize an ONNX model with verified rules (issue 7).
#include <CLI/CLI.hpp>

#include "tools/cli_common.h"

int main(int argc, char** argv) {
  CLI::App app{"optimize: optimize an ONNX model with verified rules (issue 7)"};
  CLI11_PARSE(app, argc, argv);
  return tgr::cli::not_yet("optimize", "this command");
}
