#include "ir/field.h"
#include "ir/hash.h"

#include <cstring>

namespace tgr {

uint64_t field_salt(std::string_view operator_name) {
  return mix64(fnv1a(operator_name));
}

Fp field_random_function(uint64_t salt, Fp x) {
  return Fp::from_residue(mix64(x.residue() ^ salt) ^ splitmix64(salt));
}

Fp field_from_real(double x) {
  if (x == static_cast<double>(static_cast<int64_t>(x)) && x > -4e18 && x < 4e18) return Fp(static_cast<int64_t>(x));
  uint64_t bits;
  static_assert(sizeof bits == sizeof x);
  std::memcpy(&bits, &x, sizeof bits);
  return Fp::from_residue(mix64(bits ^ 0x5bd1e995ULL));
}

}  // namespace tgr
