// The op table's invariants: the runtime's parts look an op up instead of
// switching on it, so a row that breaks these breaks them all.
#include "ops/op_table.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace hvd::runtime {
namespace {

TEST(OpTableTest, EveryOpTypeHasItsOwnRowAndNames) {
  std::set<std::string> names, activities, negotiations;
  for (int i = 0; i < kOpTypeCount; ++i) {
    const auto type = static_cast<OpType>(i);
    const OpInfo& op = OpInfoOf(type);
    EXPECT_EQ(op.type, type);
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

TEST(OpTableTest, OnlyProcessSetChangesHaveNoExecutor) {
  for (int i = 0; i < kOpTypeCount; ++i) {
    const OpInfo& op = OpInfoOf(static_cast<OpType>(i));
    const bool set_change = op.type == OpType::kAddProcessSet ||
                            op.type == OpType::kRemoveProcessSet;
    const int executors = (op.fused != nullptr) + (op.single != nullptr);
    EXPECT_EQ(executors, set_change ? 0 : 1) << op.name;
    // The fusion buffer and the byte counts assume fused ops move data.
    EXPECT_TRUE(op.fused == nullptr || op.payload) << op.name;
    EXPECT_TRUE(!op.needs_rows || op.payload) << op.name;
  }
}

}  // namespace
}  // namespace hvd::runtime
