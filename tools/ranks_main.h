// The processes a program runs as: one, or the ranks of `mpirun -np N` when
// the build found MPI and mpirun started the program (docs/mpi.md). Used by
// generate and verify --db, whose work is shared among the ranks; rank 0
// prints the report, the others print nothing but their own errors.
#pragma once

#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdio>
#include <memory>
#include <optional>

#include <fcntl.h>
#include <unistd.h>

#include "tools/cli_app.h"
#include "tools/cli_common.h"
#include "util/ranks.h"
#ifdef TGR_HAVE_MPI
#include "util/mpi_ranks.h"
#endif

namespace tgr::cli {

class ProgramRanks {
 public:
  // `on_interrupt` is the program's SIGINT handler; under mpirun it also
  // handles SIGTERM, which is what mpirun sends every rank on Ctrl-C.
  ProgramRanks(int& argc, char**& argv, void (*on_interrupt)(int)) {
#ifdef TGR_HAVE_MPI
    if (util::launched_by_mpi()) {
      auto mpi = std::make_unique<util::MpiRanks>(argc, argv);
      mpi_ = mpi.get();
      ranks_ = std::move(mpi);
      interrupt_ = on_interrupt;
      std::signal(SIGTERM, [](int signal) {
        std::signal(SIGTERM, SIG_DFL);  // a second one ends the process at once
        interrupt_(signal);
      });
      return;
    }
#endif
    (void)argc;
    (void)argv;
    (void)on_interrupt;
    ranks_ = std::make_unique<util::SingleProcess>();
  }

  util::Ranks& operator*() { return *ranks_; }
  util::Ranks* operator->() { return ranks_.get(); }

  // cli::parse, with the help and usage errors printed by rank 0 alone.
  std::optional<int> parse(CLI::App& app, int argc, char** argv) {
    if (ranks_->root()) return cli::parse(app, argc, argv);
    const int out = dup(1), err = dup(2), null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    auto rc = cli::parse(app, argc, argv);
    std::fflush(stdout);
    std::fflush(stderr);
    dup2(out, 1);
    dup2(err, 2);
    for (int fd : {out, err, null}) close(fd);
    return rc;
  }

  // cli::guarded for the ranks: an error all ranks agree on (rank 0's, such
  // as a database that cannot be opened) is printed once; any other error
  // of one rank is printed with its rank and ends the whole job, since the
  // others would wait for it forever.
  template <class Body>
  int guarded(const char* program, Body body) {
    const int status = cli::guarded(program, [&] {
      try {
        return body();
      } catch (const util::AgreedError& e) {
        if (ranks_->root()) std::fprintf(stderr, "%s: error: %s\n", program, e.what());
        return -1;
      }
    });
    if (status == -1) return 1;
#ifdef TGR_HAVE_MPI
    if (status == 1 && mpi_ && mpi_->size() > 1) {
      std::fprintf(stderr, "%s: rank %d of %d failed; ending the other ranks\n", program, mpi_->rank(), mpi_->size());
      std::fflush(stderr);
      mpi_->abort(1);
    }
#endif
    return status;
  }

 private:
  std::unique_ptr<util::Ranks> ranks_;
#ifdef TGR_HAVE_MPI
  util::MpiRanks* mpi_ = nullptr;
#endif
  static inline void (*interrupt_)(int) = nullptr;
};

}  // namespace tgr::cli
