// Running work on a stack of known size. The passes over expressions (the
// text parsers, canonical forms, graph building, the prover) recurse once
// per nesting level, up to kMaxExprDepth (ir/text.h); the main thread's
// stack is whatever `ulimit -s` left it (128 KB overflowed on a rule below
// that limit). A thread's stack is set when it is created, whatever the
// limit, so every program runs its command on one (tools/cli_common.h).
#pragma once

#include <pthread.h>

#include <cstddef>
#include <exception>
#include <functional>

namespace tgr::util {

// The stack every command runs on: room for kMaxExprDepth levels of each
// recursive pass with a wide margin (pages are only taken when touched).
inline constexpr size_t kCommandStackBytes = size_t{64} << 20;

// Runs `body` on a new thread with a stack of `bytes` and waits for it; an
// exception `body` throws is rethrown here. When the thread cannot be
// created (no memory for its stack), `body` runs on this thread.
inline void run_with_stack(size_t bytes, const std::function<void()>& body) {
  struct Call {
    const std::function<void()>* body;
    std::exception_ptr error;
  } call{&body, nullptr};
  auto start = [](void* arg) -> void* {
    auto* c = static_cast<Call*>(arg);
    try {
      (*c->body)();
    } catch (...) {
      c->error = std::current_exception();
    }
    return nullptr;
  };
  pthread_attr_t attr;
  pthread_t thread;
  bool started = pthread_attr_init(&attr) == 0;
  if (started) {
    started = pthread_attr_setstacksize(&attr, bytes) == 0 && pthread_create(&thread, &attr, start, &call) == 0;
    pthread_attr_destroy(&attr);
  }
  if (!started) {
    body();
    return;
  }
  pthread_join(thread, nullptr);
  if (call.error) std::rethrow_exception(call.error);
}

}  // namespace tgr::util
