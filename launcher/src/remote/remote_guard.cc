#include "remote/remote_guard.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>

#include "hvd/common/network_interfaces.h"
#include "job/worker_env.h"
#include "policy/exit_status.h"
#include "process/process_group.h"
#include "process/remote_launch.h"
#include "remote/adopt_socket.h"
#include "remote/adoptable_guard.h"
#include "remote/munge_seal.h"

extern char** environ;

namespace hvd::launcher {

using Clock = std::chrono::steady_clock;

std::vector<std::string> RemoteGuardArgv(
    const std::string& hvdrun_path, std::chrono::milliseconds grace,
    std::chrono::milliseconds silence, std::chrono::milliseconds start_timeout,
    const std::optional<std::string>& munge_socket) {
  std::vector<std::string> argv = {
      hvdrun_path, kRemoteGuardFlag, std::to_string(grace.count()),
      std::to_string(silence.count()), std::to_string(start_timeout.count())};
  if (munge_socket) {
    argv.push_back(kMungeSealWord);
    argv.push_back(munge_socket->empty() ? kDefaultMungeSocketWord
                                         : *munge_socket);
  }
  return argv;
}

namespace {

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "hvdrun (remote guard on %s): %s\n",
               common::ThisHostName().c_str(), message.c_str());
  std::exit(1);
}

// What the guard's command line says it takes (remote_guard.h).
struct Expected {
  LaunchSeal seal = LaunchSeal::kPlain;
  std::string munge_socket;  // empty: libmunge's default
};

// Reads the launch message from standard input by `deadline`, unsealing
// it as `expected` says. Bytes that follow it in the same reads are
// control bytes, left in `rest`.
RemoteLaunch ReadLaunch(Clock::time_point deadline, const Expected& expected,
                        std::string& rest) {
  std::string input;
  std::optional<LaunchFrame> frame;
  char buffer[65536];
  while (!frame) {
    pollfd fd{STDIN_FILENO, POLLIN, 0};
    if (poll(&fd, 1, MillisUntil(deadline)) == 0) {
      Die("no launch message from hvdrun within the start timeout");
    }
    ssize_t n = read(STDIN_FILENO, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) Die("hvdrun's connection ended before the launch message");
    input.append(buffer, static_cast<size_t>(n));
    auto parsed = ParseLaunchFrame(input);
    if (!parsed.ok()) Die(parsed.status().message());
    frame = *parsed;
  }
  if (frame->seal != expected.seal) {
    Die(std::string("refused a ") + LaunchSealName(frame->seal) +
        " launch message: this guard takes only a " +
        LaunchSealName(expected.seal) + " one" +
        (expected.seal == LaunchSeal::kMunge
             ? " (a Slurm step's guard: srun carries its input in clear, so "
               "no one may start a worker by writing to it; is the other "
               "end this job's hvdrun, of the same version?)"
             : " (is the other end this job's hvdrun, of the same "
               "version?)"));
  }
  std::string payload = input.substr(frame->body_at, frame->body_size);
  if (frame->seal == LaunchSeal::kMunge) {
    auto unsealed = MungeUnseal(payload, expected.munge_socket);
    if (!unsealed.ok()) Die(unsealed.status().message());
    payload = std::move(*unsealed);
  }
  auto launch = DecodeRemoteLaunch(payload);
  if (!launch.ok()) Die(launch.status().message());
  rest = input.substr(frame->body_at + frame->body_size);
  return std::move(*launch);
}

// This process's environment with the message's variables set over it.
std::vector<std::string> WorkerEnviron(const EnvList& env) {
  std::map<std::string, std::string> merged;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string text(*entry);
    size_t eq = text.find('=');
    if (eq != std::string::npos)
      merged[text.substr(0, eq)] = text.substr(eq + 1);
  }
  for (const auto& [name, value] : env) merged[name] = value;
  std::vector<std::string> strings;
  for (const auto& [name, value] : merged)
    strings.push_back(name + "=" + value);
  return strings;
}

}  // namespace

