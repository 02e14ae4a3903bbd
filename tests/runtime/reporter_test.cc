// Reporter against an in-process rendezvous server: periodic reports reach
// the ReportBoard with the WorkerStats' counts, complete recovery marks are
// sent at once, a refused or unanswered report is dropped without
// retrying, and Stop sends the last counts and returns promptly whether
// the driver is there or not.
#include "hvd/runtime/reporter.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "hvd/rendezvous/server.h"

namespace hvd::runtime {
namespace {

using namespace std::chrono_literals;
using Reports = std::map<std::string, rendezvous::WorkerReport>;

constexpr char kSecret[] = "reporter-test-secret";
constexpr char kSlot[] = "127.0.0.1:0";

class ReporterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rendezvous::ServerOptions options;
    options.secret = kSecret;
    options.threads = 4;
    auto server = rendezvous::RendezvousServer::Start(options);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
    server_->reports().SetListener([this] {
      std::lock_guard<std::mutex> lock(mu_);
      ++stored_;
      stored_changed_.notify_all();
    });
    server_->reports().Admit({{kSlot, 7}});
  }

  ReporterOptions Options(std::chrono::milliseconds interval) {
    ReporterOptions options;
    options.host = "127.0.0.1";
    options.port = server_->port();
    options.key = common::WorkerKey(kSecret, {7, kSlot});
    options.slot = kSlot;
    options.worker_id = 7;
    options.interval = interval;
    return options;
  }

  // Waits (on the board's listener, up to `timeout`) until the latest
  // reports satisfy `done`; returns whether they did.
  bool WaitForReports(const std::function<bool(const Reports&)>& done,
                      std::chrono::milliseconds timeout = 20s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      int64_t seen;
      {
        std::lock_guard<std::mutex> lock(mu_);
        seen = stored_;
      }
      if (done(server_->reports().Latest())) return true;
      std::unique_lock<std::mutex> lock(mu_);
      if (!stored_changed_.wait_until(lock, deadline,
                                      [&] { return stored_ != seen; })) {
        return false;
      }
    }
  }

  int64_t stored() {
    std::lock_guard<std::mutex> lock(mu_);
    return stored_;
  }

  std::unique_ptr<rendezvous::RendezvousServer> server_;
  std::mutex mu_;
  std::condition_variable stored_changed_;
  int64_t stored_ = 0;  // reports the board stored
};

TEST_F(ReporterTest, ReportsTheCountsEveryInterval) {
  auto stats = std::make_shared<WorkerStats>();
  stats->GenerationJoined(0, false);
  stats->RuntimeStarted(1, 2);
  auto reporter = Reporter::Start(Options(50ms), stats);
  for (int i = 0; i < 5; ++i) stats->OpCompleted(OpType::kAllreduce, 400);
  stats->Stepped();
  ASSERT_TRUE(WaitForReports([](const Reports& r) {
    auto it = r.find(kSlot);
    return it != r.end() && it->second.ops.at("allreduce").count == 5;
  })) << "no report with 5 allreduces";
  stats->Stepped();
  stats->Committed();
  ASSERT_TRUE(WaitForReports([](const Reports& r) {
    return r.at(kSlot).steps == 2 && r.at(kSlot).commits == 1;
  }));
  Reports latest = server_->reports().Latest();
  const rendezvous::WorkerReport& report = latest.at(kSlot);
  EXPECT_EQ(report.worker, 7);
  EXPECT_EQ(report.pid, getpid());
  EXPECT_EQ(report.generation, 0);
  EXPECT_EQ(report.rank, 1);
  EXPECT_EQ(report.size, 2);
  EXPECT_EQ(report.ops.at("allreduce").bytes, 2000);
  EXPECT_EQ(report.ops.size(), static_cast<size_t>(kOpTypeCount));
  EXPECT_GE(report.received_count, 2);
  // Once stopped (the thread joined), every report it saw accepted is one
  // the board stored, and the other way round.
  reporter->Stop();
  EXPECT_EQ(reporter->accepted(),
            server_->reports().Latest().at(kSlot).received_count);
  EXPECT_EQ(reporter->accepted(), reporter->attempted());
}

