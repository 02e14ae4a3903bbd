// Job files as `hvdrun status` reads them: a file names its hvdrun by pid
// and start time, so a dead hvdrun's file is dropped even when its pid was
// reused or is a zombie.
#include "status/job_file.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

namespace hvd::launcher {
namespace {

TEST(ProcessStatTest, ReadsStateAndStartAfterTheLastParenthesis) {
  // A command name with spaces and parentheses of its own.
  const std::string line =
      "4242 (a) b (c)) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 "
      "987654 1000 10 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0";
  auto stat = ParseProcessStat(line);
  ASSERT_TRUE(stat.has_value());
  EXPECT_EQ(stat->state, 'S');
  EXPECT_EQ(stat->start, 987654);
}

TEST(ProcessStatTest, TextThatIsNoStatLineIsRefused) {
  EXPECT_FALSE(ParseProcessStat("").has_value());
  EXPECT_FALSE(ParseProcessStat("4242 (hvdrun) S 1 2 3").has_value());
  EXPECT_FALSE(ParseProcessStat("no parenthesis at all").has_value());
}

// A child that has exited and was not reaped: its pid answers kill(pid, 0).
pid_t Zombie() {
  pid_t child = fork();
  if (child == 0) _exit(0);
  siginfo_t info{};
  waitid(P_PID, child, &info, WEXITED | WNOWAIT);  // exited, still unreaped
  return child;
}

TEST(StillRunsTest, OnlyTheProcessThatStartedWhenTheFileSays) {
  const int64_t start = OwnProcessStart();
  ASSERT_GT(start, 0);
  EXPECT_TRUE(StillRuns({getpid(), "u", "c", 0, start}));
  EXPECT_FALSE(StillRuns({getpid(), "u", "c", 0, start + 1}))
      << "a reused pid is another process";
  pid_t zombie = Zombie();
  EXPECT_FALSE(StillRuns({zombie, "u", "c", 0, 0}));
  waitpid(zombie, nullptr, 0);
  EXPECT_FALSE(StillRuns({zombie, "u", "c", 0, 0}));
  EXPECT_FALSE(StillRuns({0, "u", "c", 0, 0}));
}

TEST(RunningJobsTest, ListsLiveJobsAndRemovesTheFilesOfDeadOnes) {
  char dir[] = "/tmp/hvd-job-file-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  ASSERT_EQ(setenv("XDG_RUNTIME_DIR", dir, 1), 0);
  pid_t zombie = Zombie();
  auto own =
      WriteJobFile({getpid(), "http://own", "train", 2, OwnProcessStart()});
  auto reused = WriteJobFile({zombie, "http://dead", "train", 1, 0});
  ASSERT_TRUE(own.ok()) << own.status().message();
  ASSERT_TRUE(reused.ok()) << reused.status().message();

  auto jobs = RunningJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status().message();
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].url, "http://own");
  EXPECT_EQ((*jobs)[0].process_start, OwnProcessStart());
  EXPECT_FALSE(std::filesystem::exists(*reused));
  EXPECT_TRUE(std::filesystem::exists(*own));

  // hvdrun removes its file before its status server stops answering: a
  // job whose file is gone has ended, though its process still runs.
  EXPECT_TRUE(StillListed((*jobs)[0]));
  RemoveJobFile(*own);
  EXPECT_FALSE(StillListed((*jobs)[0]));
  EXPECT_TRUE(StillRuns((*jobs)[0]));
  waitpid(zombie, nullptr, 0);
  unsetenv("XDG_RUNTIME_DIR");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace hvd::launcher
