#include "tuning/timeline.h"

#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace hvd::runtime {
namespace {

using nlohmann::json;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

// The trace as JSON; a parse error fails the test that calls it.
json ParseTrace(const std::string& path) {
  json trace = json::parse(ReadFile(path), nullptr, /*allow_exceptions=*/false);
  EXPECT_TRUE(trace.is_array()) << "not a JSON array: " << ReadFile(path);
  return trace;
}

// The row id the trace's process_name events give `tensor`; -1 if none.
int64_t RowOf(const json& trace, const std::string& tensor) {
  for (const json& e : trace) {
    if (e.value("ph", "") == "M" && e.value("name", "") == "process_name" &&
        e["args"].value("name", "") == tensor) {
      return e["pid"].get<int64_t>();
    }
  }
  return -1;
}

// Waits up to `limit` for `child` to exit, then reaps it; a child still
// running then is killed first. Returns its wait status, or nullopt when it
// had to be killed, so that a hung child fails the test instead of hanging
// it.
std::optional<int> ReapWithin(pid_t child, std::chrono::milliseconds limit) {
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, child, 0));
  pollfd exited = {pidfd, POLLIN, 0};
  const bool ended =
      pidfd >= 0 && poll(&exited, 1, static_cast<int>(limit.count())) == 1;
  if (pidfd >= 0) close(pidfd);
  if (!ended) kill(child, SIGKILL);
  int status = 0;
  if (waitpid(child, &status, 0) != child) return std::nullopt;
  return ended ? std::optional<int>(status) : std::nullopt;
}

int CountNamed(const json& trace, const std::string& name) {
  int n = 0;
  for (const json& e : trace) n += e.value("name", "") == name ? 1 : 0;
  return n;
}

std::vector<json> OnRow(const json& trace, int64_t row) {
  std::vector<json> events;
  for (const json& e : trace) {
    if (e["pid"] == row && e["ph"] != "M") events.push_back(e);
  }
  return events;
}

class TimelineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "hvd_timeline_XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    path_ = dir_ + "/trace.json";
  }
  void TearDown() override {
    std::string command = "rm -rf '" + dir_ + "'";
    EXPECT_EQ(std::system(command.c_str()), 0);
  }

  std::unique_ptr<Timeline> MustOpen(bool mark_cycles = false) {
    auto timeline = Timeline::Open(path_, mark_cycles);
    EXPECT_TRUE(timeline.ok()) << timeline.status().ToString();
    return timeline.ok() ? std::move(timeline).value() : nullptr;
  }

  std::string dir_;
  std::string path_;
};

TEST_F(TimelineTest, EventsLandOnTheirTensorsRows) {
  int64_t before = std::chrono::duration_cast<std::chrono::microseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  auto timeline = MustOpen();
  ASSERT_NE(timeline, nullptr);
  timeline->Begin("grad.a", kActivityNegotiateAllreduce);
  timeline->Instant("grad.a", "0");
  timeline->Instant("grad.a", "1");
  timeline->End("grad.a");
  timeline->Begin("grad.a", kActivityAllreduce,
                  {{"dtype", "float32"}, {"shape", {2, 3}}});
  timeline->Begin("grad.a", kActivityMemcpyInFusionBuffer);
  timeline->End("grad.a");
  timeline->End("grad.a");
  timeline->Begin("grad.b", kActivityQueue);
  timeline->End("grad.b");
  timeline->Begin("bad\xff", kActivityQueue);  // invalid UTF-8 must not throw
  ASSERT_TRUE(timeline->Flush().ok());

  json trace = ParseTrace(path_);
  int64_t a = RowOf(trace, "grad.a");
  int64_t b = RowOf(trace, "grad.b");
  EXPECT_GE(a, 1);
  EXPECT_GE(b, 1);
  EXPECT_NE(a, b);
  EXPECT_EQ(CountNamed(trace, "process_name"), 3);

  std::vector<json> row = OnRow(trace, a);
  std::vector<std::string> phs;
  for (const json& e : row) phs.push_back(e["ph"]);
  EXPECT_EQ(phs,
            (std::vector<std::string>{"B", "i", "i", "E", "B", "B", "E", "E"}));
  ASSERT_EQ(row.size(), 8u);
  EXPECT_EQ(row[0]["name"], "NEGOTIATE_ALLREDUCE");
  EXPECT_EQ(row[1]["name"], "0");
  EXPECT_EQ(row[1]["s"], "p");
  EXPECT_EQ(row[2]["name"], "1");
  EXPECT_EQ(row[4]["name"], "ALLREDUCE");
  EXPECT_EQ(row[4]["args"]["dtype"], "float32");
  EXPECT_EQ(row[4]["args"]["shape"], json({2, 3}));
  EXPECT_EQ(row[5]["name"], "MEMCPY_IN_FUSION_BUFFER");
  int64_t last = before;
  for (const json& e : row) {
    EXPECT_EQ(e["tid"], 0);
    EXPECT_GE(e["ts"].get<int64_t>(), last);  // wall-clock based, in order
    last = e["ts"].get<int64_t>();
  }
  EXPECT_LT(last - before, 60 * 1000 * 1000);
  std::vector<json> row_b = OnRow(trace, b);
  ASSERT_EQ(row_b.size(), 2u);
  EXPECT_EQ(row_b[0]["name"], "QUEUE");
  EXPECT_EQ(row_b[1]["ph"], "E");
}

