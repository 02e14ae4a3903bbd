// Sealing without a munged: the refusal names the socket and what to do.
// (With a munged, the bed's Slurm test seals, unseals and replays:
// tests/integration/test_slurm_sealed.py.)
#include "remote/munge_seal.h"

#include <gtest/gtest.h>

namespace hvd::launcher {
namespace {

constexpr char kNoSocket[] = "/nonexistent/hvd-test/munge.socket";

TEST(MungeSealTest, NoMungedIsAnErrorNamingTheSocketNeverClearText) {
  auto sealed = MungeSeal("HVD_WORKER_KEY=secret", kNoSocket);
  ASSERT_FALSE(sealed.ok());
  const std::string& message = sealed.status().message();
  EXPECT_NE(message.find(kNoSocket), std::string::npos) << message;
  EXPECT_NE(message.find("is munged running"), std::string::npos) << message;
  EXPECT_EQ(message.find("secret"), std::string::npos) << message;
}

TEST(MungeSealTest, UnsealingWithoutMungedIsRefused) {
  auto payload = MungeUnseal("MUNGE:AAAA:", kNoSocket);
  ASSERT_FALSE(payload.ok());
  EXPECT_NE(payload.status().message().find(kNoSocket), std::string::npos)
      << payload.status().message();
}

TEST(MungeSealTest, TheDefaultSocketIsNamedAsSuch) {
  EXPECT_EQ(MungeSocketName(""), "libmunge's default socket");
  EXPECT_EQ(MungeSocketName("/s"), "the socket /s");
}

}  // namespace
}  // namespace hvd::launcher
