// The host check's pure parts: its answer's format, and the verdict and
// message for each way one ssh run can end.
#include "policy/host_check.h"

#include <gtest/gtest.h>
#include <signal.h>

namespace hvd::launcher {
namespace {

int Exit(int code) { return code << 8; }  // a wait status: exited with code

const std::vector<NetworkInterface> kInterfaces = {{"lo", "127.0.0.1"},
                                                   {"eth0", "10.213.0.11"}};

SshOutcome Exited(int code, std::string out = "", std::string err = "") {
  return SshOutcome{Exit(code), false, std::move(out), std::move(err)};
}

TEST(HostCheckAnswerTest, RoundTrips) {
  std::string answer = FormatHostCheckAnswer(kInterfaces);
  EXPECT_EQ(answer, "hvd-host-check 1\nlo 127.0.0.1\neth0 10.213.0.11\n");
  auto parsed = ParseHostCheckAnswer(answer);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(*parsed, kInterfaces);
  auto none = ParseHostCheckAnswer(FormatHostCheckAnswer({}));
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(HostCheckAnswerTest, WhatALoginScriptPrintsFirstIsSkipped) {
  auto parsed = ParseHostCheckAnswer("Welcome to node3!\nlast login: never\n" +
                                     FormatHostCheckAnswer(kInterfaces) + "\n");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(*parsed, kInterfaces);
  // CRLF and blanks as some shells add them.
  parsed = ParseHostCheckAnswer("hvd-host-check 1\r\n  lo 127.0.0.1 \r\n");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(parsed->size(), 1u);
}

TEST(HostCheckAnswerTest, GarbageIsAnErrorQuotingIt) {
  auto parsed = ParseHostCheckAnswer("usage: hvdrun [options]\n");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find(
                "did not answer as hvdrun's host check does: 'usage: hvdrun "
                "[options]'"),
            std::string::npos)
      << parsed.status().message();
  EXPECT_NE(ParseHostCheckAnswer("").status().message().find("(no output)"),
            std::string::npos);
  for (const char* bad :
       {"hvd-host-check 1\neth0\n", "hvd-host-check 1\neth0 10.0.0.300\n",
        "hvd-host-check 1\neth0 10.0.0.1 extra\n"}) {
    auto result = ParseHostCheckAnswer(bad);
    ASSERT_FALSE(result.ok()) << bad;
    EXPECT_NE(result.status().message().find("'interface IPv4-address'"),
              std::string::npos)
        << result.status().message();
  }
}

TEST(JudgeHostCheckTest, AnAnswerIsTheHostsInterfaces) {
  auto verdict = JudgeHostCheck("node3", "/usr/bin/hvdrun", 30,
                                Exited(0, FormatHostCheckAnswer(kInterfaces)));
  ASSERT_TRUE(verdict.ok()) << verdict.status().message();
  EXPECT_EQ(*verdict, kInterfaces);
}

TEST(JudgeHostCheckTest, SshsOwnFailureQuotesItsLastLine) {
  auto verdict = JudgeHostCheck(
      "node3", "/usr/bin/hvdrun", 30,
      Exited(255, "",
             "Warning: Permanently added 'node3' (ED25519) to the list of "
             "known hosts.\r\nssh: connect to host node3 port 22: Connection "
             "refused\r\n"));
  ASSERT_FALSE(verdict.ok());
  EXPECT_EQ(verdict.status().message(),
            "cannot reach host node3 over ssh: ssh: connect to host node3 "
            "port 22: Connection refused");
  verdict = JudgeHostCheck("node3", "/usr/bin/hvdrun", 30, Exited(255));
  EXPECT_EQ(verdict.status().message(),
            "cannot reach host node3 over ssh: ssh exited with code 255");
}

// ssh's own words (OpenSSH 9.2) for a key it does not know under
// StrictHostKeyChecking yes, and for one that changed.
TEST(JudgeHostCheckTest, ARefusedHostKeySaysHowToTrustTheHost) {
  auto unknown = JudgeHostCheck(
      "node3", "/usr/bin/hvdrun", 30,
      Exited(255, "",
             "No ED25519 host key is known for node3 and you have requested "
             "strict checking.\r\nHost key verification failed.\r\n"));
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), common::Code::kUnauthenticated);
  EXPECT_EQ(unknown.status().message(),
            "cannot reach host node3 over ssh: ssh does not know its host key "
            "(ssh: Host key verification failed); no launch message was sent "
            "to it. Check the host's key fingerprint with its administrator, "
            "then add it to your known_hosts (ssh-keyscan node3 >> "
            "~/.ssh/known_hosts), or pass --ssh-accept-new-host-keys to let "
            "ssh record a host it has never seen");
  auto changed = JudgeHostCheck(
      "node3", "/usr/bin/hvdrun", 30,
      Exited(255, "",
             "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\r\n"
             "@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\r\n"
             "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\r\n"
             "Host key for node3 has changed and you have requested strict "
             "checking.\r\nHost key verification failed.\r\n"));
  ASSERT_FALSE(changed.ok());
  EXPECT_NE(changed.status().message().find(
                "cannot reach host node3 over ssh: its host key is not the "
                "one your known_hosts holds for it (ssh: Host key "
                "verification failed): it was reinstalled, or something else "
                "answers at its address; no launch message was sent to it."),
            std::string::npos)
      << changed.status().message();
  EXPECT_FALSE(
      HostKeyDistrust("ssh: connect to host node3 port 22: "
                      "Connection refused\r\n"));
}