TEST_F(TimelineTest, ValidJsonAfterEveryFlushAndAfterDestruction) {
  auto timeline = MustOpen();
  ASSERT_NE(timeline, nullptr);
  EXPECT_EQ(ParseTrace(path_), json::array());
  for (int i = 1; i <= 5; ++i) {
    timeline->Begin("t" + std::to_string(i % 2), "STEP");
    timeline->End("t" + std::to_string(i % 2));
    ASSERT_TRUE(timeline->Flush().ok());
    EXPECT_EQ(CountNamed(ParseTrace(path_), "STEP"), i);
  }
  timeline->Begin("t0", "LAST");
  timeline.reset();  // no Flush: the destructor writes it
  json trace = ParseTrace(path_);
  EXPECT_EQ(CountNamed(trace, "STEP"), 5);
  EXPECT_EQ(CountNamed(trace, "LAST"), 1);
}

TEST_F(TimelineTest, ConcurrentRecordersAndFlushesLoseNothing) {
  constexpr int kThreads = 4;
  constexpr int kEvents = 2000;
  auto timeline = MustOpen(/*mark_cycles=*/true);
  ASSERT_NE(timeline, nullptr);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEvents; ++i) {
        timeline->Begin("t" + std::to_string(t), "HOT");
        timeline->MarkCycle();
      }
    });
  }
  for (int i = 0; i < 20; ++i) EXPECT_TRUE(timeline->Flush().ok());
  for (std::thread& thread : threads) thread.join();
  timeline.reset();
  json trace = ParseTrace(path_);
  EXPECT_EQ(CountNamed(trace, "HOT"), kThreads * kEvents);
  EXPECT_EQ(CountNamed(trace, kMarkCycleStart), kThreads * kEvents);
  EXPECT_EQ(CountNamed(trace, "process_name"), kThreads);
}

TEST_F(TimelineTest, WriterThreadFlushesOnItsOwn) {
  auto timeline = MustOpen();
  ASSERT_NE(timeline, nullptr);
  timeline->Begin("t", "SOON");
  // Waits for the writer thread, bounded well above its interval.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (ReadFile(path_).find("SOON") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(CountNamed(ParseTrace(path_), "SOON"), 1);
}

TEST_F(TimelineTest, ReopenAppendsAndKeepsRows) {
  auto first = MustOpen();
  ASSERT_NE(first, nullptr);
  first->Begin("a", "FIRST");
  first->End("a");
  first->Begin("b", "FIRST");
  first->End("b");
  first.reset();
  json before = ParseTrace(path_);
  int64_t a = RowOf(before, "a");
  int64_t b = RowOf(before, "b");

  auto second = MustOpen();
  ASSERT_NE(second, nullptr);
  second->Begin("b", "SECOND");
  second->End("b");
  second->Begin("c", "SECOND");
  second->End("c");
  second.reset();

  json trace = ParseTrace(path_);
  EXPECT_EQ(CountNamed(trace, "FIRST"), 2);
  EXPECT_EQ(CountNamed(trace, "SECOND"), 2);
  EXPECT_EQ(CountNamed(trace, "process_name"), 3);  // b is not announced again
  EXPECT_EQ(RowOf(trace, "a"), a);
  EXPECT_EQ(RowOf(trace, "b"), b);
  int64_t c = RowOf(trace, "c");
  EXPECT_GT(c, std::max(a, b));
  // b's events of both writers share b's row, the later ones after.
  std::vector<json> row_b = OnRow(trace, b);
  ASSERT_EQ(row_b.size(), 4u);
  EXPECT_EQ(row_b[0]["name"], "FIRST");
  EXPECT_EQ(row_b[2]["name"], "SECOND");
  EXPECT_GE(row_b[2]["ts"].get<int64_t>(), row_b[1]["ts"].get<int64_t>());
}