int RemoteGuardMain(int argc, char** argv) {
  Expected expected;
  if (argc == 7 && std::strcmp(argv[5], kMungeSealWord) == 0) {
    expected.seal = LaunchSeal::kMunge;
    if (std::strcmp(argv[6], kDefaultMungeSocketWord) != 0) {
      expected.munge_socket = argv[6];
    }
  } else if (argc != 5) {
    std::fprintf(stderr, "hvdrun remote guard: bad arguments (internal use)\n");
    return 2;
  }
  const auto grace = std::chrono::milliseconds(std::atoll(argv[2]));
  const auto silence = std::chrono::milliseconds(std::atoll(argv[3]));
  const auto start_timeout = std::chrono::milliseconds(std::atoll(argv[4]));

  sigset_t handled;
  sigemptyset(&handled);
  for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&handled, sig);
  sigprocmask(SIG_BLOCK, &handled, nullptr);
  int signals = signalfd(-1, &handled, SFD_CLOEXEC);
  // A closed ssh channel must be an error on write, not the guard's end.
  signal(SIGPIPE, SIG_IGN);

  std::string control;
  RemoteLaunch launch =
      ReadLaunch(Clock::now() + start_timeout, expected, control);
  if (chdir(launch.working_dir.c_str()) != 0) {
    Die("cannot enter the working directory " + launch.working_dir + ": " +
        std::strerror(errno) +
        " (hvdrun starts remote workers in its own directory: the same path "
        "must exist on every host)");
  }
  std::vector<std::string> env_strings = WorkerEnviron(launch.env);
  std::vector<char*> envp, args;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  for (auto& s : launch.argv) args.push_back(s.data());
  args.push_back(nullptr);

  // An adoptable worker's output comes through the guard, which outlives
  // the ssh link it is written to (adoptable_guard.h).
  const bool adoptable = !launch.adopt_name.empty();
  int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
  if (adoptable &&
      (!IsAdoptSocketName(launch.adopt_name) ||
       pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0)) {
    Die("cannot make the adoptable worker's output pipes (" +
        launch.adopt_name + ")");
  }
  // Run here by a local guard (guard.h), this guard must outlive it.
  if (adoptable) prctl(PR_SET_PDEATHSIG, 0);
  const pid_t guard = getpid();
  pid_t worker = fork();
  if (worker < 0) Die(std::string("fork: ") + std::strerror(errno));
  if (worker == 0) {
    DieWithGuard(guard);
    setpgid(0, 0);
    ResetWorkerSignals();
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0) dup2(null, STDIN_FILENO);
    if (adoptable) {
      dup2(out_pipe[1], STDOUT_FILENO);
      dup2(err_pipe[1], STDERR_FILENO);
    }
    environ = envp.data();  // execvp searches the worker's PATH
    execvp(args[0], args.data());
    std::fprintf(stderr, "hvdrun: cannot run '%s' on %s: %s\n", args[0],
                 common::ThisHostName().c_str(), std::strerror(errno));
    _exit(127);
  }
  setpgid(worker, worker);
  if (adoptable) {
    close(out_pipe[1]);
    close(err_pipe[1]);
    RunAdoptableGuard({worker, out_pipe[0], err_pipe[0], signals, control,
                       AdoptSocketFolder() + "/" + launch.adopt_name,
                       std::chrono::milliseconds(launch.adopt_grace_ms), grace,
                       silence});
  }

  bool input_open = true;
  Clock::time_point heard = Clock::now();
  // Clock::time_point::max(): no SIGKILL due.
  Clock::time_point kill_at = Clock::time_point::max();
  // hvdrun is gone or out of reach: stop the worker's group.
  auto stop = [&](const char* why) {
    std::fprintf(stderr,
                 "hvdrun (remote guard on %s): %s: stopping the worker\n",
                 common::ThisHostName().c_str(), why);
    SignalGroup(worker, SIGTERM);
    kill_at = Clock::now() + grace;
  };
  auto act_on = [&](const std::string& bytes) {
    for (unsigned char byte : bytes) {
      if (byte != kHeartbeatByte && byte < 65) SignalGroup(worker, byte);
    }
    heard = Clock::now();
  };
  act_on(control);
  while (true) {
    int timeout = -1;
    if (input_open) timeout = MillisUntil(heard + silence);
    if (kill_at != Clock::time_point::max()) {
      int left = MillisUntil(kill_at);
      timeout = timeout < 0 ? left : std::min(timeout, left);
    }
    pollfd fds[2] = {{signals, POLLIN, 0},
                     {input_open ? STDIN_FILENO : -1, POLLIN, 0}};
    poll(fds, 2, timeout);
    if (Clock::now() >= kill_at) {
      kill(-worker, SIGKILL);
      kill_at = Clock::time_point::max();
    }
    if (fds[1].revents != 0) {
      char buffer[256];
      ssize_t n = read(STDIN_FILENO, buffer, sizeof(buffer));
      if (n > 0) {
        act_on(std::string(buffer, static_cast<size_t>(n)));
      } else if (n == 0 || errno != EINTR) {
        input_open = false;
        stop("hvdrun's connection ended");
      }
    } else if (input_open && Clock::now() >= heard + silence) {
      input_open = false;
      stop("no word from hvdrun within the silence bound (link down?)");
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
        std::fflush(stdout);
        _exit(ShellExitCode(status));
      }
    }
  }
}

}  // namespace hvd::launcher