TEST(JudgeHostCheckTest, NoHvdrunThereSaysWhereToInstallIt) {
  auto verdict = JudgeHostCheck(
      "node3", "/opt/hvd/bin/hvdrun", 30,
      Exited(127, "", "bash: line 1: /opt/hvd/bin/hvdrun: No such file"));
  ASSERT_FALSE(verdict.ok());
  EXPECT_EQ(verdict.status().message(),
            "hvdrun is not at /opt/hvd/bin/hvdrun on host node3: install hvd "
            "at the same path on every host (a shared home does that)");
}

TEST(JudgeHostCheckTest, ATimeoutNamesTheStartTimeout) {
  SshOutcome hung{0, true, "", ""};
  auto verdict = JudgeHostCheck("node3", "/usr/bin/hvdrun", 3, hung);
  ASSERT_FALSE(verdict.ok());
  EXPECT_EQ(verdict.status().message(),
            "cannot reach host node3 over ssh: no answer within 3 s "
            "(--start-timeout); ssh was killed");
}

TEST(JudgeHostCheckTest, OtherFailuresNameTheCommandAndItsLastLine) {
  auto verdict = JudgeHostCheck(
      "node3", "/usr/bin/hvdrun", 30,
      Exited(2, "", "hvdrun: --hvd-internal-host-check: unknown option\n"));
  ASSERT_FALSE(verdict.ok());
  EXPECT_EQ(verdict.status().message(),
            "the host check on host node3 failed: /usr/bin/hvdrun "
            "--hvd-internal-host-check exited with code 2: hvdrun: "
            "--hvd-internal-host-check: unknown option");
  verdict = JudgeHostCheck("node3", "/usr/bin/hvdrun", 30,
                           SshOutcome{SIGKILL, false, "", ""});
  EXPECT_EQ(verdict.status().message(),
            "cannot reach host node3 over ssh: ssh was killed by signal 9");
  verdict = JudgeHostCheck("node3", "/usr/bin/hvdrun", 30, Exited(0, "hi\n"));
  EXPECT_EQ(verdict.status().message(),
            "the host check on host node3 failed: it did not answer as "
            "hvdrun's host check does: 'hi'");
}

TEST(MissingInterfacesTest, NamesTheHostTheListAndWhatItHas) {
  EXPECT_FALSE(MissingInterfaces("node3", {}, kInterfaces, false));
  EXPECT_FALSE(
      MissingInterfaces("node3", {"nosuch0", "eth0"}, kInterfaces, false));
  auto problem =
      MissingInterfaces("node3", {"nosuch0", "ib0"}, kInterfaces, false);
  ASSERT_TRUE(problem);
  EXPECT_EQ(*problem,
            "host node3 has none of the network interfaces nosuch0,ib0 "
            "(--network-interfaces) with an IPv4 address; it has: lo, eth0");
}

TEST(MissingInterfacesTest, LoopbackCountsOnlyOnOneMachine) {
  EXPECT_FALSE(MissingInterfaces("node3", {"lo"}, kInterfaces, true));
  EXPECT_FALSE(MissingInterfaces("node3", {"lo", "eth0"}, kInterfaces, false));
  auto problem = MissingInterfaces("node3", {"lo"}, kInterfaces, false);
  ASSERT_TRUE(problem);
  EXPECT_EQ(*problem,
            "host node3 has none of the network interfaces lo "
            "(--network-interfaces) with an IPv4 address but loopback, which "
            "does not count when the job spans machines; it has: lo, eth0");
}

TEST(LastLineTest, TrimsAndKeepsTheEndOfALongLine) {
  EXPECT_EQ(LastLine("a\n  b  \n\n \n"), "b");
  EXPECT_EQ(LastLine(""), "");
  EXPECT_EQ(LastLine(std::string(500, 'x') + "end", 10), "...xxxxxxxend");
}

}  // namespace
}  // namespace hvd::launcher
