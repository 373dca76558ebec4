// "-o -": a program writes its output file to stdout, and everything else it
// prints (summaries, progress) goes to stderr, so that
// `optimize m.onnx -o - > out.onnx` and pipes get the file and nothing else.
//
// The file is first written to a temporary file (the writers take a path),
// then copied to the saved stdout; until then file descriptor 1 is stderr.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

namespace tgr::cli {

// Whether a path given for an output file means stdout.
inline bool is_stdout(const std::string& path) { return path == "-"; }

class DataToStdout {
 public:
  // `suffix`: the temporary file's extension (".onnx"), for writers that look at it.
  explicit DataToStdout(const std::string& suffix) {
    std::string pattern = (std::filesystem::temp_directory_path() / "tgr-stdout-XXXXXX").string() + suffix;
    const int fd = mkstemps(pattern.data(), static_cast<int>(suffix.size()));
    if (fd < 0) throw std::runtime_error("cannot make a temporary file for '-o -' in " + pattern);
    close(fd);
    temp_ = pattern;
    std::fflush(stdout);
    data_fd_ = dup(1);
    if (data_fd_ < 0 || dup2(2, 1) < 0) throw std::runtime_error("cannot redirect stdout for '-o -'");
  }
  DataToStdout(const DataToStdout&) = delete;
  DataToStdout& operator=(const DataToStdout&) = delete;
  ~DataToStdout() {
    std::error_code ec;
    std::filesystem::remove(temp_, ec);
    if (data_fd_ >= 0) close(data_fd_);
  }

  // Where the program writes the file instead of "-".
  const std::string& path() const { return temp_; }

  // Copies the file to the real stdout (once the program has written it).
  void send() {
    std::fflush(stdout);
    std::ifstream in(temp_, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read the temporary file '" + temp_ + "' for '-o -'");
    char buffer[1 << 16];
    while (in) {
      in.read(buffer, sizeof buffer);
      for (std::streamsize done = 0, n = in.gcount(); done < n;) {
        const ssize_t w = write(data_fd_, buffer + done, static_cast<size_t>(n - done));
        if (w <= 0) throw std::runtime_error("cannot write the output to stdout");
        done += w;
      }
    }
  }

 private:
  std::string temp_;
  int data_fd_ = -1;
};

}  // namespace tgr::cli
