// A process forked after a Runtime (and an ElasticWorker) started: every
// call in the fork fails at once with the fork error instead of waiting for
// a background thread that does not exist there; shutting down and
// destroying them in the fork returns; and the parent's runtime and
// notification server go on working.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "hvd/notify/client.h"
#include "hvd/runtime/elastic_worker.h"
#include "hvd/runtime/runtime.h"

namespace hvd::runtime {
namespace {

using common::Code;
using namespace std::chrono_literals;

constexpr char kSecret[] = "fork-test-secret";

// The first problem found in the fork, or "" when everything held.
std::string CheckInFork(std::unique_ptr<Runtime> runtime, Handle unwaited,
                        std::unique_ptr<ElasticWorker> elastic, pid_t parent) {
  const std::string pids = "process " + std::to_string(parent) +
                           "; this process (pid " + std::to_string(getpid()) +
                           ") is a fork of it";
  auto is_fork_error = [&](const common::Status& status) {
    return status.code() == Code::kInvalidArgument &&
           status.message().find(pids) != std::string::npos &&
           status.message().find("hvd.init()") != std::string::npos;
  };
  std::vector<float> data(4, 1.0f);
  TensorSpec spec;
  spec.name = "in_fork";
  spec.shape = {4};
  auto handle = runtime->Allreduce(spec, data.data(), data.data(), {});
  if (handle.ok()) return "an allreduce was enqueued in the fork";
  if (!is_fork_error(handle.status())) {
    return "allreduce: " + handle.status().ToString();
  }
  if (!is_fork_error(runtime->CheckProcess())) return "CheckProcess is ok";
  auto waited = runtime->Wait(unwaited);
  if (waited.ok() || !is_fork_error(waited.status())) {
    return "waiting on the parent's handle did not fail as a fork";
  }
  auto polled = runtime->Poll(unwaited);
  if (polled.ok()) return "poll did not fail";
  if (runtime->Stats(0).ok()) return "stats did not fail";
  if (!runtime->ProcessSets().empty()) return "process sets in the fork";
  if (runtime->Barrier().ok()) return "barrier was enqueued";
  runtime->Abort("test");  // must not cut the parent's connections
  runtime->Shutdown();     // must not wait for the parent's thread
  runtime.reset();
  auto joined = elastic->JoinNext(RuntimeConfig());
  if (joined.ok() || joined.status().code() != Code::kInvalidArgument ||
      joined.status().message().find("fork of elastic worker " +
                                     std::to_string(parent)) ==
          std::string::npos) {
    return "JoinNext in the fork: " + joined.status().ToString();
  }
  elastic.reset();  // must not stop the parent's server
  return "";
}

TEST(ForkTest, ForkFailsFastAndLeavesTheParentsRuntimeAlone) {
  RuntimeConfig config;  // one rank, no rendezvous
  config.stall_check = false;
  auto started = Runtime::Start(config);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  std::unique_ptr<Runtime> runtime = std::move(*started);
  ASSERT_TRUE(runtime->CheckProcess().ok());
  RuntimeConfig notify_config;
  notify_config.hostname = "127.0.0.1";
  notify_config.worker_key = kSecret;
  auto elastic = ElasticWorker::Start(notify_config);
  ASSERT_TRUE(elastic.ok()) << elastic.status().ToString();
  std::vector<float> data(4, 2.0f);
  TensorSpec spec;
  spec.name = "before_fork";
  spec.shape = {4};
  auto unwaited = runtime->Allreduce(spec, data.data(), data.data(), {});
  ASSERT_TRUE(unwaited.ok());

  int report[2];
  ASSERT_EQ(pipe(report), 0);
  const pid_t parent = getpid();
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(60);  // a hang in the fork ends it (by SIGALRM), failing the test
    close(report[0]);
    // The fork works on its copies; the parent's objects stay its own.
    std::string problem =
        CheckInFork(std::unique_ptr<Runtime>(runtime.release()), *unwaited,
                    std::unique_ptr<ElasticWorker>(elastic->release()), parent);
    ssize_t written = write(report[1], problem.data(), problem.size());
    _exit(problem.empty() && written == 0 ? 0 : 1);
  }
  close(report[1]);
  std::string problem;
  char buffer[512];
  for (ssize_t n; (n = read(report[0], buffer, sizeof buffer)) > 0;) {
    problem.append(buffer, static_cast<size_t>(n));
  }
  close(report[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_EQ(problem, "");
  ASSERT_TRUE(WIFEXITED(status))
      << "the fork died of signal " << WTERMSIG(status) << " (14: it hung)";
  EXPECT_EQ(WEXITSTATUS(status), 0);

  // The parent's runtime still runs collectives, and its notification
  // server still answers.
  auto waited = runtime->Wait(*unwaited);
  ASSERT_TRUE(waited.ok()) << waited.status().ToString();
  EXPECT_TRUE(waited->status.ok()) << waited->status.ToString();
  spec.name = "after_fork";
  auto after = runtime->Allreduce(spec, data.data(), data.data(), {});
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  auto result = runtime->Wait(*after);
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(result->status.ok()) << result->status.ToString();
  notify::HostsUpdated update;
  update.generation = 7;
  update.sequence = 1;
  ASSERT_TRUE(notify::SendHostsUpdated((*elastic)->notify_address(), kSecret,
                                       update, 10s)
                  .ok());
  auto give_up = std::chrono::steady_clock::now() + 30s;
  while ((*elastic)->PendingHostsUpdate() != 7 &&
         std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_EQ((*elastic)->PendingHostsUpdate(), 7);
  runtime->Shutdown();
}

}  // namespace
}  // namespace hvd::runtime
