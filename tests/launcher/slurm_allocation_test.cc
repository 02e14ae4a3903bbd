#include "slurm/slurm_allocation.h"

#include <gtest/gtest.h>

#include <map>

namespace hvd::launcher {
namespace {

std::vector<std::string> Expand(std::string_view list) {
  auto names = ExpandHostList(list);
  EXPECT_TRUE(names.ok()) << names.status().message();
  return names.ok() ? *names : std::vector<std::string>{};
}

TEST(ExpandHostListTest, PlainNamesAndRanges) {
  EXPECT_EQ(Expand("node1"), std::vector<std::string>{"node1"});
  EXPECT_EQ(Expand("a,b"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(Expand("hvdt[1-3,5]"),
            (std::vector<std::string>{"hvdt1", "hvdt2", "hvdt3", "hvdt5"}));
}

TEST(ExpandHostListTest, KeepsZeroPaddingAndSuffixes) {
  EXPECT_EQ(Expand("gpu[08-10]"),
            (std::vector<std::string>{"gpu08", "gpu09", "gpu10"}));
  EXPECT_EQ(
      Expand("r[1-2]-n[1-2],login"),
      (std::vector<std::string>{"r1-n1", "r1-n2", "r2-n1", "r2-n2", "login"}));
}

TEST(ExpandHostListTest, RefusesMalformedLists) {
  for (std::string_view bad : {"", "a,,b", "n[1-", "n]1", "n[3-1]", "n[x]",
                               "n[1-2", "n[]", "n[1-99999999]"}) {
    EXPECT_FALSE(ExpandHostList(bad).ok()) << bad;
  }
}

TEST(ExpandNodeCountsTest, ExpandsRepeats) {
  auto counts = ExpandNodeCounts("2(x3),1");
  ASSERT_TRUE(counts.ok()) << counts.status().message();
  EXPECT_EQ(*counts, (std::vector<int>{2, 2, 2, 1}));
  EXPECT_FALSE(ExpandNodeCounts("2(3)").ok());
  EXPECT_FALSE(ExpandNodeCounts("2(x0)").ok());
  EXPECT_FALSE(ExpandNodeCounts("x").ok());
  EXPECT_FALSE(ExpandNodeCounts("").ok());
}

EnvLookup Env(std::map<std::string, std::string> values) {
  return [values](const char* name) -> std::optional<std::string> {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

TEST(AllocationFromEnvironmentTest, OutsideAnAllocation) {
  auto allocation = AllocationFromEnvironment(Env({}));
  ASSERT_TRUE(allocation.ok());
  EXPECT_FALSE(allocation->has_value());
}

TEST(AllocationFromEnvironmentTest, SlotsAreTasksPerNode) {
  auto allocation =
      AllocationFromEnvironment(Env({{"SLURM_JOB_ID", "42"},
                                     {"SLURM_JOB_NODELIST", "hvdt[1-3]"},
                                     {"SLURM_TASKS_PER_NODE", "2(x2),1"},
                                     {"SLURM_JOB_CPUS_PER_NODE", "8(x3)"}}));
  ASSERT_TRUE(allocation.ok()) << allocation.status().message();
  ASSERT_TRUE(allocation->has_value());
  const SlurmAllocation& a = **allocation;
  EXPECT_EQ(a.job_id, "42");
  ASSERT_EQ(a.nodes.size(), 3u);
  EXPECT_EQ(a.nodes[0].host, "hvdt1");
  EXPECT_EQ(a.nodes[0].slots, 2);
  EXPECT_EQ(a.nodes[2].host, "hvdt3");
  EXPECT_EQ(a.nodes[2].slots, 1);
  EXPECT_FALSE(a.cpus_per_task.has_value());
}

TEST(AllocationFromEnvironmentTest, WithoutTasksCpusPerTaskDivideCpus) {
  auto allocation =
      AllocationFromEnvironment(Env({{"SLURM_JOB_ID", "7"},
                                     {"SLURM_NODELIST", "a,b"},
                                     {"SLURM_JOB_CPUS_PER_NODE", "8,4"},
                                     {"SLURM_CPUS_PER_TASK", "4"}}));
  ASSERT_TRUE(allocation.ok()) << allocation.status().message();
  const SlurmAllocation& a = **allocation;
  ASSERT_EQ(a.nodes.size(), 2u);
  EXPECT_EQ(a.nodes[0].slots, 2);
  EXPECT_EQ(a.nodes[1].slots, 1);
  EXPECT_EQ(a.cpus_per_task, 4);
}

TEST(AllocationFromEnvironmentTest, MismatchedCountsNameTheVariables) {
  auto allocation =
      AllocationFromEnvironment(Env({{"SLURM_JOB_ID", "7"},
                                     {"SLURM_JOB_NODELIST", "a,b"},
                                     {"SLURM_TASKS_PER_NODE", "1(x3)"}}));
  ASSERT_FALSE(allocation.ok());
  EXPECT_NE(allocation.status().message().find("SLURM_TASKS_PER_NODE"),
            std::string::npos);
  EXPECT_NE(allocation.status().message().find("SLURM_JOB_NODELIST"),
            std::string::npos);
  EXPECT_FALSE(AllocationFromEnvironment(Env({{"SLURM_JOB_ID", "7"}})).ok());
}

// Slurm's node list goes through the one host rule: a node name that
// starts with '-' would be an option of ssh, and is refused naming it.
TEST(AllocationFromEnvironmentTest, ANodeNameStartingWithDashIsRefused) {
  auto allocation =
      AllocationFromEnvironment(Env({{"SLURM_JOB_ID", "7"},
                                     {"SLURM_JOB_NODELIST", "a,-oProxyCommand"},
                                     {"SLURM_TASKS_PER_NODE", "1(x2)"}}));
  ASSERT_FALSE(allocation.ok());
  EXPECT_NE(allocation.status().message().find(
                "host name '-oProxyCommand' starts with '-'"),
            std::string::npos)
      << allocation.status().message();
}

}  // namespace
}  // namespace hvd::launcher
