// The replay guard with synthetic clocks.
#include "replay_guard.h"

#include <gtest/gtest.h>

#include <string>

namespace hvd::common {
namespace {

using namespace std::chrono_literals;

std::string Nonce(int i) {
  char text[33];
  std::snprintf(text, sizeof(text), "%032x", i);
  return text;
}

constexpr int64_t kT0 = 1'700'000'000'000;

TEST(ReplayGuardTest, ANonceIsAcceptedOnceWithinTheWindow) {
  ReplayGuard guard(60s, 1000);
  EXPECT_TRUE(guard.Admit(Nonce(1), kT0, kT0).ok());
  Status again = guard.Admit(Nonce(1), kT0, kT0 + 59'000);
  EXPECT_EQ(again.code(), Code::kUnauthenticated);
  EXPECT_NE(again.message().find("replayed"), std::string::npos);
  EXPECT_TRUE(guard.Admit(Nonce(2), kT0, kT0).ok());
  EXPECT_EQ(guard.size(), 2u);
}

TEST(ReplayGuardTest, NoncesAreForgottenOnceTheirTimestampIsStale) {
  ReplayGuard guard(60s, 1000);
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(guard.Admit(Nonce(i), kT0, kT0).ok());
  }
  EXPECT_EQ(guard.size(), 100u);
  // A minute and a bit later, every nonce signed at kT0 would fail the
  // window check anyway: none is kept.
  EXPECT_TRUE(guard.Admit(Nonce(500), kT0 + 62'000, kT0 + 62'000).ok());
  EXPECT_EQ(guard.size(), 1u);
}

TEST(ReplayGuardTest, AFullGuardForgetsTheOldestAndRefusesBelowItsFloor) {
  ReplayGuard guard(64s, 10);  // buckets of 1 s
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(guard.Admit(Nonce(i), kT0 + i * 1000, kT0 + 10'000).ok());
  }
  // Full: the newest request makes the oldest second be forgotten ...
  EXPECT_TRUE(guard.Admit(Nonce(100), kT0 + 10'000, kT0 + 10'000).ok());
  EXPECT_LE(guard.size(), 10u);
  EXPECT_EQ(guard.floor_ms(), kT0 + 1000);
  // ... and a replay from that second cannot slip through: refused, as
  // retry-later (503), since an honest but slow request from that second
  // is refused the same way and must not fail for good.
  Status replay = guard.Admit(Nonce(0), kT0, kT0 + 10'000);
  EXPECT_EQ(replay.code(), Code::kResourceExhausted);
  EXPECT_NE(replay.message().find("signed again"), std::string::npos);

  // Requests signed now still pass.
  EXPECT_TRUE(guard.Admit(Nonce(101), kT0 + 10'000, kT0 + 10'000).ok());
}

TEST(ReplayGuardTest, ARequestWhoseOwnSecondIsForgottenIsRetryLater) {
  ReplayGuard guard(64s, 10);  // buckets of 1 s
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(guard.Admit(Nonce(i), kT0 + i * 1000, kT0 + 10'000).ok());
  }
  // A fresh nonce from the oldest second: room is made by forgetting that
  // very second, so the request lands below the new floor. It is not the
  // client's fault, so it may retry (503), signed again.
  Status late = guard.Admit(Nonce(50), kT0 + 10, kT0 + 10'000);
  EXPECT_EQ(late.code(), Code::kResourceExhausted);
  EXPECT_EQ(guard.floor_ms(), kT0 + 1000);
}

TEST(ReplayGuardTest, OneSecondOverCapacityIsRetryLaterNotForgotten) {
  ReplayGuard guard(64s, 5);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(guard.Admit(Nonce(i), kT0, kT0).ok());
  }
  EXPECT_EQ(guard.Admit(Nonce(9), kT0, kT0).code(), Code::kResourceExhausted);
  EXPECT_EQ(guard.Admit(Nonce(0), kT0, kT0).code(), Code::kUnauthenticated);
}

TEST(ReplayGuardTest, MalformedNoncesAreRefused) {
  ReplayGuard guard(60s, 10);
  for (const std::string& bad :
       {std::string(""), std::string("abc"), std::string(32, 'g'),
        std::string(32, 'A'), std::string(33, '0')}) {
    EXPECT_EQ(guard.Admit(bad, kT0, kT0).code(), Code::kInvalidArgument) << bad;
  }
  EXPECT_EQ(guard.size(), 0u);
}

}  // namespace
}  // namespace hvd::common
