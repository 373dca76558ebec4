#include <gtest/gtest.h>

#include <random>

#include "ir/field.h"

namespace tgr {
namespace {

TEST(Field, ArithmeticWrapsAtTheMersennePrime) {
  const Fp minus_one(-1);
  EXPECT_EQ(minus_one.residue(), Fp::kModulus - 1);
  EXPECT_EQ(minus_one + Fp(1), Fp(0));
  EXPECT_EQ(minus_one * minus_one, Fp(1));
  EXPECT_EQ(Fp(-5) + Fp(5), Fp(0));
  EXPECT_EQ(Fp(3) - Fp(5), Fp(-2));
  EXPECT_EQ(Fp(static_cast<int64_t>(Fp::kModulus)), Fp(0));
  EXPECT_EQ(Fp(1 << 30) * Fp(1 << 30) * Fp(2), Fp(1));  // 2^61 = 1 (mod 2^61 - 1)
  EXPECT_EQ(-Fp(7), Fp(-7));
}

TEST(Field, InverseAndDivision) {
  std::mt19937_64 rng(3);
  for (int i = 0; i < 100; ++i) {
    const Fp x = Fp::from_residue(rng() % (Fp::kModulus - 1) + 1);
    EXPECT_EQ(x * x.inverse(), Fp(1));
  }
  EXPECT_EQ(Fp(9) / Fp(9), Fp(1));
  EXPECT_EQ((Fp(1) / Fp(9)) * Fp(9), Fp(1));
  EXPECT_NE(Fp(1) / Fp(9), Fp(0));
  EXPECT_EQ(Fp(0).inverse(), Fp(0));  // defined so every operator is total
}

TEST(Field, RandomFunctionIsFixedPerSaltAndDiffersAcrossOperators) {
  const uint64_t relu = field_salt("relu"), tanh = field_salt("tanh");
  EXPECT_EQ(field_random_function(relu, Fp(42)), field_random_function(relu, Fp(42)));
  EXPECT_NE(field_random_function(relu, Fp(42)), field_random_function(tanh, Fp(42)));
  EXPECT_NE(field_random_function(relu, Fp(42)), field_random_function(relu, Fp(43)));
  // Not additive: f(a + b) != f(a) + f(b) for typical a, b.
  EXPECT_NE(field_random_function(relu, Fp(5)), field_random_function(relu, Fp(2)) + field_random_function(relu, Fp(3)));
}

}  // namespace
}  // namespace tgr
