#include "slurm/slurm_jobs.h"

#include <gtest/gtest.h>

namespace hvd::launcher {
namespace {

TEST(ParseSqueueJobsTest, ReadsPaddedColumns) {
  auto jobs = ParseSqueueJobs(
      "12                 4           2           hvdt[1-2]\n"
      "\n"
      "13                 2           1           hvdt4\n");
  ASSERT_TRUE(jobs.ok()) << jobs.status().message();
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[0].id, "12");
  EXPECT_EQ((*jobs)[0].tasks, 4);
  EXPECT_EQ((*jobs)[0].node_names,
            (std::vector<std::string>{"hvdt1", "hvdt2"}));
  EXPECT_FALSE(ParseSqueueJobs("12 4\n").ok());
  EXPECT_FALSE(ParseSqueueJobs("12 4 0 hvdt1\n").ok());
  EXPECT_FALSE(ParseSqueueJobs("12 4 1 hvdt[\n").ok());
}

SlurmAllocation Own() {
  return SlurmAllocation{"7", {{"a", 2}, {"b", 2}, {"c", 2}}, std::nullopt};
}

TEST(UsableNodesTest, OwnNodesStillInTheJobThenCompanions) {
  std::vector<SlurmJob> companions = {{"9", 4, 2, {"d", "b"}},
                                      {"10", 1, 1, {"e"}}};
  auto nodes =
      UsableNodes(Own(), std::vector<std::string>{"a", "b"}, companions);
  ASSERT_EQ(nodes.size(), 4u);
  EXPECT_EQ(nodes[0].host.host, "a");
  EXPECT_EQ(nodes[0].job_id, "7");
  EXPECT_EQ(nodes[1].host.host, "b");  // c left the job (a node failure)
  EXPECT_EQ(nodes[2].host.host, "d");  // b counts once, for the job itself
  EXPECT_EQ(nodes[2].host.slots, 2);   // 4 tasks on 2 nodes
  EXPECT_EQ(nodes[2].job_id, "9");
  EXPECT_EQ(nodes[3].host.host, "e");
  EXPECT_EQ(nodes[3].host.slots, 1);
}

TEST(UsableNodesTest, WithoutTheJobsNodeListEveryOwnNodeCounts) {
  auto nodes = UsableNodes(Own(), std::nullopt, {});
  EXPECT_EQ(nodes.size(), 3u);
}

TEST(GrowJobNameTest, DefaultsToTheJobIdAndCanBeNamed) {
  auto none = [](const char*) -> std::optional<std::string> {
    return std::nullopt;
  };
  EXPECT_EQ(GrowJobName(Own(), none), "hvd-grow-7");
  auto named = [](const char* name) -> std::optional<std::string> {
    if (std::string(name) == "HVD_SLURM_GROW_NAME") return "more";
    return std::nullopt;
  };
  EXPECT_EQ(GrowJobName(Own(), named), "more");
}

TEST(DescribeSlurmNodesTest, StateAndReasonPerNodeAskedAbout) {
  auto lines = DescribeSlurmNodes({"c", "a", "z"},
                                  "a|idle|none\n"
                                  "c|down*|Not responding\n"
                                  "c|down*|Not responding\n");
  EXPECT_EQ(lines, (std::vector<std::string>{"node c: down* (Not responding)",
                                             "node a: idle",
                                             "node z: unknown to Slurm"}));
}

}  // namespace
}  // namespace hvd::launcher
