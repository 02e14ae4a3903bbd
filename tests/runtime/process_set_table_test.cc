#include <gtest/gtest.h>

#include "engine/process_set.h"

namespace hvd::runtime {
namespace {

std::shared_ptr<ProcessSet> Set(int32_t id, std::vector<int> ranks) {
  auto set = std::make_shared<ProcessSet>();
  set->id = id;
  set->ranks = std::move(ranks);
  return set;
}

// Horovod's numbering: new sets count up from 1; a removed set's id is
// given again first, the oldest removal first.
TEST(ProcessSetTableTest, RemovedIdsAreGivenAgainOldestFirst) {
  ProcessSetTable table;
  table.Insert(Set(0, {0, 1, 2}));
  EXPECT_EQ(table.next_id(), 1);
  table.Insert(Set(table.next_id(), {0}));
  table.Insert(Set(table.next_id(), {1}));
  table.Insert(Set(table.next_id(), {2}));
  EXPECT_EQ(table.next_id(), 4);
  ASSERT_NE(table.Remove(2), nullptr);
  ASSERT_NE(table.Remove(1), nullptr);
  EXPECT_EQ(table.next_id(), 2) << "set 2 was removed first";
  table.Insert(Set(table.next_id(), {0, 1}));
  EXPECT_EQ(table.next_id(), 1);
  table.Insert(Set(table.next_id(), {1, 2}));
  EXPECT_EQ(table.next_id(), 4) << "no removed id is left";
  EXPECT_EQ(table.Find(2)->ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(table.Find(1)->ranks, (std::vector<int>{1, 2}));
}

// A set that gets a removed set's id again needs rendezvous keys of its own
// (the removed set's published addresses are stale): the count of
// insertions, which every rank keeps alike, never repeats.
TEST(ProcessSetTableTest, InsertionsAreCountedAcrossReusedIds) {
  ProcessSetTable table;
  table.Insert(Set(0, {0, 1}));
  table.Insert(Set(table.next_id(), {0}));
  const int64_t first = table.inserted();
  ASSERT_NE(table.Remove(1), nullptr);
  ASSERT_EQ(table.next_id(), 1);
  table.Insert(Set(table.next_id(), {0}));
  EXPECT_EQ(table.Find(1)->ranks, (std::vector<int>{0}));
  EXPECT_EQ(table.inserted(), first + 1);
}

TEST(ProcessSetTableTest, RemovingAMissingSetFreesNothing) {
  ProcessSetTable table;
  table.Insert(Set(0, {0, 1}));
  EXPECT_EQ(table.Remove(5), nullptr);
  EXPECT_EQ(table.next_id(), 1);
}

Response Answered(OpType type, const std::string& name) {
  Response r;
  r.request.type = type;
  r.request.name = name;
  return r;
}

// A member that had joined, or whose collective was refused, counts on
// from the highest unnamed number the set answered; user names and a
// lower number change nothing.
TEST(ProcessSetTest, UnnamedCountCatchesUpWithTheAnsweredNumbers) {
  ProcessSet set;
  set.unnamed = 2;
  CatchUpUnnamed(set, {Answered(OpType::kAllgather, "allgather.noname.1"),
                       Answered(OpType::kAllreduce, "grads"),
                       Answered(OpType::kAllreduce, "allreduce.noname.5"),
                       Answered(OpType::kBarrier, "barrier.noname.4")});
  EXPECT_EQ(set.unnamed.load(), 5);
  CatchUpUnnamed(set, {Answered(OpType::kAllreduce, "allreduce.noname.3")});
  EXPECT_EQ(set.unnamed.load(), 5);
}

}  // namespace
}  // namespace hvd::runtime
