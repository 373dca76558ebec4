// A backtrace on a fatal signal, for programs that crash on the GPU machine
// where no debugger is installed: tools/device/make_gpu_bundle.sh builds it
// into DEST/lib/segv_trace.so, and
//   LD_PRELOAD=DEST/lib/segv_trace.so stdbuf -o0 DEST/bin/PROGRAM ...
// prints "PROGRAM(+0xOFFSET)" frames on stderr before the signal ends the
// process as it would have; resolve them here with
//   addr2line -f -C -e build/bin/PROGRAM 0xOFFSET
// (the bundle's programs are stripped; build/bin's are the same, unstripped).
#define _GNU_SOURCE
#include <execinfo.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static void on_fatal_signal(int sig) {
  void* frames[64];
  const int n = backtrace(frames, 64);
  const char* head = "\n=== fatal signal: backtrace ===\n";
  write(2, head, strlen(head));
  backtrace_symbols_fd(frames, n, 2);
  signal(sig, SIG_DFL);
  raise(sig);
}

__attribute__((constructor)) static void install_handlers(void) {
  signal(SIGSEGV, on_fatal_signal);
  signal(SIGBUS, on_fatal_signal);
  signal(SIGFPE, on_fatal_signal);
  signal(SIGILL, on_fatal_signal);
}
