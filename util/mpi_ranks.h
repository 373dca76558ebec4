// The ranks of an `mpirun` job (Open MPI or any MPI-3 library), for
// `generate` and `verify --db` (docs/mpi.md). Built only when CMake finds
// MPI (TGR_HAVE_MPI).
#pragma once

#include <memory>

#include "util/ranks.h"

namespace tgr::util {

// Whether this process was started by mpirun (or another MPI launcher), so
// that a program started by hand does not initialise MPI at all.
bool launched_by_mpi();

// MPI_Init_thread on construction, MPI_Finalize on destruction; one per
// process. The exchanges are MPI collectives on MPI_COMM_WORLD.
class MpiRanks final : public Ranks {
 public:
  MpiRanks(int& argc, char**& argv);
  ~MpiRanks() override;
  MpiRanks(const MpiRanks&) = delete;
  MpiRanks& operator=(const MpiRanks&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::vector<std::string> exchange(std::vector<std::string> to) override;
  std::vector<std::string> all_gather(std::string mine) override;
  std::string broadcast(std::string text) override;
  uint64_t sum(uint64_t value) override;
  double max(double value) override;
  bool any(bool value) override;
  // Ends every rank of the job (an error on one rank that the others would
  // wait for forever).
  [[noreturn]] void abort(int status);

 private:
  int rank_ = 0, size_ = 1;
};

}  // namespace tgr::util
