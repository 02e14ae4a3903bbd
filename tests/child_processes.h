// ChildProcesses: the worker processes one C++ test starts (fork and exec,
// with the job secret in the environment, or fork alone), reaped with a
// deadline and killed however the test ends.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace hvd::testing {

class ChildProcesses {
 public:
  ChildProcesses() = default;
  ChildProcesses(const ChildProcesses&) = delete;
  ChildProcesses& operator=(const ChildProcesses&) = delete;
  ~ChildProcesses() {
    for (pid_t pid : pids_) {
      // Only live children: kill() of 0 or -1 would hit the test's process
      // group or every process it may signal.
      if (pid <= 0) continue;
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }

  // Runs args[0] (a path) with `args`, HVD_SECRET_KEY=secret.
  void Spawn(std::vector<std::string> args, const std::string& secret) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      setenv("HVD_SECRET_KEY", secret.c_str(), 1);
      std::vector<char*> argv;
      for (auto& arg : args) argv.push_back(arg.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    pids_.push_back(pid);
  }

  // Runs body() in a forked child, which then exits with its result and
  // never returns into the test. Fork before the test starts threads: the
  // child has only the forking one.
  void Fork(const std::function<int()>& body) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) _exit(body());
    pids_.push_back(pid);
  }

  // The i-th child's pid (in spawn order); 0 once reaped.
  pid_t pid(size_t i) const { return pids_[i]; }

  // Exit codes in spawn order; -1 for a child killed by a signal or still
  // running at the deadline (the destructor kills it).
  std::vector<int> Wait(std::chrono::seconds limit) {
    std::vector<int> codes(pids_.size(), -1);
    const auto deadline = std::chrono::steady_clock::now() + limit;
    size_t left = 0;
    for (pid_t pid : pids_) left += pid > 0 ? 1 : 0;
    while (left > 0 && std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      pid_t pid = waitpid(-1, &status, WNOHANG);
      if (pid <= 0) {
        // Reaping, not synchronising.
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        continue;
      }
      for (size_t i = 0; i < pids_.size(); ++i) {
        if (pids_[i] != pid) continue;
        codes[i] = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        pids_[i] = 0;  // reaped
        --left;
      }
    }
    return codes;
  }

 private:
  std::vector<pid_t> pids_;
};

}  // namespace hvd::testing
