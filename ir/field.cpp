#include "ir/field.h"

#include <cstring>

namespace tgr {

namespace {
// splitmix64 finaliser: a bijective mixer with good avalanche.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
}  // namespace

uint64_t field_salt(std::string_view operator_name) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a
  for (unsigned char c : operator_name) h = (h ^ c) * 0x100000001b3ULL;
  return mix64(h);
}

Fp field_random_function(uint64_t salt, Fp x) {
  return Fp::from_residue(mix64(x.residue() ^ salt) ^ mix64(salt + 0x9e3779b97f4a7c15ULL));
}

Fp field_from_real(double x) {
  if (x == static_cast<double>(static_cast<int64_t>(x)) && x > -4e18 && x < 4e18) return Fp(static_cast<int64_t>(x));
  uint64_t bits;
  static_assert(sizeof bits == sizeof x);
  std::memcpy(&bits, &x, sizeof bits);
  return Fp::from_residue(mix64(bits ^ 0x5bd1e995ULL));
}

}  // namespace tgr
