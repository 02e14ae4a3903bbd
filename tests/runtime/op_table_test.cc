// The op tables' invariants: the runtime's parts look an op up instead of
// switching on it (negotiation/op_info.h for what the ranks agree on,
// ops/op_table.h for how it runs), so a row that breaks these breaks them
// all.
#include <gtest/gtest.h>

#include <cctype>
#include <set>
#include <string>

#include "negotiation/op_info.h"
#include "ops/op_table.h"

namespace hvd::runtime {
namespace {

TEST(OpTableTest, EveryOpTypeHasItsOwnRowAndNames) {
  std::set<std::string> names, activities, negotiations;
  for (int i = 0; i < kOpTypeCount; ++i) {
    const auto type = static_cast<OpType>(i);
    const OpInfo& op = OpInfoOf(type);
    EXPECT_EQ(op.type, type);
    EXPECT_EQ(OpExecutorsOf(type).type, type);
    EXPECT_STREQ(OpTypeName(type), op.name);
    names.insert(op.name);
    activities.insert(op.activity);
    negotiations.insert(op.negotiate_activity);
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(kOpTypeCount));
  EXPECT_EQ(activities.size(), static_cast<size_t>(kOpTypeCount));
  EXPECT_EQ(negotiations.size(), static_cast<size_t>(kOpTypeCount));
  EXPECT_STREQ(OpTypeName(static_cast<OpType>(kOpTypeCount)), "unknown");
}

// The timeline's activities, as Horovod's timeline spells them.
TEST(OpTableTest, ActivityNamesAreTheOpNamesInUpperCase) {
  for (int i = 0; i < kOpTypeCount; ++i) {
    const OpInfo& op = OpInfoOf(static_cast<OpType>(i));
    std::string upper = op.name;
    for (char& c : upper) c = static_cast<char>(std::toupper(c));
    EXPECT_EQ(op.activity, upper);
    EXPECT_EQ(op.negotiate_activity, "NEGOTIATE_" + upper);
  }
  EXPECT_STREQ(OpInfoOf(OpType::kAllreduce).activity, "ALLREDUCE");
  EXPECT_STREQ(OpInfoOf(OpType::kAllgather).negotiate_activity,
               "NEGOTIATE_ALLGATHER");
}

TEST(OpTableTest, OnlyProcessSetChangesHaveNoExecutor) {
  for (int i = 0; i < kOpTypeCount; ++i) {
    const auto type = static_cast<OpType>(i);
    const OpInfo& op = OpInfoOf(type);
    const OpExecutors& run = OpExecutorsOf(type);
    const bool set_change =
        type == OpType::kAddProcessSet || type == OpType::kRemoveProcessSet;
    const int executors = (run.fused != nullptr) + (run.single != nullptr);
    EXPECT_EQ(executors, set_change ? 0 : 1) << op.name;
    // The fusion buffer and the byte counts assume fused ops move data.
    EXPECT_TRUE(run.fused == nullptr || op.payload) << op.name;
    EXPECT_TRUE(!op.needs_rows || op.payload) << op.name;
  }
}

// Python hands CUDA tensors to every collective that moves data; a CUDA
// executor is of the same kind (fused or single) as the host one.
TEST(OpTableTest, EveryOpThatMovesDataRunsOnGpus) {
  for (int i = 0; i < kOpTypeCount; ++i) {
    const auto type = static_cast<OpType>(i);
    const OpExecutors& run = OpExecutorsOf(type);
    if (!OpInfoOf(type).payload) {
      EXPECT_TRUE(run.gpu_fused == nullptr && run.gpu_single == nullptr)
          << OpTypeName(type);
      continue;
    }
    EXPECT_EQ(run.gpu_fused != nullptr, run.fused != nullptr)
        << OpTypeName(type);
    EXPECT_EQ(run.gpu_single != nullptr, run.single != nullptr)
        << OpTypeName(type);
  }
}

}  // namespace
}  // namespace hvd::runtime
