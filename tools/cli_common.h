// Shared by the command-line programs: one way to report errors and exit.
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "util/deep_stack.h"

namespace tgr::cli {

// A mistake in the command line found after parsing it (two options naming
// one file): exit status 2, like CLI11's own usage errors.
class UsageError : public std::runtime_error {
  using runtime_error::runtime_error;
};

// Runs `body` on a thread with a stack of util::kCommandStackBytes (a
// `ulimit -s 128` stack overflowed on a rule nested below the limit); an
// exception becomes "PROGRAM: error: MESSAGE" on stderr and exit status 1
// (2 for a UsageError; never a crash or a core dump).
// A full disk or /dev/full under stdout is an error too: printf only
// buffers, and the loss would show only at exit, unreported.
template <class Body>
int guarded(const char* program, Body body) {
  int status = 1;
  util::run_with_stack(util::kCommandStackBytes, [&] {
    try {
      status = body();
      if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
        std::fprintf(stderr, "%s: error: cannot write to stdout: %s\n", program, std::strerror(errno));
        status = 1;
      }
    } catch (const UsageError& e) {
      std::fprintf(stderr, "%s: error: %s\n", program, e.what());
      status = 2;
    } catch (const std::bad_alloc&) {
      std::fprintf(stderr, "%s: error: out of memory (the input asks for more than this machine has)\n", program);
      status = 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: error: %s\n", program, e.what());
      status = 1;
    }
  });
  return status;
}

// One file a command reads or writes, for refuse_same_files.
struct FileRole {
  std::string what;  // how the command line names it: "-o", "--report", "the model"
  std::string path;  // "" when not given
  bool written = false;
};

// Whether two paths name one file: the same inode when both exist (links,
// "./a" and "a"), else the same normalised absolute path.
inline bool same_file(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) return fs::equivalent(a, b, ec) && !ec;
  const fs::path ca = fs::weakly_canonical(fs::absolute(a, ec), ec);
  const fs::path cb = fs::weakly_canonical(fs::absolute(b, ec), ec);
  return ca == cb;
}

// Refuses (UsageError, before anything is written) a file the command writes
// that is also another file it reads or writes: `optimize m.onnx -o out.onnx
// --report m.onnx` would replace the model with JSON.
inline void refuse_same_files(const std::vector<FileRole>& files) {
  for (size_t i = 0; i < files.size(); ++i) {
    if (!files[i].written || files[i].path.empty()) continue;
    for (size_t j = 0; j < files.size(); ++j) {
      if (j == i || files[j].path.empty() || (files[j].written && j < i)) continue;
      if (same_file(files[i].path, files[j].path))
        throw UsageError(files[i].what + " '" + files[i].path + "' is the same file as " + files[j].what + " '" +
                         files[j].path + "': refusing to overwrite it");
    }
  }
}

// For programs whose work arrives with a later issue: --help works now.
inline int not_yet(const char* program, const char* what) {
  std::fprintf(stderr, "%s: error: %s is not implemented yet\n", program, what);
  return 2;
}

}  // namespace tgr::cli