TEST_F(TimelineTest, ReopenKeepsTheOldBytes) {
  auto first = MustOpen();
  ASSERT_NE(first, nullptr);
  first->Begin("a", "FIRST");
  first.reset();
  std::string old_text = ReadFile(path_);
  ASSERT_GT(old_text.size(), 3u);

  auto second = MustOpen();
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(ReadFile(path_), old_text);  // opening alone changes nothing
  second->Begin("a", "SECOND");
  ASSERT_TRUE(second->Flush().ok());
  std::string text = ReadFile(path_);
  std::string kept = old_text.substr(0, old_text.size() - 3);  // "\n]\n"
  EXPECT_EQ(text.substr(0, kept.size()), kept);
  EXPECT_EQ(CountNamed(ParseTrace(path_), "FIRST"), 1);
  EXPECT_EQ(CountNamed(ParseTrace(path_), "SECOND"), 1);
}

TEST_F(TimelineTest, ReopensATraceWithNoEvents) {
  MustOpen().reset();
  EXPECT_EQ(ReadFile(path_), "[\n]\n");
  auto again = MustOpen();
  ASSERT_NE(again, nullptr);
  again->Instant("x", "3");
  ASSERT_TRUE(again->Flush().ok());
  json trace = ParseTrace(path_);
  EXPECT_EQ(RowOf(trace, "x"), 1);
  EXPECT_EQ(CountNamed(trace, "3"), 1);
}

TEST_F(TimelineTest, EmptyExistingFileBecomesATrace) {
  WriteFile(path_, "");
  auto timeline = MustOpen();
  ASSERT_NE(timeline, nullptr);
  timeline->Begin("x", "Y");
  ASSERT_TRUE(timeline->Flush().ok());
  EXPECT_EQ(CountNamed(ParseTrace(path_), "Y"), 1);
}

TEST_F(TimelineTest, RefusesAFileThatIsNotItsTraceAndLeavesItAlone) {
  // The last one is a trace cut inside its closing bracket.
  const std::vector<std::string> contents = {
      "hello\n",
      "[1, 2]\n",
      "[]",
      "[\n\n]\n",
      "{\"traceEvents\": []}\n",
      "[\n{\"name\":\"x\",\"ph\":\"B\",\"pid\":1,\"tid\":0,\"ts\":1}\n]",
      "[\n{\"name\":\"x\",\"ph\":\"B\",\"pid\":1,\"tid\":0,\"ts\":1},\n{\"na",
  };
  for (const std::string& content : contents) {
    WriteFile(path_, content);
    auto timeline = Timeline::Open(path_, false);
    ASSERT_FALSE(timeline.ok()) << content;
    EXPECT_EQ(timeline.status().code(), common::Code::kInvalidArgument);
    EXPECT_NE(timeline.status().message().find(path_), std::string::npos)
        << timeline.status().message();
    EXPECT_EQ(ReadFile(path_), content);
  }
}

TEST_F(TimelineTest, UnopenablePathIsAnError) {
  for (const std::string& path : {dir_ + "/missing/trace.json", dir_}) {
    auto timeline = Timeline::Open(path, false);
    ASSERT_FALSE(timeline.ok()) << path;
    EXPECT_EQ(timeline.status().code(), common::Code::kInvalidArgument);
    EXPECT_NE(timeline.status().message().find(path), std::string::npos)
        << timeline.status().message();
  }
}

