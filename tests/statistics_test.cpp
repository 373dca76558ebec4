// util/statistics.h: the median every printed time is.
#include <gtest/gtest.h>

#include <stdexcept>

#include "util/statistics.h"

namespace tgr {
namespace {

TEST(Median, OddCountTheMiddleEvenCountTheMeanOfTheTwoMiddle) {
  EXPECT_EQ(median({3.0}), 3.0);
  EXPECT_EQ(median({5.0, 1.0, 3.0}), 3.0);
  EXPECT_EQ(median({4.0, 1.0, 3.0, 2.0}), 2.5);
  EXPECT_EQ(median({1.0, 100.0, 2.0, 3.0, 1000.0}), 3.0);  // outliers do not move it
  EXPECT_THROW(median({}), std::invalid_argument);
}

}  // namespace
}  // namespace tgr
