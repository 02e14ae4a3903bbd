#include "guard.h"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace hvd::launcher {

std::vector<std::string> GuardCommand(const std::string& hvdrun_path,
                                      std::chrono::milliseconds grace,
                                      bool secret_on_stdin,
                                      const std::vector<std::string>& command) {
  std::vector<std::string> argv = {
      hvdrun_path, kGuardFlag, std::to_string(grace.count()),
      secret_on_stdin ? "secret-stdin" : "-", "--"};
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

namespace {

[[noreturn]] void ExitLike(int status) {
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, nullptr);
    raise(sig);
  }
  _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

// A stopped (SIGSTOP, hung) worker would keep a SIGTERM pending until the
// grace ends; SIGCONT lets it act on the signal now, as a shell's kill does.
void SignalGroup(pid_t worker, int sig) {
  kill(-worker, sig);
  if (sig != SIGKILL && sig != SIGCONT) kill(-worker, SIGCONT);
}

}  // namespace

int GuardMain(int argc, char** argv) {
  if (argc < 6 || std::strcmp(argv[4], "--") != 0) {
    std::fprintf(stderr, "hvdrun guard: bad arguments (internal use only)\n");
    return 2;
  }
  const int grace_ms = std::atoi(argv[2]);
  const bool secret_on_stdin = std::strcmp(argv[3], "secret-stdin") == 0;
  // Out of hvdrun's process group, so a terminal's Ctrl-C reaches only
  // hvdrun, which forwards it exactly once.
  setpgid(0, 0);

  sigset_t handled;
  sigemptyset(&handled);
  for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&handled, sig);
  sigprocmask(SIG_BLOCK, &handled, nullptr);
  int signals = signalfd(-1, &handled, SFD_CLOEXEC);

  int stdin_pipe[2] = {-1, -1};
  if (secret_on_stdin && pipe(stdin_pipe) != 0) return 1;
  pid_t worker = fork();
  if (worker < 0) {
    std::perror("hvdrun guard: fork");
    return 1;
  }
  if (worker == 0) {
    setpgid(0, 0);
    signal(SIGPIPE, SIG_DFL);  // hvdrun ignores it; the worker must not
    // The worker starts with no signal blocked, whatever hvdrun's mask was:
    // SIGTERM and SIGINT must reach it.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    if (secret_on_stdin) {
      dup2(stdin_pipe[0], STDIN_FILENO);
      close(stdin_pipe[0]);
      close(stdin_pipe[1]);
    }
    close(kGuardControlFd);
    execvp(argv[5], argv + 5);
    std::fprintf(stderr, "hvdrun: cannot run '%s': %s\n", argv[5],
                 std::strerror(errno));
    _exit(127);
  }
  setpgid(worker, worker);  // either side may win the race; both agree
  if (secret_on_stdin) {
    close(stdin_pipe[0]);
    const char* secret = std::getenv("HVD_SECRET_KEY");
    std::string line = std::string(secret ? secret : "") + "\n";
    ssize_t ignored = write(stdin_pipe[1], line.data(), line.size());
    (void)ignored;
    close(stdin_pipe[1]);
  }

  using Clock = std::chrono::steady_clock;
  bool driver_alive = true;
  bool kill_pending = false;
  Clock::time_point kill_at;
  while (true) {
    pollfd fds[2] = {{signals, POLLIN, 0},
                     {driver_alive ? kGuardControlFd : -1, POLLIN, 0}};
    int timeout = -1;
    if (kill_pending) {
      timeout = static_cast<int>(std::max<int64_t>(
          0, std::chrono::duration_cast<std::chrono::milliseconds>(kill_at -
                                                                   Clock::now())
                 .count()));
    }
    int ready = poll(fds, 2, timeout);
    if (ready == 0) {  // grace over
      kill(-worker, SIGKILL);
      kill_pending = false;
      continue;
    }
    if (fds[1].revents != 0) {
      unsigned char sig = 0;
      ssize_t n = read(kGuardControlFd, &sig, 1);
      if (n == 1) {
        SignalGroup(worker, sig);
      } else if (n == 0 || errno != EINTR) {
        // The driver is gone: stop the worker's whole group.
        driver_alive = false;
        SignalGroup(worker, SIGTERM);
        kill_pending = true;
        kill_at = Clock::now() + std::chrono::milliseconds(grace_ms);
      }
    }
    if (fds[0].revents != 0) {
      signalfd_siginfo info;
      if (read(signals, &info, sizeof(info)) != sizeof(info)) continue;
      if (info.ssi_signo != SIGCHLD) {
        SignalGroup(worker, static_cast<int>(info.ssi_signo));
        continue;
      }
      int status = 0;
      if (waitpid(worker, &status, WNOHANG) == worker) {
        kill(-worker, SIGKILL);  // whatever the worker left running
        ExitLike(status);
      }
    }
  }
}

}  // namespace hvd::launcher
