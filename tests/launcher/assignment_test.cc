#include "assignment.h"

#include <gtest/gtest.h>

namespace hvd::launcher {
namespace {

TEST(AssignmentTest, ContiguousRanksPerHostInOrder) {
  auto ranks = AssignRanks({{"a", 2}, {"b", 2}}, 4);
  ASSERT_TRUE(ranks.ok());
  ASSERT_EQ(ranks->size(), 4u);
  const char* hosts[] = {"a", "a", "b", "b"};
  for (int r = 0; r < 4; ++r) {
    const SlotAssignment& slot = (*ranks)[r];
    EXPECT_EQ(slot.host, hosts[r]);
    EXPECT_EQ(slot.layout.rank, r);
    EXPECT_EQ(slot.layout.size, 4);
    EXPECT_EQ(slot.layout.local_rank, r % 2);
    EXPECT_EQ(slot.layout.local_size, 2);
    EXPECT_EQ(slot.layout.cross_rank, r / 2);
    EXPECT_EQ(slot.layout.cross_size, 2);
  }
}

TEST(AssignmentTest, UnevenHostsFollowHorovodsCrossRanks) {
  // a runs ranks 0-2, b runs 3: local rank 0 exists on both hosts, local
  // ranks 1 and 2 only on a.
  auto ranks = AssignRanks({{"a", 3}, {"b", 2}}, 4);
  ASSERT_TRUE(ranks.ok());
  EXPECT_EQ((*ranks)[0].layout.cross_size, 2);
  EXPECT_EQ((*ranks)[3].host, "b");
  EXPECT_EQ((*ranks)[3].layout.local_size, 1);
  EXPECT_EQ((*ranks)[3].layout.cross_rank, 1);
  EXPECT_EQ((*ranks)[1].layout.cross_size, 1);
  EXPECT_EQ((*ranks)[1].layout.cross_rank, 0);
}

TEST(AssignmentTest, RepeatedHostAddsSlots) {
  auto ranks = AssignRanks({{"a", 1}, {"b", 1}, {"a", 1}}, 3);
  ASSERT_TRUE(ranks.ok());
  EXPECT_EQ((*ranks)[1].host, "a");
  EXPECT_EQ((*ranks)[1].layout.local_rank, 1);
  EXPECT_EQ((*ranks)[2].host, "b");
}

TEST(AssignmentTest, TooFewSlotsIsAnError) {
  auto ranks = AssignRanks({{"a", 2}}, 3);
  ASSERT_FALSE(ranks.ok());
  EXPECT_EQ(ranks.status().code(), common::Code::kInvalidArgument);
}

}  // namespace
}  // namespace hvd::launcher
