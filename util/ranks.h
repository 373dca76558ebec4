// The processes of one run and how they exchange data: `generate` and
// `verify --db` run as one process, or as N ranks under `mpirun -np N`
// (util/mpi_ranks.h, when the build found MPI; docs/mpi.md). The algorithms
// are written once against this interface; with one process every exchange
// hands the data back unchanged.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace tgr::util {

class Ranks {
 public:
  virtual ~Ranks() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  bool root() const { return rank() == 0; }

  // All-to-all: `to[r]` goes to rank r; returns what each rank sent here,
  // by source rank.
  virtual std::vector<std::string> exchange(std::vector<std::string> to) = 0;
  // Every rank's `mine`, by rank, on every rank.
  virtual std::vector<std::string> all_gather(std::string mine) = 0;
  // Rank 0's `text` on every rank.
  virtual std::string broadcast(std::string text) = 0;
  virtual uint64_t sum(uint64_t value) = 0;
  virtual double max(double value) = 0;
  // True on every rank when it is true on one (an interrupt seen anywhere).
  virtual bool any(bool value) = 0;
};

// An error every rank throws, having learned it from rank 0 (which reports it).
class AgreedError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One process: nothing to exchange.
class SingleProcess final : public Ranks {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::vector<std::string> exchange(std::vector<std::string> to) override { return to; }
  std::vector<std::string> all_gather(std::string mine) override { return {std::move(mine)}; }
  std::string broadcast(std::string text) override { return text; }
  uint64_t sum(uint64_t value) override { return value; }
  double max(double value) override { return value; }
  bool any(bool value) override { return value; }
};

// Trivially copyable values as bytes, for the exchanges.
template <class T>
void append_bytes(std::string& out, const T& value) {
  static_assert(std::is_trivially_copyable_v<T>);
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}
template <class T>
std::vector<T> from_bytes(const std::string& bytes) {
  static_assert(std::is_trivially_copyable_v<T>);
  if (bytes.size() % sizeof(T)) throw std::logic_error("exchange: a message is not a whole number of records");
  std::vector<T> out(bytes.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

// Length-prefixed strings, for messages of text.
inline void append_text(std::string& out, const std::string& text) {
  append_bytes(out, static_cast<uint64_t>(text.size()));
  out += text;
}
// Reads back, in order, what append_bytes and append_text wrote.
class TextReader {
 public:
  explicit TextReader(const std::string& bytes) : bytes_(bytes) {}
  bool done() const { return at_ == bytes_.size(); }
  template <class T>
  T value() {
    static_assert(std::is_trivially_copyable_v<T>);
    T v{};
    std::memcpy(&v, bytes_.data() + at_, sizeof v);
    at_ += sizeof v;
    return v;
  }
  std::string next() {
    const auto n = value<uint64_t>();
    std::string s = bytes_.substr(at_, n);
    at_ += n;
    return s;
  }

 private:
  const std::string& bytes_;
  size_t at_ = 0;
};

}  // namespace tgr::util