TEST_F(TimelineTest, MarksCyclesOnlyWhenAsked) {
  auto off = MustOpen(/*mark_cycles=*/false);
  ASSERT_NE(off, nullptr);
  off->MarkCycle();
  off->Begin("x", "Y");
  off.reset();
  EXPECT_EQ(CountNamed(ParseTrace(path_), kMarkCycleStart), 0);

  auto on = MustOpen(/*mark_cycles=*/true);
  ASSERT_NE(on, nullptr);
  on->MarkCycle();
  on.reset();
  json trace = ParseTrace(path_);
  ASSERT_EQ(CountNamed(trace, kMarkCycleStart), 1);
  for (const json& e : trace) {
    if (e.value("name", "") != kMarkCycleStart) continue;
    EXPECT_EQ(e["ph"], "i");
    EXPECT_EQ(e["s"], "g");
    EXPECT_EQ(e["pid"], 0);
  }
}

std::vector<json> Membership(const json& trace) {
  std::vector<json> events;
  const int64_t row = RowOf(trace, kMembershipRow);
  for (const json& e : trace) {
    if (e["pid"] == row && e["ph"] == "i") events.push_back(e);
  }
  return events;
}

TEST_F(TimelineTest, GenerationsAreGlobalInstantsOnTheMembershipRow) {
  auto timeline = MustOpen();
  ASSERT_NE(timeline, nullptr);
  timeline->MarkGeneration(3, 4, {"a:2", "b:2"},
                           "slot c:0 failed; host c blacklisted");
  timeline->Begin("grad", "ALLREDUCE");
  timeline->End("grad");
  timeline->MarkGeneration(4, 1, {"a:1"}, "hosts changed");
  timeline.reset();
  json trace = ParseTrace(path_);
  EXPECT_GT(RowOf(trace, kMembershipRow), 0);
  EXPECT_NE(RowOf(trace, kMembershipRow), RowOf(trace, "grad"));
  std::vector<json> events = Membership(trace);
  ASSERT_EQ(events.size(), 2u) << trace.dump();
  EXPECT_EQ(events[0]["name"], "generation 3: 4 ranks");
  EXPECT_EQ(events[0]["s"], "g");
  EXPECT_EQ(events[0]["args"],
            (json{{"generation", 3},
                  {"size", 4},
                  {"hosts", {"a:2", "b:2"}},
                  {"reason", "slot c:0 failed; host c blacklisted"}}));
  EXPECT_EQ(events[1]["name"], "generation 4: 1 rank");
  EXPECT_EQ(events[1]["args"]["reason"], "hosts changed");
  EXPECT_LE(events[0]["ts"].get<int64_t>(), events[1]["ts"].get<int64_t>());
}

// Rank 0 dies (SIGKILL, a span still open) and the next generation's rank
// 0, another process on the same machine, continues the same file: one
// trace, both generations on the one membership row.
TEST_F(TimelineTest, ANewRankZeroContinuesAKilledOnesTrace) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(ready[0]);
    auto timeline = Timeline::Open(path_, false);
    if (!timeline.ok()) _exit(1);
    (*timeline)->MarkGeneration(1, 2, {"a:2"}, "start");
    (*timeline)->Begin("grad", "ALLREDUCE");
    if (!(*timeline)->Flush().ok()) _exit(2);
    if (write(ready[1], "x", 1) != 1) _exit(3);
    for (;;) pause();
  }
  close(ready[1]);
  pollfd readable = {ready[0], POLLIN, 0};
  char byte;
  ssize_t got =
      poll(&readable, 1, /*ms=*/30000) == 1 ? read(ready[0], &byte, 1) : -1;
  kill(child, SIGKILL);
  std::optional<int> status = ReapWithin(child, std::chrono::seconds(10));
  close(ready[0]);
  ASSERT_EQ(got, 1) << "the child did not flush within 30 s";
  ASSERT_TRUE(status.has_value() && WIFSIGNALED(*status));

  auto next = MustOpen();
  ASSERT_NE(next, nullptr);
  next->MarkGeneration(2, 1, {"b:1"}, "slot a:0 failed; host a blacklisted");
  next->Begin("grad", "ALLREDUCE");
  next->End("grad");
  next.reset();
  json trace = ParseTrace(path_);
  EXPECT_EQ(CountNamed(trace, "process_name"), 2);  // membership, grad
  std::vector<json> events = Membership(trace);
  ASSERT_EQ(events.size(), 2u) << trace.dump();
  EXPECT_EQ(events[0]["args"]["generation"], 1);
  EXPECT_EQ(events[1]["args"]["generation"], 2);
  EXPECT_EQ(events[1]["args"]["hosts"], json({"b:1"}));
  EXPECT_LE(events[0]["ts"].get<int64_t>(), events[1]["ts"].get<int64_t>());
  EXPECT_EQ(OnRow(trace, RowOf(trace, "grad")).size(), 3u);
}