TEST_F(ReporterTest, CompleteRecoveryMarksAreSentAtOnce) {
  auto stats = std::make_shared<WorkerStats>();
  // An hour's interval: only the marks' completion can send a report.
  auto reporter = Reporter::Start(Options(3600s), stats);
  stats->GenerationJoined(4, /*syncs=*/true);
  stats->RuntimeStarted(0, 3);
  stats->Synced();
  EXPECT_EQ(stored(), 0);
  stats->OpCompleted(OpType::kAllreduce, 4);
  ASSERT_TRUE(WaitForReports([](const Reports& r) {
    return r.count(kSlot) && r.at(kSlot).recovery;
  })) << "the completed marks were not sent at once";
  const auto recovery = server_->reports().Latest().at(kSlot).recovery;
  EXPECT_EQ(recovery->generation, 4);
  EXPECT_GE(recovery->connect_ms, 0);
  EXPECT_GE(recovery->sync_ms, 0);
  EXPECT_GE(recovery->first_step_ms, 0);
  EXPECT_EQ(server_->reports().Latest().at(kSlot).generation, 4);
}

TEST_F(ReporterTest, StopSendsTheLastCountsOnce) {
  auto stats = std::make_shared<WorkerStats>();
  auto reporter = Reporter::Start(Options(3600s), stats);
  reporter->Wake();
  ASSERT_TRUE(WaitForReports([](const Reports& r) { return r.count(kSlot); }));
  for (int i = 0; i < 9; ++i) stats->Stepped();
  reporter->Stop();
  // Stop joined the thread after its last report: the board has it now.
  Reports latest = server_->reports().Latest();
  EXPECT_EQ(latest.at(kSlot).steps, 9);
  EXPECT_EQ(latest.at(kSlot).received_count, 2);
  reporter->Stop();  // idempotent
  reporter.reset();
  EXPECT_EQ(server_->reports().Latest().at(kSlot).received_count, 2);
}

TEST_F(ReporterTest, RefusedReportsAreDroppedNotRetried) {
  server_->reports().Admit({{kSlot, 8}});  // this process is not worker 8
  auto stats = std::make_shared<WorkerStats>();
  auto reporter = Reporter::Start(Options(3600s), stats);
  const auto wait_attempted = [&](int64_t count) {
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (reporter->attempted() < count) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(1ms);
    }
    return true;
  };
  reporter->Wake();
  ASSERT_TRUE(wait_attempted(1));
  reporter->Wake();
  ASSERT_TRUE(wait_attempted(2));
  reporter->Stop();  // the server answered (404): one last attempt
  EXPECT_EQ(reporter->attempted(), 3) << "one attempt per report";
  EXPECT_EQ(reporter->accepted(), 0);
  EXPECT_EQ(stored(), 0);
  EXPECT_TRUE(server_->reports().Latest().empty());
}

TEST_F(ReporterTest, AGoneDriverDoesNotHoldTheStop) {
  auto stats = std::make_shared<WorkerStats>();
  ReporterOptions options = Options(3600s);
  server_->Stop();  // nothing listens on the port any more
  auto reporter = Reporter::Start(options, stats);
  reporter->Wake();
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (reporter->attempted() < 1 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_EQ(reporter->attempted(), 1);
  const auto stopping = std::chrono::steady_clock::now();
  reporter->Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - stopping, 500ms);
  EXPECT_EQ(reporter->attempted(), 1)
      << "no last report when the previous one got no answer";
  EXPECT_EQ(reporter->accepted(), 0);
}

TEST(ReporterOptionsTest, OnlyWorkersHvdrunStartedReport) {
  RuntimeConfig config;  // alone: no rendezvous server
  EXPECT_FALSE(ReporterOptions::For(config));
  config.rendezvous_addr = "10.0.0.1";
  config.rendezvous_port = 4000;
  config.worker_key = "k";
  config.hostname = "host-a";
  config.slot = "host-a:2";
  config.worker_id = 11;
  config.report_interval = 250ms;
  auto options = ReporterOptions::For(config);
  ASSERT_TRUE(options);
  EXPECT_EQ(options->host, "10.0.0.1");
  EXPECT_EQ(options->port, 4000);
  EXPECT_EQ(options->slot, "host-a:2");
  EXPECT_EQ(options->key, "k");
  EXPECT_EQ(options->worker_id, 11);
  EXPECT_EQ(options->interval, 250ms);
  EXPECT_EQ(options->timeout, 1000ms);
  config.report_interval = 0ms;  // HVD_REPORT_INTERVAL_SECONDS=0
  EXPECT_FALSE(ReporterOptions::For(config));
}

}  // namespace
}  // namespace hvd::runtime
