// Where the programs write their outputs (models, reports, SMT-LIB, tensor
// files), one policy for all of them (docs/reliability.md, "Output paths"):
//
// - a regular file, or a new path, is written through a temporary file in
//   the same folder renamed over it at the end, so a failure never leaves a
//   half-written file; a symbolic link is written through (its target is
//   replaced, the link stays), whatever the writer;
// - a character device or a FIFO (/dev/null, /dev/stdout, a pipe) is
//   written in place, never replaced by a rename;
// - a folder, a block device or a socket is refused, naming it.
//
// Errors are OutputFileError naming the path and the reason.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace tgr::util {

class OutputFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// How write_atomically writes `path`, decided before anything is written.
enum class OutputKind { kReplaced, kInPlace };

// Checks that `path` can be written under the policy above (its folder
// exists and is writable, it is no folder or block device), so a command
// can refuse an output before doing any work. Returns how it will be written.
inline OutputKind check_output_path(const std::string& path) {
  namespace fs = std::filesystem;
  const std::string named = "cannot write '" + path + "': ";
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {  // follows symbolic links
    if (S_ISDIR(st.st_mode)) throw OutputFileError(named + "it is a folder");
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
      if (::access(path.c_str(), W_OK) != 0) throw OutputFileError(named + std::strerror(errno));
      return OutputKind::kInPlace;
    }
    if (!S_ISREG(st.st_mode))
      throw OutputFileError(named + "it is not a regular file, a character device or a FIFO (refusing to replace it)");
  }
  std::error_code ec;
  const fs::path target = fs::weakly_canonical(fs::absolute(path, ec), ec);
  const fs::path folder = target.parent_path();
  if (ec || !fs::is_directory(folder, ec))
    throw OutputFileError(named + "folder '" + fs::path(path).parent_path().string() + "' does not exist");
  if (::access(folder.c_str(), W_OK) != 0)
    throw OutputFileError(named + "folder '" + folder.string() + "': " + std::strerror(errno));
  return OutputKind::kReplaced;
}

// Writes what `write` puts into the stream (it returns false on failure) to
// `path` under the policy above.
inline void write_atomically(const std::string& path, const std::function<bool(std::ostream&)>& write) {
  namespace fs = std::filesystem;
  if (check_output_path(path) == OutputKind::kInPlace) {
    std::ofstream out(path, std::ios::binary);
    const bool written = out && write(out);
    out.close();
    if (!written || !out) throw OutputFileError("cannot write '" + path + "': write failed");
    return;
  }
  std::error_code ec;
  // Through a symbolic link: the file it names is replaced, the link kept.
  const fs::path target = fs::weakly_canonical(fs::absolute(path, ec), ec);
  if (ec) throw OutputFileError("cannot write '" + path + "': " + ec.message());
  const std::string tmp = target.string() + ".tmp" + std::to_string(std::random_device{}());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    const bool written = out && write(out);
    out.close();
    if (!written || !out) {
      fs::remove(tmp, ec);
      throw OutputFileError("cannot write '" + path + "': write to '" + tmp + "' failed");
    }
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw OutputFileError("cannot write '" + path + "': " + ec.message());
  }
}

// Writes `text` to `path` (write_atomically).
inline void write_text_file(const std::string& path, const std::string& text) {
  write_atomically(path, [&](std::ostream& out) { return static_cast<bool>(out << text); });
}

// Copies the file `from` to `path` (write_atomically), byte for byte.
inline void copy_to_output(const std::string& from, const std::string& path) {
  std::ifstream in(from, std::ios::binary);
  if (!in) throw OutputFileError("cannot read '" + from + "'");
  // In chunks, each write checked: `out << in.rdbuf()` reports nothing when
  // the output fails part way (a full disk, a file size limit).
  write_atomically(path, [&](std::ostream& out) {
    std::vector<char> buffer(1 << 16);
    while (in.read(buffer.data(), static_cast<std::streamsize>(buffer.size())) || in.gcount() > 0)
      if (!out.write(buffer.data(), in.gcount())) return false;
    return !in.bad();
  });
}

}  // namespace tgr::util
