// A progress line on stderr about once a second, from a thread of its own,
// for the long runs (generate, verify). On a terminal the line is rewritten
// in place; otherwise every tenth line is printed, so logs stay short.
#pragma once

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace tgr::util {

// Prints `line()` about once a second while alive, and once more at the end.
class Progress {
 public:
  Progress(bool enabled, std::function<std::string()> line) : enabled_(enabled), line_(std::move(line)), tty_(isatty(2)) {
    if (enabled_) thread_ = std::thread([this] { loop(); });
  }
  ~Progress() {
    if (!enabled_) return;
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
    if (tty_) std::fprintf(stderr, "\r%s\n", line_().c_str());
  }

 private:
  void loop() {
    std::unique_lock lock(mutex_);
    int tick = 0;
    while (!cv_.wait_for(lock, std::chrono::seconds(1), [this] { return done_; })) {
      if (tty_) std::fprintf(stderr, "\r%s\033[K", line_().c_str());
      else if (++tick % 10 == 0) std::fprintf(stderr, "%s\n", line_().c_str());
    }
  }
  bool enabled_;
  std::function<std::string()> line_;
  bool tty_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace tgr::util
