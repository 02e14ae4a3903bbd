#include "slurm/slurm_auth.h"

#include <gtest/gtest.h>

namespace hvd::launcher {
namespace {

TEST(SlurmAuthTest, ReadsTheSocketOfAScontrolAnswer) {
  EXPECT_EQ(MungeSocketFromSlurmConfig(
                "Configuration data as of 2026-11-28T21:00:00\n"
                "AccountingStorageType   = accounting_storage/slurmdbd\n"
                "AuthAltTypes            = (null)\n"
                "AuthInfo                = socket=/run/bed/munge.sock\n"
                "AuthType                = auth/munge\n"),
            "/run/bed/munge.sock");
  EXPECT_EQ(MungeSocketFromSlurmConfig("AuthInfo = (null)\n"), std::nullopt);
  EXPECT_EQ(MungeSocketFromSlurmConfig("AuthType = auth/munge\n"),
            std::nullopt);
}

TEST(SlurmAuthTest, ReadsTheSocketOfASlurmConf) {
  EXPECT_EQ(MungeSocketFromSlurmConfig(
                "# AuthInfo=socket=/commented/out\n"
                "ClusterName=bed\n"
                "AuthType=auth/munge\n"
                "authinfo=ttl=60, SOCKET=/var/run/m.sock # ours\n"
                "NodeName=node[1-3] CPUs=2\n"),
            "/var/run/m.sock");
  EXPECT_EQ(MungeSocketFromSlurmConfig("AuthInfo=\"socket=/q.sock\"\n"),
            "/q.sock");
  // Options without a socket, and other keys that contain the word.
  EXPECT_EQ(MungeSocketFromSlurmConfig("AuthInfo=ttl=60,cred_expire=120\n"),
            std::nullopt);
  EXPECT_EQ(MungeSocketFromSlurmConfig("AuthAltParameters=socket=/x\n"
                                       "AuthInfoX=socket=/y\n"
                                       "AuthInfo=socket=\n"),
            std::nullopt);
}

TEST(SlurmAuthTest, TheLastAuthInfoWins) {
  EXPECT_EQ(MungeSocketFromSlurmConfig("AuthInfo=socket=/first\n"
                                       "AuthInfo=socket=/second\r\n"),
            "/second");
  EXPECT_EQ(MungeSocketFromSlurmConfig("AuthInfo=socket=/first\n"
                                       "AuthInfo=ttl=5\n"),
            std::nullopt);
}

TEST(SlurmAuthTest, EmptyAndOddTextNamesNoSocket) {
  for (const char* text : {"", "\n\n", "=", "AuthInfo", "AuthInfo=",
                           "AuthInfo=,,,", "AuthInfo==", "# only"}) {
    EXPECT_EQ(MungeSocketFromSlurmConfig(text), std::nullopt) << text;
  }
}

}  // namespace
}  // namespace hvd::launcher
