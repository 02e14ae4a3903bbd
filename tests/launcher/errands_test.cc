// The driver's errand pool: bounded threads, and an errand that throws
// ends itself, never hvdrun.
#include "driver/errands.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace hvd::launcher {
namespace {

using common::Code;
using common::Status;

TEST(RunCatchingTest, AnExceptionBecomesAnInternalStatusNamingIt) {
  EXPECT_TRUE(RunCatching("x", [] {}).ok());
  Status thrown =
      RunCatching("a push", [] { throw std::runtime_error("bad bytes"); });
  EXPECT_EQ(thrown.code(), Code::kInternal);
  EXPECT_EQ(thrown.message(), "a push failed: bad bytes");
  Status odd = RunCatching("a probe", [] { throw 42; });
  EXPECT_EQ(odd.code(), Code::kInternal);
  EXPECT_NE(odd.message().find("a probe failed"), std::string::npos);
}

// Encoding a host name that is not UTF-8 without an error handler threw
// nlohmann's type_error on an errand thread: std::terminate, hvdrun gone.
TEST(ErrandsTest, AnErrandThatThrowsIsToldAndTheOthersRun) {
  std::vector<Status> told;  // written by the errand threads, read after
  std::mutex mu;
  std::atomic<int> ran{0};
  {
    Errands errands(2);
    errands.Run(
        [&](const Status& why) {
          std::lock_guard<std::mutex> lock(mu);
          told.push_back(why);
        },
        [] { (void)nlohmann::json("host\xff").dump(); });
    errands.Run([] { throw std::runtime_error("no one to tell"); });
    for (int i = 0; i < 10; ++i) errands.Run([&] { ++ran; });
    errands.JoinAll();
  }
  EXPECT_EQ(ran.load(), 10);
  ASSERT_EQ(told.size(), 1u);
  EXPECT_EQ(told[0].code(), Code::kInternal);
  EXPECT_NE(told[0].message().find("UTF-8"), std::string::npos)
      << told[0].message();
}

// A push to a thousand workers is a thousand errands on at most
// max_threads threads; every one of them runs.
TEST(ErrandsTest, AThousandErrandsRunOnABoundedPool) {
  std::mutex mu;
  std::condition_variable changed;
  bool open = false;
  int running = 0;
  int most = 0;
  std::atomic<int> done{0};
  Errands errands(8);
  for (int i = 0; i < 1000; ++i) {
    errands.Run([&] {
      std::unique_lock<std::mutex> lock(mu);
      most = std::max(most, ++running);
      changed.notify_all();
      changed.wait(lock, [&] { return open; });
      --running;
      ++done;
    });
  }
  EXPECT_LE(errands.threads(), 8u);
  {
    // Every thread is busy before the gate opens: the bound is reached,
    // and not passed.
    std::unique_lock<std::mutex> lock(mu);
    changed.wait(lock, [&] { return running == 8; });
    open = true;
    changed.notify_all();
  }
  errands.JoinAll();
  EXPECT_EQ(done.load(), 1000);
  EXPECT_EQ(most, 8);
}

}  // namespace
}  // namespace hvd::launcher
