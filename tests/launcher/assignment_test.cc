#include "job/assignment.h"

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

TEST(AssignmentTest, TooFewSlotsIsAnError) {
  auto ranks = AssignRanks({{"a", 2}}, 3);
  ASSERT_FALSE(ranks.ok());
  EXPECT_EQ(ranks.status().code(), common::Code::kInvalidArgument);
}

TEST(AssignmentTest, RanksOfAHostCarryNoIndexOfTheirOwn) {
  auto ranks = AssignRanks({{"a", 2}}, 2);
  ASSERT_TRUE(ranks.ok());
  for (const SlotAssignment& slot : *ranks) {
    EXPECT_FALSE(slot.index.has_value());
    EXPECT_EQ(SlotIndex(slot), slot.layout.local_rank);
  }
}

TEST(AssignmentTest, GroupsAreHostsToTheRuntimeAndSlotsKeepTheirIndex) {
  // Host a's slot 0 follows its slots 1 and 2 as a group of its own; b's
  // slot 0 is out.
  auto ranks = AssignSlots({{"a", {1, 2}}, {"a", {0}}, {"b", {1}}}, 4);
  ASSERT_TRUE(ranks.ok());
  ASSERT_EQ(ranks->size(), 4u);
  struct Want {
    std::string host;
    int index, rank, local_rank, local_size, cross_rank, cross_size;
  };
  const Want want[] = {{"a", 1, 0, 0, 2, 0, 3},
                       {"a", 2, 1, 1, 2, 0, 1},
                       {"a", 0, 2, 0, 1, 1, 3},
                       {"b", 1, 3, 0, 1, 2, 3}};
  for (int r = 0; r < 4; ++r) {
    const SlotAssignment& slot = (*ranks)[r];
    EXPECT_EQ(slot.host, want[r].host) << r;
    EXPECT_EQ(SlotIndex(slot), want[r].index) << r;
    EXPECT_EQ(slot.index.has_value(), want[r].index != want[r].local_rank) << r;
    EXPECT_EQ(slot.layout.rank, want[r].rank) << r;
    EXPECT_EQ(slot.layout.size, 4) << r;
    EXPECT_EQ(slot.layout.local_rank, want[r].local_rank) << r;
    EXPECT_EQ(slot.layout.local_size, want[r].local_size) << r;
    EXPECT_EQ(slot.layout.cross_rank, want[r].cross_rank) << r;
    EXPECT_EQ(slot.layout.cross_size, want[r].cross_size) << r;
  }
}

TEST(AssignmentTest, GroupsFillInOrderUpToTheProcessCount) {
  auto ranks = AssignSlots({{"a", {0, 2}}, {"b", {0, 1}}}, 3);
  ASSERT_TRUE(ranks.ok());
  ASSERT_EQ(ranks->size(), 3u);
  EXPECT_EQ(SlotIndex((*ranks)[1]), 2);
  EXPECT_EQ((*ranks)[2].host, "b");
  EXPECT_EQ((*ranks)[2].layout.local_size, 1);
  EXPECT_FALSE(AssignSlots({{"a", {0}}}, 2).ok());
}

}  // namespace
}  // namespace hvd::launcher
