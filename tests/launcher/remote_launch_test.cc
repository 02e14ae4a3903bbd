#include "process/remote_launch.h"

#include <gtest/gtest.h>

#include <map>

namespace hvd::launcher {
namespace {

// A string literal's bytes, its NULs included.
template <size_t N>
std::string Bytes(const char (&text)[N]) {
  return std::string(text, N - 1);
}

// The payload of an encoded message (after its length line), checking
// that the length line is right.
std::string Payload(const std::string& message) {
  size_t newline = message.find('\n');
  EXPECT_NE(newline, std::string::npos);
  std::string payload = message.substr(newline + 1);
  EXPECT_EQ(message.substr(0, newline), std::to_string(payload.size()));
  return payload;
}

TEST(RemoteLaunchTest, RoundTripKeepsEveryByteButNul) {
  RemoteLaunch launch;
  launch.working_dir = "/work dir/it's";
  launch.env = {{"HVD_SECRET_KEY", "abc"},
                {"MULTI", "line one\nline two"},
                {"EMPTY", ""},
                {"EQUALS", "a=b=c"},
                {"QUOTES", "'\"$(rm -rf /)`"}};
  launch.argv = {"python3", "train.py", "--flag=it's", ""};
  launch.adopt_name = "0123456789abcdef-w7.sock";
  launch.adopt_grace_ms = 30000;
  auto decoded = DecodeRemoteLaunch(Payload(EncodeRemoteLaunch(launch)));
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  EXPECT_EQ(decoded->working_dir, launch.working_dir);
  EXPECT_EQ(decoded->env, launch.env);
  EXPECT_EQ(decoded->argv, launch.argv);
  EXPECT_EQ(decoded->adopt_name, launch.adopt_name);
  EXPECT_EQ(decoded->adopt_grace_ms, 30000);
}

TEST(RemoteLaunchTest, RefusesWhatIsNotAWholeMessage) {
  RemoteLaunch launch{"/w", {{"A", "1"}}, {"true"}, "", 0};
  std::string payload = Payload(EncodeRemoteLaunch(launch));
  EXPECT_TRUE(DecodeRemoteLaunch(payload).ok());
  // Cut short, another format, a count beyond the fields, no command.
  EXPECT_FALSE(DecodeRemoteLaunch(payload.substr(0, payload.size() - 1)).ok());
  EXPECT_FALSE(DecodeRemoteLaunch("").ok());
  EXPECT_FALSE(DecodeRemoteLaunch(Bytes("other 1\0/w\0\0"
                                        "0\0"
                                        "0\0true\0"))
                   .ok());
  // The first format, without the adoption's fields.
  EXPECT_FALSE(DecodeRemoteLaunch(Bytes("hvd-remote-launch 1\0/w\0"
                                        "1\0A=1\0true\0"))
                   .ok());
  launch.argv.clear();
  EXPECT_FALSE(DecodeRemoteLaunch(Payload(EncodeRemoteLaunch(launch))).ok());
  EXPECT_TRUE(DecodeRemoteLaunch(Bytes("hvd-remote-launch 2\0/w\0\0"
                                       "0\0"
                                       "1\0A=1\0true\0"))
                  .ok());
  EXPECT_FALSE(DecodeRemoteLaunch(Bytes("hvd-remote-launch 2\0/w\0\0"
                                        "0\0"
                                        "9\0A=1\0true\0"))
                   .ok());
  EXPECT_FALSE(DecodeRemoteLaunch(Bytes("hvd-remote-launch 2\0/w\0\0"
                                        "0\0"
                                        "1\0=1\0true\0"))
                   .ok());
  EXPECT_FALSE(DecodeRemoteLaunch(Bytes("hvd-remote-launch 2\0/w\0n\0"
                                        "x\0"
                                        "1\0A=1\0true\0"))
                   .ok());
}

TEST(RemoteLaunchTest, FramesSayWhetherTheBodyIsSealed) {
  const std::string plain = FrameLaunch(LaunchSeal::kPlain, "abc");
  EXPECT_EQ(plain, "3\nabc");
  const std::string sealed = FrameLaunch(LaunchSeal::kMunge, "MUNGE:xyz:");
  EXPECT_EQ(sealed, "munge 10\nMUNGE:xyz:");
  // Control bytes after the frame are left alone.
  for (const auto& [frame, seal] : {std::pair{plain, LaunchSeal::kPlain},
                                    std::pair{sealed, LaunchSeal::kMunge}}) {
    auto parsed = ParseLaunchFrame(frame + std::string("\0\0", 2));
    ASSERT_TRUE(parsed.ok()) << parsed.status().message();
    ASSERT_TRUE(parsed->has_value());
    EXPECT_EQ((*parsed)->seal, seal);
    EXPECT_EQ(frame.substr((*parsed)->body_at, (*parsed)->body_size),
              seal == LaunchSeal::kPlain ? "abc" : "MUNGE:xyz:");
  }
  // The plain encoding is the plain frame of the payload.
  RemoteLaunch launch{"/w", {{"A", "1"}}, {"true"}, "", 0};
  EXPECT_EQ(EncodeRemoteLaunch(launch),
            FrameLaunch(LaunchSeal::kPlain, EncodeRemoteLaunchPayload(launch)));
}

TEST(RemoteLaunchTest, AFrameNotWholeYetAsksForMore) {
  const std::string sealed = FrameLaunch(LaunchSeal::kMunge, "MUNGE:xyz:");
  for (size_t cut = 0; cut < sealed.size(); ++cut) {
    auto parsed = ParseLaunchFrame(sealed.substr(0, cut));
    ASSERT_TRUE(parsed.ok()) << cut << ": " << parsed.status().message();
    EXPECT_FALSE(parsed->has_value()) << cut;
  }
}

TEST(RemoteLaunchTest, RefusesMalformedLengthLines) {
  for (const char* bad :
       {"\nabc", "munge \nabc", "-3\nabc", "+3\nabc", " 3\nabc", "3 \nabc",
        "munge  3\nabc", "MUNGE 3\nabc", "sealed 3\nabc", "0x3\nabc",
        "99999999999999999999999\n", "67108865\n", "munge 67108865\n"}) {
    EXPECT_FALSE(ParseLaunchFrame(bad).ok()) << bad;
  }
  // The bound itself is a length (the body is not whole yet).
  auto at_bound = ParseLaunchFrame("67108864\n");
  ASSERT_TRUE(at_bound.ok());
  EXPECT_FALSE(at_bound->has_value());
  // No newline: more bytes are awaited only while a length line could
  // still be valid.
  EXPECT_TRUE(ParseLaunchFrame("munge 1234").ok());
  EXPECT_FALSE(ParseLaunchFrame(std::string(64, '1')).ok());
  EXPECT_FALSE(ParseLaunchFrame("hvd-remote-launch 2 and more text").ok());
}

TEST(RemoteLaunchTest, ForwardsTheJobsVariablesNotTheLaunchingSessions) {
  for (const char* kept :
       {"PATH", "PYTHONPATH", "LD_LIBRARY_PATH", "HOME", "MY_SETTING",
        "HOROVOD_FUSION_THRESHOLD", "CUDA_HOME", "SSHFS_OPTS"}) {
    EXPECT_TRUE(IsForwardedVariable(kept)) << kept;
  }
  for (const char* dropped :
       {"HOSTNAME", "PWD", "OLDPWD", "SHLVL", "_", "SSH_CONNECTION",
        "SSH_AUTH_SOCK", "XDG_RUNTIME_DIR", "XDG_SESSION_ID",
        "CUDA_VISIBLE_DEVICES", "NVIDIA_CUDA_VISIBLE_DEVICES",
        "BASH_FUNC_module%%", "HVD_SECRET_KEY"}) {
    EXPECT_FALSE(IsForwardedVariable(dropped)) << dropped;
  }
}

TEST(RemoteLaunchTest, WorkerVariablesWinAndTheSecretTravelsOnlyAsOne) {
  EnvList env = ForwardedEnvironment(
      {"PATH=/usr/bin", "HOSTNAME=laptop", "HVD_SECRET_KEY=stale",
       "HOROVOD_RANK=7", "NOEQUALS", "=nameless", "A=x=y"},
      {{"HOROVOD_RANK", "0"}, {"HVD_SECRET_KEY", "fresh"}});
  std::map<std::string, std::string> map(env.begin(), env.end());
  EXPECT_EQ(map.size(), env.size()) << "a variable is listed twice";
  EXPECT_EQ(map["PATH"], "/usr/bin");
  EXPECT_EQ(map.count("HOSTNAME"), 0u);
  EXPECT_EQ(map["HOROVOD_RANK"], "0");
  EXPECT_EQ(map["HVD_SECRET_KEY"], "fresh");
  EXPECT_EQ(map["A"], "x=y");
  EXPECT_EQ(map.count("NOEQUALS"), 0u);
}

}  // namespace
}  // namespace hvd::launcher
