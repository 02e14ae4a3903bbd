// --output-filename's files: which directories may hold them (a pure
// rule), and opening them without following a link another user put in
// their way.
#include "process/output_files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace hvd::launcher {
namespace {

constexpr uid_t kMe = 1000;

TEST(UnsafeDirectoryTest, OnlyTheUsersOwnAndClosedToOthersOrSticky) {
  EXPECT_FALSE(UnsafeDirectory(kMe, S_IFDIR | 0700, kMe, false));
  EXPECT_FALSE(UnsafeDirectory(kMe, S_IFDIR | 0755, kMe, false));
  // Others may write: they could swap the files for links.
  auto open = UnsafeDirectory(kMe, S_IFDIR | 0777, kMe, false);
  ASSERT_TRUE(open);
  EXPECT_NE(open->find("mode 0777, no sticky bit"), std::string::npos) << *open;
  EXPECT_TRUE(UnsafeDirectory(kMe, S_IFDIR | 0770, kMe, false));
  // The sticky bit keeps them from renaming what is not theirs.
  EXPECT_FALSE(UnsafeDirectory(kMe, S_IFDIR | 01777, kMe, false));
  // Another user's directory: never a worker's; root's only as DIR (/tmp).
  auto theirs = UnsafeDirectory(1001, S_IFDIR | 0755, kMe, true);
  ASSERT_TRUE(theirs);
  EXPECT_NE(theirs->find("belongs to uid 1001, not to this user (uid 1000)"),
            std::string::npos)
      << *theirs;
  EXPECT_FALSE(UnsafeDirectory(0, S_IFDIR | 01777, kMe, true));
  EXPECT_TRUE(UnsafeDirectory(0, S_IFDIR | 01777, kMe, false));
  EXPECT_TRUE(UnsafeDirectory(0, S_IFDIR | 0777, kMe, true));
}

class OutputFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "hvd-files-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static std::string Read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  static mode_t Mode(const std::string& path) {
    struct stat info {};
    EXPECT_EQ(lstat(path.c_str(), &info), 0) << path;
    return info.st_mode & 07777;
  }

  std::string dir_;
};

TEST_F(OutputFilesTest, DirectoriesItMakesAreTheUsersAlone) {
  const std::string root = dir_ + "/a/b/out";
  auto file = OpenOutputFile(root, "rank.0", "stdout");
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  file->Write("text\n", 5);
  EXPECT_EQ(Read(root + "/rank.0/stdout"), "text\n");
  for (const std::string& made :
       {dir_ + "/a", dir_ + "/a/b", root, root + "/rank.0"}) {
    EXPECT_EQ(Mode(made) & 077, 0u) << made;
  }
  // Again: truncated, as horovodrun's 'w'.
  auto again = OpenOutputFile(root, "rank.0", "stdout");
  ASSERT_TRUE(again.ok());
  again->Write("new\n", 4);
  EXPECT_EQ(Read(root + "/rank.0/stdout"), "new\n");
}

TEST_F(OutputFilesTest, ALinkedWorkerDirectoryIsNotFollowed) {
  const std::string elsewhere = dir_ + "/elsewhere";
  ASSERT_EQ(mkdir(elsewhere.c_str(), 0700), 0);
  ASSERT_EQ(mkdir((dir_ + "/out").c_str(), 0700), 0);
  ASSERT_EQ(symlink(elsewhere.c_str(), (dir_ + "/out/rank.0").c_str()), 0);
  auto file = OpenOutputFile(dir_ + "/out", "rank.0", "stdout");
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().message(),
            dir_ +
                "/out/rank.0: a symbolic link, not a directory (someone "
                "else may have put it there): not followed");
  EXPECT_FALSE(std::filesystem::exists(elsewhere + "/stdout"));
}

TEST_F(OutputFilesTest, ALinkedFileIsNotFollowed) {
  const std::string victim = dir_ + "/victim";
  std::ofstream(victim) << "precious\n";
  ASSERT_EQ(mkdir((dir_ + "/out").c_str(), 0700), 0);
  ASSERT_EQ(mkdir((dir_ + "/out/h.0").c_str(), 0700), 0);
  ASSERT_EQ(symlink(victim.c_str(), (dir_ + "/out/h.0/gen.1.stdout").c_str()),
            0);
  auto file = OpenOutputFile(dir_ + "/out", "h.0", "gen.1.stdout");
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.status().message().find("a symbolic link (not followed)"),
            std::string::npos);
  EXPECT_EQ(Read(victim), "precious\n");
}

TEST_F(OutputFilesTest, ADirectoryOthersMayWriteInIsRefused) {
  const std::string root = dir_ + "/shared";
  ASSERT_EQ(mkdir(root.c_str(), 0700), 0);
  ASSERT_EQ(chmod(root.c_str(), 0777), 0);
  auto file = OpenOutputFile(root, "rank.0", "stdout");
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.status().message().find(
                root + ": others may write in it (mode 0777, no sticky bit)"),
            std::string::npos)
      << file.status().message();
  // With the sticky bit (as /tmp): others cannot swap what is not theirs.
  ASSERT_EQ(chmod(root.c_str(), 01777), 0);
  EXPECT_TRUE(OpenOutputFile(root, "rank.0", "stdout").ok());
  // A worker's directory that others may write in is refused too.
  ASSERT_EQ(chmod((root + "/rank.0").c_str(), 0777), 0);
  auto open = OpenOutputFile(root, "rank.0", "stdout");
  ASSERT_FALSE(open.ok());
  EXPECT_NE(open.status().message().find(root + "/rank.0: others may write"),
            std::string::npos)
      << open.status().message();
}

}  // namespace
}  // namespace hvd::launcher
