// `hvdrun status`'s choice of the read token: a file, the environment or
// the URL, and the warning for a token on the command line.
#include "status/status_command.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>

namespace hvd::launcher {
namespace {

constexpr char kToken[] = "0123456789abcdef0123";

TEST(ChooseReadTokenTest, AUrlWithItsTokenIsWarnedAboutAndStillWorks) {
  for (const char* url : {"http://h:1/?token=abc", "http://h:1/?a=1&token=abc",
                          "http://h:1/status.json?token=abc#x"}) {
    auto chosen = ChooseReadToken(url, "", nullptr);
    ASSERT_TRUE(chosen.ok()) << chosen.status().ToString();
    EXPECT_EQ(chosen->token, "") << url;  // the URL's goes as it is
    EXPECT_NE(chosen->warning.find("every user of this machine can read it"),
              std::string::npos)
        << url << ": " << chosen->warning;
    EXPECT_NE(chosen->warning.find("--token-file"), std::string::npos);
    EXPECT_NE(chosen->warning.find("HVD_STATUS_TOKEN"), std::string::npos);
  }
  for (const char* url : {"http://h:1/", "http://h:1/?tokens=abc",
                          "http://h:1/#token=abc", "http://h:1"}) {
    auto chosen = ChooseReadToken(url, "", nullptr);
    ASSERT_TRUE(chosen.ok());
    EXPECT_EQ(chosen->warning, "") << url;
  }
}

TEST(ChooseReadTokenTest, TheFileWinsOverTheEnvironment) {
  const std::string path = ::testing::TempDir() + "/status_command_token";
  std::ofstream(path) << kToken << "\n";
  auto chosen = ChooseReadToken("http://h:1/", path, "from-environment");
  ASSERT_TRUE(chosen.ok()) << chosen.status().ToString();
  EXPECT_EQ(chosen->token, kToken);
  EXPECT_EQ(chosen->warning, "");
  std::remove(path.c_str());
  auto from_env = ChooseReadToken("http://h:1/", "", "from-environment");
  ASSERT_TRUE(from_env.ok());
  EXPECT_EQ(from_env->token, "from-environment");
  auto empty_env = ChooseReadToken("http://h:1/?token=t", "", "");
  ASSERT_TRUE(empty_env.ok());
  EXPECT_EQ(empty_env->token, "");
}

// A reader's file is the job's hvdrun's to make: a missing one is an error
// naming the flag and the file, and nothing is created in its place.
TEST(ChooseReadTokenTest, AMissingOrBadTokenFileIsAnErrorNamingIt) {
  const std::string path = ::testing::TempDir() + "/status_command_missing";
  std::remove(path.c_str());
  auto missing = ChooseReadToken("http://h:1/", path, nullptr);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("--token-file " + path),
            std::string::npos)
      << missing.status().message();
  struct stat info {};
  EXPECT_NE(stat(path.c_str(), &info), 0) << "a token file was made";
  std::ofstream(path) << "short\n";
  auto bad = ChooseReadToken("http://h:1/", path, nullptr);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("the token must be"), std::string::npos)
      << bad.status().message();
  std::remove(path.c_str());
}

}  // namespace
}  // namespace hvd::launcher
