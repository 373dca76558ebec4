// The prime field F_p with p = 2^61 - 1 (a Mersenne prime), used for
// fingerprints: additions and multiplications are exact, so two programs that
// compute the same multi-linear function give the same value, and different
// ones collide with probability about degree/p (Schwartz-Zippel).
#pragma once

#include <cstdint>
#include <ostream>
#include <string_view>

namespace tgr {

__extension__ typedef unsigned __int128 uint128_t;  // GCC/Clang extension, used for exact products

class Fp {
 public:
  static constexpr uint64_t kModulus = (uint64_t{1} << 61) - 1;

  constexpr Fp() = default;
  // Any integer, negative ones included, maps to its residue.
  constexpr explicit Fp(int64_t x)
      : v_(x >= 0 ? static_cast<uint64_t>(x) % kModulus
                  : kModulus - static_cast<uint64_t>(-(x + 1)) % kModulus - 1) {}
  static constexpr Fp from_residue(uint64_t r) { Fp f; f.v_ = r % kModulus; return f; }

  constexpr uint64_t residue() const { return v_; }

  friend constexpr Fp operator+(Fp a, Fp b) { return from_reduced(fold(a.v_ + b.v_)); }
  friend constexpr Fp operator-(Fp a, Fp b) { return from_reduced(fold(a.v_ + kModulus - b.v_)); }
  friend constexpr Fp operator-(Fp a) { return Fp() - a; }
  friend constexpr Fp operator*(Fp a, Fp b) {
    uint128_t p = static_cast<uint128_t>(a.v_) * b.v_;
    uint64_t lo = static_cast<uint64_t>(p) & kModulus;
    uint64_t hi = static_cast<uint64_t>(p >> 61);
    return from_reduced(fold(lo + hi));
  }
  // Division is multiplication by the field inverse; the inverse of 0 is
  // defined as 0 so that every operator is total.
  friend constexpr Fp operator/(Fp a, Fp b) { return a * b.inverse(); }
  Fp& operator+=(Fp b) { return *this = *this + b; }
  Fp& operator-=(Fp b) { return *this = *this - b; }
  Fp& operator*=(Fp b) { return *this = *this * b; }
  friend constexpr bool operator==(Fp a, Fp b) = default;

  constexpr Fp pow(uint64_t e) const {
    Fp result(1), base = *this;
    for (; e; e >>= 1, base = base * base)
      if (e & 1) result = result * base;
    return result;
  }
  constexpr Fp inverse() const { return pow(kModulus - 2); }  // Fermat; 0 -> 0

  friend std::ostream& operator<<(std::ostream& os, Fp f) { return os << f.v_; }

 private:
  static constexpr uint64_t fold(uint64_t x) {  // x < 2^63 -> [0, p)
    x = (x & kModulus) + (x >> 61);
    return x >= kModulus ? x - kModulus : x;
  }
  static constexpr Fp from_reduced(uint64_t r) { Fp f; f.v_ = r; return f; }
  uint64_t v_ = 0;
};

// A fixed pseudo-random function F_p -> F_p, one per salt. Non-linear
// elementwise operators use it as their field semantics: identities that hold
// for every elementwise function (commuting with layout operators,
// distributing over concat) still hold, while accidental algebraic identities
// do not.
uint64_t field_salt(std::string_view operator_name);
Fp field_random_function(uint64_t salt, Fp x);

// A real number in the field: integers map to their residue, any other
// value to a fixed pseudo-random element of its bit pattern (constants such
// as trained weights have no exact image; they only need to be fixed).
Fp field_from_real(double x);

}  // namespace tgr
