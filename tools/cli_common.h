// Shared by the command-line programs: one way to report errors and exit.
#pragma once

#include <cstdio>
#include <exception>
#include <string>

namespace tgr::cli {

// Runs `body`; an exception becomes "PROGRAM: error: MESSAGE" on stderr and
// exit status 1 (never a crash or a core dump).
template <class Body>
int guarded(const char* program, Body body) {
  try {
    return body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", program, e.what());
    return 1;
  }
}

// For programs whose work arrives with a later issue: --help works now.
inline int not_yet(const char* program, const char* what) {
  std::fprintf(stderr, "%s: %s is not implemented yet\n", program, what);
  return 2;
}

}  // namespace tgr::cli
