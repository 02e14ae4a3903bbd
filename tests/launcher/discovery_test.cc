// Host discovery: parsing the script's output, and running real scripts
// (exit codes, stderr, timeouts that kill the script's whole process group).
#include "driver/discovery.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "driver/discovery_loop.h"

namespace hvd::launcher {
namespace {

using common::Code;
using namespace std::chrono_literals;

std::vector<std::string> Hosts(const std::vector<HostSlots>& hosts) {
  std::vector<std::string> names;
  for (const auto& h : hosts) names.push_back(h.host);
  return names;
}

std::vector<int> Slots(const std::vector<HostSlots>& hosts) {
  std::vector<int> slots;
  for (const auto& h : hosts) slots.push_back(h.slots);
  return slots;
}

// ---- ParseDiscoveryOutput -------------------------------------------------

TEST(ParseDiscoveryOutputTest, HostsWithAndWithoutSlotsInOrder) {
  auto hosts = ParseDiscoveryOutput("zeta\nalpha:4\n10.0.0.2:1\nnode-7_b\n", 2);
  ASSERT_TRUE(hosts.ok()) << hosts.status().ToString();
  EXPECT_EQ(Hosts(*hosts), (std::vector<std::string>{"zeta", "alpha",
                                                     "10.0.0.2", "node-7_b"}));
  EXPECT_EQ(Slots(*hosts), (std::vector<int>{2, 4, 1, 2}));
}

TEST(ParseDiscoveryOutputTest, DefaultSlotsApplyToBareHosts) {
  auto hosts = ParseDiscoveryOutput("a\nb\n", 8);
  ASSERT_TRUE(hosts.ok()) << hosts.status().ToString();
  EXPECT_EQ(Slots(*hosts), (std::vector<int>{8, 8}));
  auto one = ParseDiscoveryOutput("a\n", 1);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(Slots(*one), std::vector<int>{1});
}

TEST(ParseDiscoveryOutputTest, BlankLinesWhitespaceAndCrlfAreIgnored) {
  auto hosts =
      ParseDiscoveryOutput("\n\n  a:2  \n\t\n\tb\r\n   \nc:3\r\n\n", 1);
  ASSERT_TRUE(hosts.ok()) << hosts.status().ToString();
  EXPECT_EQ(Hosts(*hosts), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(Slots(*hosts), (std::vector<int>{2, 1, 3}));
  // No trailing newline on the last line.
  auto last = ParseDiscoveryOutput("a\nb:5", 1);
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(Slots(*last), (std::vector<int>{1, 5}));
}

TEST(ParseDiscoveryOutputTest, EmptyOutputIsNoHosts) {
  for (const char* output : {"", "\n", "  \n\t\n"}) {
    auto hosts = ParseDiscoveryOutput(output, 1);
    ASSERT_TRUE(hosts.ok()) << hosts.status().ToString();
    EXPECT_TRUE(hosts->empty());
  }
}

TEST(ParseDiscoveryOutputTest, DuplicateHostIsRejectedNamingTheLine) {
  auto hosts = ParseDiscoveryOutput("a:2\nb\n\na:4\n", 1);
  ASSERT_FALSE(hosts.ok());
  EXPECT_EQ(hosts.status().code(), Code::kInvalidArgument);
  const std::string& message = hosts.status().message();
  EXPECT_NE(message.find("line 4"), std::string::npos) << message;
  EXPECT_NE(message.find("'a:4'"), std::string::npos) << message;
  EXPECT_NE(message.find("twice"), std::string::npos) << message;
  // The same host with and without slots is still the same host.
  EXPECT_FALSE(ParseDiscoveryOutput("a\na:2\n", 1).ok());
}

TEST(ParseDiscoveryOutputTest, MalformedLinesAreRejectedNamingTheLine) {
  struct Case {
    std::string output;
    std::string line;  // "line N 'text'"
  };
  for (const Case& c : std::vector<Case>{
           {"good\nhost:abc\n", "line 2 'host:abc'"},
           {"host:0\n", "line 1 'host:0'"},
           {"host:-3\n", "line 1 'host:-3'"},
           {"host:\n", "line 1 'host:'"},
           {"host:2:3\n", "line 1 'host:2:3'"},
           {"host:99999\n", "line 1 'host:99999'"},
           {"host: 2\n", "line 1 'host: 2'"},
           {"a\n\nbad host!\n", "line 3 'bad host!'"},
           {"with space\n", "line 1 'with space'"},
           {":4\n", "line 1 ':4'"},
           {"a/b\n", "line 1 'a/b'"},
           {"a\n-oProxyCommand=x:2\n",
            "line 2 '-oProxyCommand=x:2': host name '-oProxyCommand=x' "
            "starts with '-'"},
       }) {
    auto hosts = ParseDiscoveryOutput(c.output, 1);
    ASSERT_FALSE(hosts.ok()) << c.output;
    EXPECT_EQ(hosts.status().code(), Code::kInvalidArgument) << c.output;
    EXPECT_NE(hosts.status().message().find(c.line), std::string::npos)
        << "expected [" << c.line << "] in " << hosts.status().ToString();
  }
}

TEST(ParseDiscoveryOutputTest, SlotCountLimits) {
  auto max = ParseDiscoveryOutput("a:4096\n", 1);
  ASSERT_TRUE(max.ok()) << max.status().ToString();
  EXPECT_EQ(Slots(*max), std::vector<int>{4096});
  EXPECT_FALSE(ParseDiscoveryOutput("a:4097\n", 1).ok());
  auto one = ParseDiscoveryOutput("a:1\n", 1);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(Slots(*one), std::vector<int>{1});
}

// ---- RunDiscovery -------------------------------------------------------

class RunDiscoveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "hvd_discovery_XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }

  void TearDown() override {
    std::string command = "rm -rf '" + dir_ + "'";
    EXPECT_EQ(std::system(command.c_str()), 0);
  }

  // Writes an executable /bin/sh script with `body` and returns its path.
  std::string Script(const std::string& name, const std::string& body) {
    std::string path = dir_ + "/" + name;
    {
      std::ofstream out(path);
      out << "#!/bin/sh\n" << body;
    }
    EXPECT_EQ(chmod(path.c_str(), 0755), 0);
    return path;
  }

  std::string ReadFile(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  std::string dir_;
};

// True once `pid` is gone or a zombie (killed, waiting to be reaped by
// whoever inherited it); waits up to 3 s for that.
bool ProcessEnds(pid_t pid) {
  auto give_up = std::chrono::steady_clock::now() + 3s;
  while (std::chrono::steady_clock::now() < give_up) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    if (!stat) return true;
    std::string line;
    std::getline(stat, line);
    size_t paren = line.rfind(')');
    if (paren == std::string::npos || paren + 2 >= line.size()) return true;
    char state = line[paren + 2];
    if (state == 'Z' || state == 'X') return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

// A run that throws (here: what the driver does with its hosts) is a
// failed run, logged; the loop goes on, and hvdrun with it (an exception
// on this thread used to be std::terminate).
TEST_F(RunDiscoveryTest, ARunThatThrowsIsAFailedRunNotTheEnd) {
  LaunchConfig config;
  config.discovery_script = Script("hosts.sh", "echo a:1\n");
  config.discovery_interval = 10ms;
  std::mutex mu;
  std::condition_variable ran;
  int runs = 0;
  {
    DiscoveryLoop loop(config, [&](std::vector<HostSlots>) {
      std::lock_guard<std::mutex> lock(mu);
      ++runs;
      ran.notify_all();
      if (runs == 1) throw std::runtime_error("not UTF-8");
    });
    std::unique_lock<std::mutex> lock(mu);
    EXPECT_TRUE(ran.wait_for(lock, 30s, [&] { return runs >= 2; }));
  }
}

TEST_F(RunDiscoveryTest, PrintedHostsAreParsed) {
  std::string script =
      Script("hosts.sh", "echo 'host-b:2'\necho\necho 'host-a'\n");
  auto hosts = RunDiscovery(script, 3, 10s);
  ASSERT_TRUE(hosts.ok()) << hosts.status().ToString();
  EXPECT_EQ(Hosts(*hosts), (std::vector<std::string>{"host-b", "host-a"}));
  EXPECT_EQ(Slots(*hosts), (std::vector<int>{2, 3}));
}

TEST_F(RunDiscoveryTest, StderrAloneDoesNotFailASuccessfulScript) {
  std::string script =
      Script("noisy.sh", "echo 'looking for hosts' >&2\necho a:1\n");
  auto hosts = RunDiscovery(script, 1, 10s);
  ASSERT_TRUE(hosts.ok()) << hosts.status().ToString();
  EXPECT_EQ(Hosts(*hosts), std::vector<std::string>{"a"});
}

TEST_F(RunDiscoveryTest, LargeOutputIsReadWhole) {
  // More than a pipe buffer (64 KiB) on stdout and on stderr at once: the
  // reader must drain both or the script blocks.
  std::string script = Script("big.sh",
                              "i=0\n"
                              "while [ $i -lt 5000 ]; do\n"
                              "  echo \"host-$i:1\"\n"
                              "  echo \"stderr line $i padding padding\" >&2\n"
                              "  i=$((i+1))\n"
                              "done\n");
  auto hosts = RunDiscovery(script, 1, 30s);
  ASSERT_TRUE(hosts.ok()) << hosts.status().ToString();
  ASSERT_EQ(hosts->size(), 5000u);
  EXPECT_EQ(hosts->front().host, "host-0");
  EXPECT_EQ(hosts->back().host, "host-4999");
}

TEST_F(RunDiscoveryTest, NonZeroExitNamesTheCodeAndStderr) {
  std::string script = Script(
      "fails.sh", "echo a:1\necho 'cannot reach the cloud API' >&2\nexit 3\n");
  auto hosts = RunDiscovery(script, 1, 10s);
  ASSERT_FALSE(hosts.ok());
  const std::string& message = hosts.status().message();
  EXPECT_NE(message.find("exit code 3"), std::string::npos) << message;
  EXPECT_NE(message.find("cannot reach the cloud API"), std::string::npos)
      << message;
  EXPECT_NE(message.find(script), std::string::npos) << message;
}

TEST_F(RunDiscoveryTest, KilledBySignalIsAnError) {
  std::string script = Script("killed.sh", "kill -TERM $$\nsleep 5\n");
  auto hosts = RunDiscovery(script, 1, 10s);
  ASSERT_FALSE(hosts.ok());
  EXPECT_NE(hosts.status().message().find("signal 15"), std::string::npos)
      << hosts.status().ToString();
}

TEST_F(RunDiscoveryTest, BadOutputNamesTheScriptAndLine) {
  std::string script = Script("bad.sh", "echo a\necho 'b:zero'\n");
  auto hosts = RunDiscovery(script, 1, 10s);
  ASSERT_FALSE(hosts.ok());
  EXPECT_EQ(hosts.status().code(), Code::kInvalidArgument);
  const std::string& message = hosts.status().message();
  EXPECT_NE(message.find(script), std::string::npos) << message;
  EXPECT_NE(message.find("line 2 'b:zero'"), std::string::npos) << message;
}

TEST_F(RunDiscoveryTest, TimeoutKillsTheScript) {
  std::string script = Script("slow.sh", "echo a:1\nsleep 30\n");
  auto started = std::chrono::steady_clock::now();
  auto hosts = RunDiscovery(script, 1, 300ms);
  auto elapsed = std::chrono::steady_clock::now() - started;
  ASSERT_FALSE(hosts.ok());
  EXPECT_EQ(hosts.status().code(), Code::kTimeout) << hosts.status().ToString();
  EXPECT_NE(hosts.status().message().find("300 ms"), std::string::npos)
      << hosts.status().ToString();
  EXPECT_GE(elapsed, 300ms);
  EXPECT_LT(elapsed, 3s);
}

TEST_F(RunDiscoveryTest, TimeoutKillsWhatTheScriptStartedToo) {
  // The script starts a child that keeps the pipes open and waits for it;
  // killing only the script would leave the child (and the pipes) behind.
  std::string pid_file = dir_ + "/child.pid";
  std::string script =
      Script("spawner.sh", "sleep 30 &\necho $! > '" + pid_file + "'\nwait\n");
  auto started = std::chrono::steady_clock::now();
  auto hosts = RunDiscovery(script, 1, 300ms);
  auto elapsed = std::chrono::steady_clock::now() - started;
  ASSERT_FALSE(hosts.ok());
  EXPECT_EQ(hosts.status().code(), Code::kTimeout) << hosts.status().ToString();
  EXPECT_LT(elapsed, 3s);
  std::string pid_text = ReadFile(pid_file);
  ASSERT_FALSE(pid_text.empty()) << "the script never started its child";
  pid_t child = static_cast<pid_t>(std::stol(pid_text));
  ASSERT_GT(child, 1);
  EXPECT_TRUE(ProcessEnds(child)) << "child " << child << " still runs";
  if (!ProcessEnds(child)) kill(child, SIGKILL);  // leave nothing behind
}

// The deadline holds even after the script closes its output.
TEST_F(RunDiscoveryTest, TimeoutHoldsAfterTheScriptClosesItsOutput) {
  std::string script =
      Script("quiet.sh", "echo a:1\nexec >/dev/null 2>&1\nsleep 30\n");
  auto started = std::chrono::steady_clock::now();
  auto hosts = RunDiscovery(script, 1, 300ms);
  auto elapsed = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(hosts.status().code(), Code::kTimeout) << hosts.status().ToString();
  EXPECT_LT(elapsed, 3s);
}

TEST_F(RunDiscoveryTest, MissingOrNonExecutableScriptIsAnError) {
  auto missing = RunDiscovery(dir_ + "/does-not-exist.sh", 1, 5s);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("does-not-exist.sh"),
            std::string::npos)
      << missing.status().ToString();
  std::string script = Script("plain.sh", "echo a\n");
  ASSERT_EQ(chmod(script.c_str(), 0644), 0);
  auto not_executable = RunDiscovery(script, 1, 5s);
  EXPECT_FALSE(not_executable.ok());
}

}  // namespace
}  // namespace hvd::launcher
