// The runtime's timed choices of implementation (runtime/kernel_choices.h):
// what a tool seeds from its database and what it stores back.
#include "runtime/kernel_choices.h"

#include <gtest/gtest.h>

namespace tgr {
namespace {

TEST(KernelChoices, SeededChoicesAreFoundButNotStoredAgain) {
  KernelChoices choices;
  choices.seed({{"conv-algo a", "1 0 0.5"}, {"conv-algo b", "6 4096 0.25"}});
  EXPECT_EQ(choices.find("conv-algo b"), "6 4096 0.25");
  EXPECT_EQ(choices.find("conv-algo c"), std::nullopt);
  EXPECT_TRUE(choices.take_added().empty());  // nothing new to store
  choices.put("conv-algo c", "0 0 1");
  choices.put("conv-other a", "1 0 0.1");
  const std::vector<KernelChoices::Entry> added = choices.take_added();
  ASSERT_EQ(added.size(), 2u);
  EXPECT_EQ(added[0], (KernelChoices::Entry{"conv-algo c", "0 0 1"}));
  EXPECT_EQ(added[1], (KernelChoices::Entry{"conv-other a", "1 0 0.1"}));
  EXPECT_TRUE(choices.take_added().empty());  // taken once
  EXPECT_EQ(choices.size(), 4u);
}

TEST(KernelChoices, ASeedDoesNotReplaceAChoiceMadeHere) {
  KernelChoices choices;
  choices.put("conv-algo a", "1 0 0.5");
  choices.seed({{"conv-algo a", "2 0 0.4"}});
  EXPECT_EQ(choices.find("conv-algo a"), "1 0 0.5");
  choices.clear();
  EXPECT_EQ(choices.size(), 0u);
  EXPECT_TRUE(choices.take_added().empty());
}

TEST(TimedChoice, TextRoundTripsAndNonsenseIsRefused) {
  const TimedChoice c{6, 1 << 20, 0.0123456789};
  const std::optional<TimedChoice> back = TimedChoice::parse(c.to_text());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->implementation, 6);
  EXPECT_EQ(back->workspace, 1 << 20);
  EXPECT_DOUBLE_EQ(back->ms, 0.0123456789);
  for (const char* bad : {"", "1 2", "1 2 3 4", "1 -2 0.5", "1 2 -0.5", "a b c", "1 2 nan", "1 2 inf", "1 2 0.5x"})
    EXPECT_EQ(TimedChoice::parse(bad), std::nullopt) << bad;
}

}  // namespace
}  // namespace tgr