// The child is killed after its flushes, with more events still in memory:
// the file must hold every flushed event and parse, with no destructor run.
// (A kill in the middle of a write can tear that write at a page boundary;
// see timeline.h. The child is idle when killed, so that cannot happen here.)
TEST_F(TimelineTest, SigkilledWriterLeavesValidJson) {
  constexpr int kEventsPerFlush = 50;
  constexpr int kFlushes = 20;
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(ready[0]);
    auto timeline = Timeline::Open(path_, false);
    if (!timeline.ok()) _exit(1);
    for (int i = 0; i < kFlushes; ++i) {
      for (int j = 0; j < kEventsPerFlush; ++j) {
        (*timeline)->Begin("t" + std::to_string(j % 7), "WORK",
                           {{"i", i}, {"pad", std::string(200, 'x')}});
      }
      if (!(*timeline)->Flush().ok()) _exit(2);
    }
    (*timeline)->Begin("t0", "UNFLUSHED");
    if (write(ready[1], "x", 1) != 1) _exit(3);
    for (;;) pause();
  }
  close(ready[1]);
  // The child's byte says its flushes are done; it ends the wait early if
  // the child dies first (end of file).
  pollfd readable = {ready[0], POLLIN, 0};
  char byte;
  ssize_t got =
      poll(&readable, 1, /*ms=*/30000) == 1 ? read(ready[0], &byte, 1) : -1;
  kill(child, SIGKILL);
  std::optional<int> status = ReapWithin(child, std::chrono::seconds(10));
  close(ready[0]);
  ASSERT_EQ(got, 1) << "the child did not finish its flushes within 30 s "
                    << "(wait status " << status.value_or(-1) << ")";
  ASSERT_TRUE(status.has_value());
  ASSERT_TRUE(WIFSIGNALED(*status)) << *status;

  json trace = ParseTrace(path_);
  EXPECT_EQ(CountNamed(trace, "WORK"), kEventsPerFlush * kFlushes);
  EXPECT_LE(CountNamed(trace, "UNFLUSHED"), 1);  // the writer thread may
  EXPECT_EQ(CountNamed(trace, "process_name"), 7);
}

TEST_F(TimelineTest, WriteErrorStopsRecordingAndKeepsTheLastBatch) {
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // A file size limit makes the next write fail with EFBIG.
    signal(SIGXFSZ, SIG_IGN);
    auto timeline = Timeline::Open(path_, false);
    if (!timeline.ok()) _exit(1);
    Timeline& t = **timeline;
    t.Begin("t", "KEPT");
    if (!t.Flush().ok()) _exit(2);
    struct stat st;
    if (stat(path_.c_str(), &st) != 0) _exit(3);
    struct rlimit limit;
    limit.rlim_cur = limit.rlim_max = static_cast<rlim_t>(st.st_size + 100);
    if (setrlimit(RLIMIT_FSIZE, &limit) != 0) _exit(4);
    for (int i = 0; i < 100; ++i) t.Begin("t", "LOST");
    common::Status failed = t.Flush();
    if (failed.code() != common::Code::kResourceExhausted) _exit(5);
    if (failed.message().find(path_) == std::string::npos) _exit(6);
    t.Begin("t", "AFTER");  // ignored, never crashes
    if (t.Flush().code() != common::Code::kResourceExhausted) _exit(7);
    timeline.value().reset();
    _exit(0);
  }
  std::optional<int> status = ReapWithin(child, std::chrono::seconds(30));
  ASSERT_TRUE(status.has_value()) << "the child did not end within 30 s";
  ASSERT_TRUE(WIFEXITED(*status)) << *status;
  ASSERT_EQ(WEXITSTATUS(*status), 0);
  json trace = ParseTrace(path_);
  EXPECT_EQ(CountNamed(trace, "KEPT"), 1);
  EXPECT_EQ(CountNamed(trace, "LOST"), 0);
  EXPECT_EQ(CountNamed(trace, "AFTER"), 0);
}

}  // namespace
}  // namespace hvd::runtime
