// The project's small hash functions, in one place: FNV-1a over strings or
// integer sequences, the splitmix64 mixer (seeds, fingerprints, the field's
// pseudo-random functions) and the combine step of the structural hashes.
#pragma once

#include <cstdint>
#include <string_view>

namespace tgr {

inline constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ULL;
inline constexpr uint64_t kFnvPrime = 0x100000001b3ULL;
// A start value one digit short of kFnvOffset that the verifier's seeds and
// `run`'s printed field fingerprints have always used; kept so that they
// stay what they were.
inline constexpr uint64_t kFnvOffsetShort = 1469598103934665603ULL;
inline constexpr uint64_t kGoldenGamma = 0x9e3779b97f4a7c15ULL;

// One FNV-1a step: `h` with the value `v` folded in.
inline uint64_t fnv1a_step(uint64_t h, uint64_t v) { return (h ^ v) * kFnvPrime; }

inline uint64_t fnv1a(std::string_view s, uint64_t h = kFnvOffset) {
  for (unsigned char c : s) h = fnv1a_step(h, c);
  return h;
}

// splitmix64's finaliser: a bijective mixer with good avalanche.
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// splitmix64 of one value: how seeds are derived from seeds.
inline uint64_t splitmix64(uint64_t x) { return mix64(x + kGoldenGamma); }

// The combine step of structural hashes (a node from its parts).
inline uint64_t hash_combine(uint64_t h, uint64_t v) {
  h ^= v + kGoldenGamma + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdULL;
}

}  // namespace tgr
