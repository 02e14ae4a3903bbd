// OutputRelay: the timestamp horovodrun writes, the --output-filename
// layout, and what lands in the files (through real pipes).
#include "process/output_relay.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "hvd/common/logging.h"

namespace hvd::launcher {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "hvd-relay-XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Relays `out` and `err` (written to pipes, then closed) for rank `rank`
// with `options`, to its end.
void Relay(const std::string& out, const std::string& err, int rank,
           const RelayOptions& options,
           std::shared_ptr<OutputTail> tail = nullptr) {
  int out_pipe[2], err_pipe[2];
  ASSERT_EQ(pipe(out_pipe), 0);
  ASSERT_EQ(pipe(err_pipe), 0);
  ASSERT_EQ(write(out_pipe[1], out.data(), out.size()),
            static_cast<ssize_t>(out.size()));
  ASSERT_EQ(write(err_pipe[1], err.data(), err.size()),
            static_cast<ssize_t>(err.size()));
  close(out_pipe[1]);
  close(err_pipe[1]);
  auto relay = OutputRelay::Start(
      {{out_pipe[0], rank, false, tail}, {err_pipe[0], rank, true, tail}},
      options);
  ASSERT_TRUE(relay.ok()) << relay.status().ToString();
  (*relay)->Join();
}

SlotAssignment Slot(const std::string& host, int rank, int size,
                    int local_rank) {
  SlotAssignment slot;
  slot.host = host;
  slot.layout.rank = rank;
  slot.layout.size = size;
  slot.layout.local_rank = local_rank;
  return slot;
}

// The status page's output tail: the last lines of both streams, each
// without its newline, a long one cut.
TEST(OutputRelayTest, KeepsTheLastLinesInTheTail) {
  auto tail = std::make_shared<OutputTail>();
  std::string out;
  for (size_t i = 0; i < OutputTail::kMaxLines + 5; ++i) {
    out += "line " + std::to_string(i) + "\n";
  }
  Relay(out, std::string(OutputTail::kMaxLineBytes + 10, 'x') + "\n", 0,
        RelayOptions{}, tail);
  std::vector<OutputTail::Line> lines = tail->Lines();
  ASSERT_EQ(lines.size(), OutputTail::kMaxLines);
  size_t errors = 0;
  for (const auto& line : lines) {
    if (line.is_stderr) {
      ++errors;
      EXPECT_EQ(line.text, std::string(OutputTail::kMaxLineBytes, 'x') + "...");
    }
  }
  EXPECT_EQ(errors, 1u);
  EXPECT_EQ(
      lines.back().is_stderr ? lines[lines.size() - 2].text : lines.back().text,
      "line " + std::to_string(OutputTail::kMaxLines + 4));
}

// Python's time.asctime(): what horovodrun puts before "[rank]<stdout>:".
TEST(OutputRelayTest, TimestampIsPythonsAsctime) {
  std::tm march{};
  march.tm_year = 2024 - 1900;
  march.tm_mon = 2;
  march.tm_mday = 5;
  march.tm_wday = 2;
  march.tm_hour = 14;
  march.tm_min = 3;
  march.tm_sec = 9;
  EXPECT_EQ(AsctimeOf(march), "Tue Mar  5 14:03:09 2024");
  std::tm december = march;
  december.tm_mon = 11;
  december.tm_mday = 31;
  december.tm_wday = 0;
  december.tm_hour = 23;
  december.tm_min = 59;
  december.tm_sec = 59;
  EXPECT_EQ(AsctimeOf(december), "Sun Dec 31 23:59:59 2024");
  // The local time of a given instant: 0 s after the epoch in UTC.
  const char* tz = getenv("TZ");
  const std::string saved = tz ? tz : "";
  setenv("TZ", "UTC", 1);
  tzset();
  EXPECT_EQ(OutputTimestamp(0), "Thu Jan  1 00:00:00 1970");
  if (tz) {
    setenv("TZ", saved.c_str(), 1);
  } else {
    unsetenv("TZ");
  }
  tzset();
}

TEST(OutputRelayTest, StaticJobsUseHorovodsRankDirectories) {
  OutputFiles files = OutputFilesOf("/out", false, Slot("h", 3, 4, 1), 0);
  EXPECT_EQ(files.dir(), "/out/rank.3");
  EXPECT_EQ(files.stdout_path(), "/out/rank.3/stdout");
  EXPECT_EQ(files.stderr_path(), "/out/rank.3/stderr");
  // Padded to the largest rank's width, as horovodrun's _pad_rank.
  EXPECT_EQ(OutputFilesOf("/out", false, Slot("h", 7, 12, 0), 0).dir(),
            "/out/rank.07");
  EXPECT_EQ(OutputFilesOf("/out", false, Slot("h", 11, 12, 0), 0).dir(),
            "/out/rank.11");
  EXPECT_EQ(OutputFilesOf("/out", false, Slot("h", 5, 101, 0), 0).dir(),
            "/out/rank.005");
  EXPECT_EQ(OutputFilesOf("/out", false, Slot("h", 0, 1, 0), 0).dir(),
            "/out/rank.0");
}

TEST(OutputRelayTest, ElasticJobsUseSlotDirectoriesAndGenerationFiles) {
  OutputFiles files = OutputFilesOf("/out", true, Slot("node1", 5, 8, 1), 3);
  EXPECT_EQ(files.dir(), "/out/node1.1");
  EXPECT_EQ(files.stdout_path(), "/out/node1.1/gen.3.stdout");
  EXPECT_EQ(files.stderr_path(), "/out/node1.1/gen.3.stderr");
  // The rank plays no part; a '/' cannot make another directory.
  EXPECT_EQ(
      OutputFilesOf("/out", true, Slot("node1", 0, 2, 1), 3).stdout_path(),
      files.stdout_path());
  EXPECT_EQ(OutputFilesOf("/out", true, Slot("a/../b", 0, 1, 0), 1).dir(),
            "/out/a_.._b.0");
}

TEST(OutputRelayTest, OptionsFollowTheLaunchConfig) {
  LaunchConfig config;
  RelayOptions none = RelayOptionsFor(config, Slot("h", 0, 1, 0), 0);
  EXPECT_FALSE(none.timestamp);
  EXPECT_FALSE(none.files.has_value());
  config.output_dir = "/out";
  config.elastic = true;
  config.prefix_output_with_timestamp = true;
  RelayOptions both = RelayOptionsFor(config, Slot("h", 2, 4, 1), 7);
  EXPECT_TRUE(both.timestamp);
  ASSERT_TRUE(both.files.has_value());
  EXPECT_EQ(both.files->stdout_path(), "/out/h.1/gen.7.stdout");
}

TEST(OutputRelayTest, FilesHoldTheLinesWithoutThePrefix) {
  TempDir dir;
  RelayOptions options;
  options.files =
      OutputFilesOf(dir.path() + "/logs", false, Slot("h", 1, 2, 1), 0);
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  Relay("hello\nlast without newline", "bad\n", 1, options);
  const std::string out = testing::internal::GetCapturedStdout();
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(out, "[1]<stdout>:hello\n[1]<stdout>:last without newline\n");
  EXPECT_EQ(err, "[1]<stderr>:bad\n");
  EXPECT_EQ(Read(dir.path() + "/logs/rank.1/stdout"),
            "hello\nlast without newline\n");
  EXPECT_EQ(Read(dir.path() + "/logs/rank.1/stderr"), "bad\n");
}

TEST(OutputRelayTest, TimestampsPrefixTerminalAndFileLines) {
  TempDir dir;
  RelayOptions options;
  options.timestamp = true;
  options.files =
      OutputFilesOf(dir.path(), true, Slot("h", 0, 2, 0), /*generation=*/4);
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  const std::time_t before = std::time(nullptr);
  Relay("one\ntwo\n", "err\n", 0, options);
  const std::time_t after = std::time(nullptr);
  const std::string out = testing::internal::GetCapturedStdout();
  const std::string err = testing::internal::GetCapturedStderr();
  const std::string stamp =
      R"(([A-Z][a-z]{2} [A-Z][a-z]{2} [ 1-3]\d \d\d:\d\d:\d\d \d{4}))";
  std::smatch match;
  ASSERT_TRUE(std::regex_match(out, match,
                               std::regex(stamp + R"(\[0\]<stdout>:one\n)" +
                                          stamp + R"(\[0\]<stdout>:two\n)")))
      << out;
  // The time it was read, to the second.
  EXPECT_TRUE(match[1] == OutputTimestamp(before) ||
              match[1] == OutputTimestamp(after))
      << match[1];
  EXPECT_TRUE(
      std::regex_match(err, std::regex(stamp + R"(\[0\]<stderr>:err\n)")))
      << err;
  const std::string file = Read(dir.path() + "/h.0/gen.4.stdout");
  EXPECT_TRUE(
      std::regex_match(file, std::regex(stamp + " one\n" + stamp + " two\n")))
      << file;
  EXPECT_TRUE(std::regex_match(Read(dir.path() + "/h.0/gen.4.stderr"),
                               std::regex(stamp + " err\n")));
}

// A slot's later process writes files of its own: the earlier process's
// output stays.
TEST(OutputRelayTest, ALaterGenerationLeavesTheEarlierFilesAlone) {
  TempDir dir;
  RelayOptions first, second;
  first.files = OutputFilesOf(dir.path(), true, Slot("h", 1, 2, 1), 1);
  second.files = OutputFilesOf(dir.path(), true, Slot("h", 0, 1, 1), 3);
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  Relay("first process\n", "", 1, first);
  Relay("second process\n", "", 0, second);
  testing::internal::GetCapturedStdout();
  testing::internal::GetCapturedStderr();
  EXPECT_EQ(Read(dir.path() + "/h.1/gen.1.stdout"), "first process\n");
  EXPECT_EQ(Read(dir.path() + "/h.1/gen.3.stdout"), "second process\n");
  EXPECT_EQ(Read(dir.path() + "/h.1/gen.3.stderr"), "");
}

// A directory that cannot be made costs the files, not the relay: the
// worker's output still reaches hvdrun's own (its pipe never fills up).
TEST(OutputRelayTest, AnUnwritableDirectoryStillRelays) {
  ASSERT_TRUE(common::InitLogging("driver", -1).ok());  // to stderr
  TempDir dir;
  const std::string blocker = dir.path() + "/file";
  std::ofstream(blocker) << "not a directory";
  RelayOptions options;
  options.files = OutputFilesOf(blocker, false, Slot("h", 0, 1, 0), 0);
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  Relay("still here\n", "", 0, options);
  const std::string out = testing::internal::GetCapturedStdout();
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(out, "[0]<stdout>:still here\n");
  EXPECT_NE(err.find("--output-filename: " + blocker + ": cannot create it"),
            std::string::npos)
      << err;
}

// Another user who can write where the files go could put a link to a
// file of this user's in their place; hvdrun truncated and wrote through
// it. Now the link is refused, said, and left alone with what it points to.
TEST(OutputRelayTest, ALinkWhereAFileGoesIsNotFollowed) {
  ASSERT_TRUE(common::InitLogging("driver", -1).ok());  // to stderr
  TempDir dir;
  const std::string victim = dir.path() + "/victim";
  std::ofstream(victim) << "precious\n";
  ASSERT_EQ(mkdir((dir.path() + "/out").c_str(), 0700), 0);
  ASSERT_EQ(mkdir((dir.path() + "/out/rank.0").c_str(), 0700), 0);
  ASSERT_EQ(
      symlink(victim.c_str(), (dir.path() + "/out/rank.0/stdout").c_str()), 0);
  RelayOptions options;
  options.files =
      OutputFilesOf(dir.path() + "/out", false, Slot("h", 0, 1, 0), 0);
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  Relay("overwritten?\n", "err\n", 0, options);
  const std::string out = testing::internal::GetCapturedStdout();
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(out, "[0]<stdout>:overwritten?\n");  // still relayed
  EXPECT_EQ(Read(victim), "precious\n");
  EXPECT_NE(err.find("--output-filename: " + dir.path() +
                     "/out/rank.0/stdout: a symbolic link (not followed)"),
            std::string::npos)
      << err;
  // The other stream's file is written as before.
  EXPECT_EQ(Read(dir.path() + "/out/rank.0/stderr"), "err\n");
}

}  // namespace
}  // namespace hvd::launcher
