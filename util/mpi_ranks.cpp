#include "util/mpi_ranks.h"

#include <mpi.h>

#include <climits>
#include <cstdlib>
#include <stdexcept>

namespace tgr::util {
namespace {

void check(int status, const char* what) {
  if (status != MPI_SUCCESS) throw std::runtime_error(std::string("MPI: ") + what + " failed");
}

// MPI counts are ints: a message of 2 GiB or more is refused with a clear
// error rather than truncated (more ranks make the messages smaller).
int count_of(size_t bytes) {
  if (bytes > static_cast<size_t>(INT_MAX))
    throw std::runtime_error("MPI: a message of " + std::to_string(bytes) + " bytes is too large; use more ranks");
  return static_cast<int>(bytes);
}

}  // namespace

bool launched_by_mpi() {
  // Open MPI's launcher sets OMPI_COMM_WORLD_SIZE; PMIx and PMI launchers
  // (MPICH's hydra, Slurm's srun) set PMIX_RANK or PMI_SIZE.
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"})
    if (std::getenv(name)) return true;
  return false;
}

MpiRanks::MpiRanks(int& argc, char**& argv) {
  int provided = 0;
  // One thread at a time calls MPI (TBB's threads never do): the command's
  // thread (cli::guarded runs it on a stack of known size), the main thread
  // before and after it.
  check(MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiRanks::~MpiRanks() { MPI_Finalize(); }

void MpiRanks::abort(int status) {
  MPI_Abort(MPI_COMM_WORLD, status);
  std::exit(status);
}

std::vector<std::string> MpiRanks::exchange(std::vector<std::string> to) {
  if (static_cast<int>(to.size()) != size_) throw std::logic_error("exchange: one message per rank expected");
  if (size_ == 1) return to;
  std::vector<int> send_counts(size_), send_at(size_), receive_counts(size_), receive_at(size_);
  size_t total = 0;
  for (int r = 0; r < size_; ++r) {
    send_counts[r] = count_of(to[r].size());
    send_at[r] = count_of(total);
    total += to[r].size();
  }
  std::string sending;
  sending.reserve(total);
  for (auto& m : to) {
    sending += m;
    std::string().swap(m);  // the copy in `sending` is the one sent
  }
  check(MPI_Alltoall(send_counts.data(), 1, MPI_INT, receive_counts.data(), 1, MPI_INT, MPI_COMM_WORLD),
        "MPI_Alltoall");
  size_t received = 0;
  for (int r = 0; r < size_; ++r) {
    receive_at[r] = count_of(received);
    received += receive_counts[r];
  }
  std::string receiving(received, '\0');
  check(MPI_Alltoallv(sending.data(), send_counts.data(), send_at.data(), MPI_BYTE, receiving.data(),
                      receive_counts.data(), receive_at.data(), MPI_BYTE, MPI_COMM_WORLD),
        "MPI_Alltoallv");
  std::vector<std::string> out(size_);
  for (int r = 0; r < size_; ++r) out[r] = receiving.substr(receive_at[r], receive_counts[r]);
  return out;
}

std::vector<std::string> MpiRanks::all_gather(std::string mine) {
  if (size_ == 1) return {std::move(mine)};
  const int count = count_of(mine.size());
  std::vector<int> counts(size_), at(size_);
  check(MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD), "MPI_Allgather");
  size_t total = 0;
  for (int r = 0; r < size_; ++r) {
    at[r] = count_of(total);
    total += counts[r];
  }
  std::string all(total, '\0');
  check(MPI_Allgatherv(mine.data(), count, MPI_BYTE, all.data(), counts.data(), at.data(), MPI_BYTE, MPI_COMM_WORLD),
        "MPI_Allgatherv");
  std::vector<std::string> out(size_);
  for (int r = 0; r < size_; ++r) out[r] = all.substr(at[r], counts[r]);
  return out;
}

std::string MpiRanks::broadcast(std::string text) {
  if (size_ == 1) return text;
  uint64_t n = text.size();
  check(MPI_Bcast(&n, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD), "MPI_Bcast");
  text.resize(n);
  check(MPI_Bcast(text.data(), count_of(n), MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast");
  return text;
}

uint64_t MpiRanks::sum(uint64_t value) {
  uint64_t out = 0;
  check(MPI_Allreduce(&value, &out, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
  return out;
}

double MpiRanks::max(double value) {
  double out = 0;
  check(MPI_Allreduce(&value, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
  return out;
}

bool MpiRanks::any(bool value) {
  int mine = value, out = 0;
  check(MPI_Allreduce(&mine, &out, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD), "MPI_Allreduce");
  return out != 0;
}

}  // namespace tgr::util
