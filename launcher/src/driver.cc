#include "driver.h"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <chrono>
#include <climits>
#include <cstring>
#include <optional>

#include "assignment.h"
#include "host_address.h"
#include "hvd/common/env_vars.h"
#include "hvd/common/hmac.h"
#include "hvd/rendezvous/server.h"
#include "output_relay.h"
#include "spawner.h"
#include "worker_launch.h"

namespace hvd::launcher {

using Clock = std::chrono::steady_clock;

namespace {

sigset_t DriverSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&set, sig);
  return set;
}

int ExitCodeOf(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int Fail(const std::string& message) {
  spdlog::error("{}", message);
  return 1;
}

// The running workers and what the driver does to them.
class Workers {
 public:
  void Add(WorkerProcess worker) { workers_.push_back(std::move(worker)); }
  std::vector<WorkerProcess>& all() { return workers_; }

  // Asks every running guard to send `sig` to its worker's group.
  void Signal(int sig) {
    unsigned char byte = static_cast<unsigned char>(sig);
    for (const WorkerProcess& worker : workers_) {
      if (worker.control_fd >= 0) {
        ssize_t ignored = write(worker.control_fd, &byte, 1);
        (void)ignored;
      }
    }
  }

  // Marks the guard `pid` exited; returns it, or null for another child.
  WorkerProcess* Reaped(pid_t pid) {
    for (WorkerProcess& worker : workers_) {
      if (worker.pid == pid) {
        close(worker.control_fd);
        worker.control_fd = -1;
        --running_;
        return &worker;
      }
    }
    return nullptr;
  }

  void Started() { ++running_; }
  int running() const { return running_; }

 private:
  std::vector<WorkerProcess> workers_;
  int running_ = 0;
};

}  // namespace

void BlockDriverSignals() {
  sigset_t set = DriverSignals();
  sigprocmask(SIG_BLOCK, &set, nullptr);
  // A guard that exits between two control bytes, or a closed stdout, must
  // be an EPIPE, not the end of hvdrun. Guards restore the default for the
  // worker.
  signal(SIGPIPE, SIG_IGN);
}

int RunJob(const LaunchConfig& config) {
  sigset_t handled = DriverSignals();
  int signals = signalfd(-1, &handled, SFD_CLOEXEC);
  if (signals < 0) return Fail("hvdrun: signalfd failed");

  auto secret = common::NewJobSecret();
  if (!secret.ok()) return Fail("hvdrun: " + secret.status().message());
  auto address = ChooseServerAddress(config.hosts, config.network_interface);
  if (!address.ok()) return Fail("hvdrun: " + address.status().message());
  auto ranks = AssignRanks(config.hosts, config.num_proc);
  if (!ranks.ok()) return Fail("hvdrun: " + ranks.status().message());
  rendezvous::ServerOptions server_options;
  server_options.bind_host = *address;
  server_options.secret = *secret;
  // Every worker keeps a connection and may hold a long-poll.
  server_options.threads =
      std::max<size_t>(128, 2 * static_cast<size_t>(config.num_proc) + 16);
  auto server = rendezvous::RendezvousServer::Start(server_options);
  if (!server.ok()) return Fail("hvdrun: " + server.status().message());
  auto launch =
      MakeLaunchContext(DriverEndpoint{*address, (*server)->port(), *secret});
  if (!launch.ok()) return Fail("hvdrun: " + launch.status().message());
  const DriverEndpoint& endpoint = launch->endpoint;
  spdlog::info("hvdrun: rendezvous server on {}:{}; starting {} workers",
               endpoint.address, endpoint.port, config.num_proc);

  Workers workers;
  std::vector<RelayStream> streams;
  std::string failure;
  int exit_code = 0;
  for (const SlotAssignment& slot : *ranks) {
    auto worker = LaunchWorker(slot, *launch, config);
    if (!worker.ok()) {
      failure = "hvdrun: " + worker.status().message();
      exit_code = 1;
      break;
    }
    spdlog::info("hvdrun: rank {} on {} (local rank {}) is pid {}", slot.rank,
                 slot.host, slot.local_rank, worker->pid);
    streams.push_back({worker->stdout_fd, slot.rank, false});
    streams.push_back({worker->stderr_fd, slot.rank, true});
    workers.Add(*worker);
    workers.Started();
  }
  auto relay = OutputRelay::Start(streams, config.output_dir);
  if (!relay.ok()) {
    failure = "hvdrun: " + relay.status().message();
    exit_code = 1;
  }

  bool stopping = exit_code != 0;
  std::optional<Clock::time_point> kill_at;
  if (stopping) {
    workers.Signal(SIGTERM);
    kill_at = Clock::now() + config.stop_grace;
  }
  while (workers.running() > 0) {
    int timeout = -1;
    if (kill_at) {
      timeout = static_cast<int>(std::max<int64_t>(
          0, std::chrono::duration_cast<std::chrono::milliseconds>(*kill_at -
                                                                   Clock::now())
                 .count()));
    }
    pollfd fd{signals, POLLIN, 0};
    if (poll(&fd, 1, timeout) == 0) {
      spdlog::warn("hvdrun: workers still running after {} ms; killing them",
                   config.stop_grace.count());
      workers.Signal(SIGKILL);
      kill_at.reset();
      continue;
    }
    signalfd_siginfo info;
    if (read(signals, &info, sizeof(info)) != sizeof(info)) continue;
    int sig = static_cast<int>(info.ssi_signo);
    if (sig != SIGCHLD) {
      if (stopping) {
        workers.Signal(SIGKILL);
        continue;
      }
      std::fprintf(stderr, "hvdrun: received %s; stopping the workers\n",
                   strsignal(sig));
      stopping = true;
      failure = std::string("hvdrun: stopped by ") + strsignal(sig);
      exit_code = 128 + sig;
      workers.Signal(sig);
      kill_at = Clock::now() + config.stop_grace;
      continue;
    }
    int status = 0;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
      WorkerProcess* worker = workers.Reaped(pid);
      if (worker == nullptr) continue;
      bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      spdlog::info("hvdrun: rank {} on {} {}", worker->slot.rank,
                   worker->slot.host, DescribeExit(status));
      if (ok || stopping) continue;
      failure = "hvdrun: rank " + std::to_string(worker->slot.rank) +
                " on host " + worker->slot.host + " " + DescribeExit(status);
      exit_code = ExitCodeOf(status);
      stopping = true;
      if (workers.running() > 0) {
        std::fprintf(stderr, "%s; stopping the other %d workers\n",
                     failure.c_str(), workers.running());
        workers.Signal(SIGTERM);
        kill_at = Clock::now() + config.stop_grace;
      }
    }
  }
  if (relay.ok()) (*relay)->Join();
  (*server)->Stop();
  close(signals);
  if (exit_code != 0) {
    std::fprintf(stderr, "%s; job failed (exit code %d)\n", failure.c_str(),
                 exit_code);
  }
  return exit_code;
}

}  // namespace hvd::launcher
