// SecretFromFile on real files in a fresh folder: a missing file is made
// private with a new secret, an existing one is read back, and a file that
// is open to others, not regular, or holds no valid secret is refused
// naming the flag and the file.
#include "hvd/common/secret_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

namespace hvd::common {
namespace {

class SecretFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char folder[] = "/tmp/hvd-secret-file-XXXXXX";
    ASSERT_NE(mkdtemp(folder), nullptr);
    folder_ = folder;
    rules_.flag = "--job-secret-file";
    rules_.min_chars = 32;
    rules_.private_to_user = true;
  }
  void TearDown() override {
    std::string command = "rm -rf '" + folder_ + "'";
    ASSERT_EQ(std::system(command.c_str()), 0);
  }
  std::string Write(const std::string& name, const std::string& text,
                    mode_t mode) {
    const std::string path = folder_ + "/" + name;
    std::ofstream(path) << text;
    chmod(path.c_str(), mode);
    return path;
  }

  std::string folder_;
  SecretFileRules rules_;
};

TEST_F(SecretFileTest, AMissingFileIsMadePrivateAndReadBackTheSame) {
  const std::string path = folder_ + "/job.secret";
  auto made = SecretFromFile(path, rules_);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  EXPECT_EQ(made->size(), 64u);
  struct stat info {};
  ASSERT_EQ(stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  auto again = SecretFromFile(path, rules_);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, *made);
  // It was linked into place whole: no draft is left beside it.
  std::string listing = "ls -A '" + folder_ + "' > '" + folder_ + ".ls'";
  ASSERT_EQ(std::system(listing.c_str()), 0);
  std::ifstream names(folder_ + ".ls");
  std::string all((std::istreambuf_iterator<char>(names)),
                  std::istreambuf_iterator<char>());
  std::remove((folder_ + ".ls").c_str());
  EXPECT_EQ(all, "job.secret\n");
}

TEST_F(SecretFileTest, SurroundingWhiteSpaceIsNotPartOfIt) {
  const std::string secret(40, 'k');
  auto read = SecretFromFile(Write("s", "  " + secret + "\n\n", 0400), rules_);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(*read, secret);
}

TEST_F(SecretFileTest, AFileOpenToOthersIsRefusedOnlyWhenItMustBePrivate) {
  const std::string path = Write("s", std::string(40, 'k'), 0640);
  auto refused = SecretFromFile(path, rules_);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(),
            "--job-secret-file " + path +
                ": the file is open to others (owner uid " +
                std::to_string(geteuid()) + ", mode 0640): it must belong " +
                "to uid " + std::to_string(geteuid()) +
                " with mode 0600 or 0400 (chmod 600 " + path + ")");
  SecretFileRules shared = rules_;
  shared.private_to_user = false;
  EXPECT_TRUE(SecretFromFile(path, shared).ok());
}

TEST_F(SecretFileTest, WhatIsNoSecretIsRefusedSayingWhatOneIs) {
  rules_.noun = "token";
  for (const std::string& text :
       {std::string(31, 'k'), std::string(257, 'k'),
        std::string(40, 'k') + " " + std::string(40, 'k'),
        std::string(39, 'k') + "/", std::string()}) {
    const std::string path = Write("s", text, 0600);
    auto refused = SecretFromFile(path, rules_);
    ASSERT_FALSE(refused.ok()) << text;
    EXPECT_EQ(refused.status().message(),
              "--job-secret-file " + path +
                  ": the token must be 32 to 256 letters, digits, '-', '.', "
                  "'_' or '~' (remove the file to have hvdrun make one)")
        << text;
  }
}

TEST_F(SecretFileTest, AFolderOrAnUnwritablePlaceIsRefused) {
  auto folder = SecretFromFile(folder_, rules_);
  ASSERT_FALSE(folder.ok());
  EXPECT_EQ(folder.status().message(),
            "--job-secret-file " + folder_ + ": not a regular file");
  const std::string nowhere = folder_ + "/no/such/folder/s";
  auto missing = SecretFromFile(nowhere, rules_);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(),
            "--job-secret-file " + nowhere +
                ": cannot create it: No such file or directory");
}

}  // namespace
}  // namespace hvd::common
