#include "driver/driver.h"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "driver/discovery.h"
#include "driver/discovery_loop.h"
#include "driver/driver_threads.h"
#include "driver/etcd_job.h"
#include "driver/worker_launch.h"
#include "hvd/common/env.h"
#include "hvd/common/hmac.h"
#include "hvd/common/logging.h"
#include "hvd/common/network_interfaces.h"
#include "hvd/common/secret_file.h"
#include "hvd/notify/client.h"
#include "hvd/rendezvous/server.h"
#include "policy/job_policy.h"
#include "process/output_relay.h"
#include "remote/host_address.h"
#include "remote/host_check_run.h"
#include "slurm/slurm_jobs.h"
#include "status/job_file.h"
#include "status/job_record.h"
#include "status/status_server.h"
#include "status/status_snapshots.h"

namespace hvd::launcher {

using Clock = std::chrono::steady_clock;

namespace {

sigset_t DriverSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&set, sig);
  return set;
}

// The policy's settings; which interfaces count depends on where the
// rendezvous server is (`server_address`).
PolicyConfig PolicyFor(const LaunchConfig& config,
                       const std::string& server_address) {
  PolicyConfig policy = PolicyConfig::From(config);
  policy.loopback_interfaces_count = common::IsLoopbackAddress(server_address);
  return policy;
}

JobFacts FactsOf(const LaunchConfig& config) {
  JobFacts facts;
  facts.elastic = config.elastic;
  facts.num_proc = config.num_proc;
  facts.min_np = config.min_np > 0 ? config.min_np : config.num_proc;
  facts.max_np = config.max_np;
  for (const std::string& word : config.command) {
    facts.command += (facts.command.empty() ? "" : " ") + word;
  }
  return facts;
}

class Driver {
 public:
  Driver(const LaunchConfig& config, rendezvous::RendezvousServer& server,
         LaunchContext launch, std::vector<HostSlots> hosts, EtcdJob* etcd)
      : config_(config),
        server_(server),
        etcd_(etcd),
        launch_(std::move(launch)),
        policy_(PolicyFor(config, launch_.endpoint.address), std::move(hosts)),
        record_(FactsOf(config), Clock::now(), common::WallClockMs()),
        clock_{Clock::now(), common::WallClockMs()},
        snapshots_([this] { inbox_.Wake(); }) {}

  int Run(int signals);
  StatusSnapshots& snapshots() { return snapshots_; }

 private:
  struct Running {
    WorkerProcess process;
    std::unique_ptr<OutputRelay> relay;
  };

  // Hands `actions` to the job record, then carries them out.
  void Execute(TimePoint now, const Actions& actions);
  void Start(const StartWorker& action);
  void ExplainThroughSlurm(const std::vector<std::string>& hosts);
  void ExplainLostEtcd(const Actions& actions);
  // The Gloo keys of generations no worker needs once `published` is: in
  // the embedded store here, in etcd on EtcdJob's thread.
  void ForgetGlooGenerations(int64_t published);
  void Signal(WorkerId worker, int signal);
  // Addresses workers registered at check-in. Kept here too: the board
  // forgets the slots a new generation drops, which must still be told.
  void RefreshAddresses();
  // With etcd: hands the driver's state to EtcdJob when it changed.
  void SaveState();
  std::vector<Event> ReadSignals(int signals);
  void PublishSnapshot() {
    record_.OnReports(server_.reports().Latest());
    const TimePoint now = Clock::now();
    nlohmann::json snapshot = record_.Snapshot(now, policy_.HostRows(now));
    snapshot["rendezvous"] = nlohmann::json::parse(server_.StatusJson());
    if (etcd_ != nullptr) snapshot["leader"] = etcd_->StatusJson();
    snapshots_.Publish(std::move(snapshot));
  }

  const LaunchConfig& config_;
  rendezvous::RendezvousServer& server_;
  EtcdJob* const etcd_;  // with --rendezvous-backend etcd
  const LaunchContext launch_;
  JobPolicy policy_;
  JobRecord record_;
  const WallClockAnchor clock_;
  std::string saved_state_;  // the last one handed to EtcdJob
  bool state_too_large_ = false;
  Inbox inbox_;
  StatusSnapshots snapshots_;
  std::atomic<bool> board_changed_{false};
  Cancellation cancel_errands_;  // before errands_: they use its fd
  Errands errands_;
  std::map<WorkerId, Running> workers_;
  std::map<pid_t, WorkerId> pids_;
  std::map<std::string, std::string> addresses_;
  std::map<std::string, WorkerId> reporting_;  // slot -> its newest worker
  int64_t sequence_ = 0;                       // of HostsUpdated messages
  int64_t gloo_forgotten_ = 0;  // generations below it have no Gloo keys
  int exit_code_ = 1;
};

int Driver::Run(int signals) {
  server_.board().SetListener([this] {
    board_changed_ = true;
    inbox_.Wake();
  });
  if (etcd_ != nullptr) {
    const std::string job = "job '" + config_.job_id + "'";
    etcd_->Run([this, job](const LeadChange& change) {
      if (!change.holder.empty()) {
        inbox_.Post(LeadTaken{change.reason + " (" + change.holder + ")"});
      } else if (change.leading) {
        common::Announce("hvdrun: leads " + job + " in etcd again");
      } else {
        common::Announce("hvdrun: lost the lead of " + job + " in etcd (" +
                         change.reason +
                         "); the workers go on while it "
                         "campaigns again");
      }
    });
  }
  std::unique_ptr<DiscoveryLoop> discovery;
  if (config_.elastic && !config_.discovery_script.empty()) {
    discovery = std::make_unique<DiscoveryLoop>(
        config_, [this](std::vector<HostSlots> hosts) {
          inbox_.Post(HostsDiscovered{std::move(hosts)});
        });
  }
  {
    const TimePoint now = Clock::now();
    Execute(now, policy_.Start(now));
  }
  while (!policy_.finished()) {
    int timeout_ms = -1;
    if (auto deadline = policy_.NextDeadline()) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline -
                                                               Clock::now());
      timeout_ms = static_cast<int>(
          std::clamp<int64_t>(left.count(), 0, 24 * 3600 * 1000));
    }
    pollfd fds[2] = {{signals, POLLIN, 0}, {inbox_.fd(), POLLIN, 0}};
    if (poll(fds, 2, timeout_ms) < 0 && errno != EINTR) {
      spdlog::error("hvdrun: poll failed: {}", std::strerror(errno));
    }
    std::vector<Event> events;
    if (fds[0].revents & POLLIN) events = ReadSignals(signals);
    if (fds[1].revents & POLLIN) {
      for (Event& event : inbox_.Take()) events.push_back(std::move(event));
    }
    if (board_changed_.exchange(false)) {
      auto& board = server_.board();
      BoardChanged snapshot;
      snapshot.generation = board.generation();
      for (auto& slot : board.Missing()) snapshot.missing.insert(slot);
      for (auto& slot : board.ResetRequests()) {
        snapshot.reset_requests.insert(slot);
      }
      events.push_back(std::move(snapshot));
    }
    if (events.empty()) events.push_back(Tick{});
    for (const Event& event : events) {
      const TimePoint now = Clock::now();
      record_.OnEvent(now, event);
      Execute(now, policy_.OnEvent(now, event));
      if (policy_.finished()) break;
    }
    if (etcd_ != nullptr && !policy_.finished()) SaveState();
    if (snapshots_.wanted()) PublishSnapshot();
  }
  PublishSnapshot();
  discovery.reset();
  if (etcd_ != nullptr) etcd_->Finish();
  server_.board().SetListener(nullptr);
  cancel_errands_.Cancel();
  errands_.JoinAll();
  // The job has ended; output a worker's escaped process still holds
  // must not keep hvdrun waiting.
  const auto drain_until = Clock::now() + kOutputDrain;
  std::set<int> cut_off;
  for (auto& [id, worker] : workers_) {
    if (!worker.relay) continue;
    const auto left =
        std::max(Clock::duration::zero(), drain_until - Clock::now());
    for (int rank : worker.relay->JoinWithin(
             std::chrono::duration_cast<std::chrono::milliseconds>(left))) {
      cut_off.insert(rank);
    }
  }
  for (int rank : cut_off) {
    common::Announce(
        "hvdrun: rank " + std::to_string(rank) + "'s output was still open " +
        std::to_string(kOutputDrain.count()) +
        " s after the job ended (a process it started left its process "
        "group); hvdrun stopped relaying it");
  }
  return exit_code_;
}

std::vector<Event> Driver::ReadSignals(int signals) {
  std::vector<Event> events;
  signalfd_siginfo info;
  bool child = false;
  while (read(signals, &info, sizeof(info)) == sizeof(info)) {
    const int sig = static_cast<int>(info.ssi_signo);
    if (sig == SIGCHLD) {
      child = true;
    } else {
      events.push_back(SignalReceived{sig});
    }
  }
  if (child) {
    // Reap workers by pid only: waitpid(-1) would also take the exit status
    // of a discovery script the discovery thread waits for.
    for (auto it = pids_.begin(); it != pids_.end();) {
      int status = 0;
      if (waitpid(it->first, &status, WNOHANG) == it->first) {
        Running& worker = workers_[it->second];
        close(worker.process.control_fd);
        worker.process.control_fd = -1;
        events.push_back(WorkerExited{it->second, status});
        it = pids_.erase(it);
      } else {
        ++it;
      }
    }
  }
  return events;
}

void Driver::Execute(TimePoint now, const Actions& actions) {
  if (etcd_ != nullptr) ExplainLostEtcd(actions);
  // A failure's detect phase needs the worker's last report, and a new
  // generation ends what its predecessor's workers can still report.
  if (std::any_of(actions.begin(), actions.end(), [](const Action& a) {
        return std::holds_alternative<WorkerFailed>(a) ||
               std::holds_alternative<PublishGeneration>(a);
      })) {
    record_.OnReports(server_.reports().Latest());
  }
  record_.OnActions(now, actions);
  for (const Action& action : actions) {
    std::visit(
        [&](const auto& a) {
          using T = std::decay_t<decltype(a)>;
          if constexpr (std::is_same_v<T, StartWorker>) {
            Start(a);
          } else if constexpr (std::is_same_v<T, SignalWorker>) {
            Signal(a.worker, a.signal);
          } else if constexpr (std::is_same_v<T, PublishGeneration>) {
            RefreshAddresses();
            common::Status published = server_.board().Publish(a.plan);
            if (!published.ok()) {
              spdlog::error("hvdrun: {}", published.message());
            }
            server_.set_generation(a.plan.generation);
            ForgetGlooGenerations(a.plan.generation);
          } else if constexpr (std::is_same_v<T, PushHostsUpdated>) {
            RefreshAddresses();
            notify::HostsUpdated message;
            message.generation = a.generation;
            message.sequence = ++sequence_;
            message.added = a.added;
            message.removed = a.removed;
            for (const std::string& slot : a.slots) {
              auto address = addresses_.find(slot);
              if (address == addresses_.end()) continue;
              errands_.Run([slot, address = address->second, message,
                            secret = launch_.endpoint.secret] {
                common::Status sent = notify::SendHostsUpdated(
                    address, secret, message, std::chrono::milliseconds(2000));
                if (!sent.ok()) {
                  // A worker that just died cannot be told; its exit is
                  // handled.
                  spdlog::info("hvdrun: could not notify slot {}: {}", slot,
                               sent.message());
                }
              });
            }
          } else if constexpr (std::is_same_v<T, PushAbort>) {
            RefreshAddresses();
            notify::Abort abort{a.generation, a.reason};
            for (const std::string& slot : a.slots) {
              auto address = addresses_.find(slot);
              if (address == addresses_.end()) continue;
              errands_.Run([slot, address = address->second, abort,
                            secret = launch_.endpoint.secret] {
                common::Status sent = notify::SendAbort(
                    address, secret, abort, std::chrono::milliseconds(1000));
                if (!sent.ok()) {
                  spdlog::info("hvdrun: abort to slot {}: {}", slot,
                               sent.message());
                }
              });
            }
          } else if constexpr (std::is_same_v<T, ProbeWorker>) {
            RefreshAddresses();
            auto address = addresses_.find(a.slot);
            if (address == addresses_.end()) {
              inbox_.Post(WorkerProbed{a.worker, false, false});
              return;
            }
            errands_.Run([this, worker = a.worker, slot = a.slot,
                          address = address->second,
                          secret = launch_.endpoint.secret] {
              common::Status alive = notify::Ping(
                  address, secret, std::chrono::milliseconds(1500));
              if (!alive.ok()) {
                spdlog::warn("hvdrun: slot {} did not answer: {}", slot,
                             alive.message());
              }
              inbox_.Post(
                  WorkerProbed{worker, alive.ok(),
                               alive.code() == common::Code::kTransport});
            });
          } else if constexpr (std::is_same_v<T, CheckHost>) {
            errands_.Run([this, host = a.host] {
              auto interfaces = RunHostCheck(host, launch_.hvdrun_path, config_,
                                             cancel_errands_.fd());
              HostChecked checked{host, interfaces.ok(), "", {}};
              if (interfaces.ok()) {
                checked.interfaces = std::move(*interfaces);
              } else {
                checked.message = interfaces.status().message();
              }
              inbox_.Post(std::move(checked));
            });
          } else if constexpr (std::is_same_v<T, WorkerFailed>) {
            // Told to the job record above.
          } else if constexpr (std::is_same_v<T, Say>) {
            common::Announce("hvdrun: " + a.line);
          } else if constexpr (std::is_same_v<T, Finish>) {
            exit_code_ = a.exit_code;
            if (a.exit_code != 0 && config_.launcher == Launcher::kSlurm &&
                !a.suspect_hosts.empty()) {
              ExplainThroughSlurm(a.suspect_hosts);
            }
          }
        },
        action);
  }
}

void Driver::ForgetGlooGenerations(int64_t published) {
  if (etcd_ != nullptr) {
    etcd_->GenerationPublished(published);
    return;
  }
  const int64_t kept = FirstGlooGenerationKept(published);
  for (; gloo_forgotten_ < kept; ++gloo_forgotten_) {
    server_.store().DeletePrefix("gloo", GlooGenerationPrefix(gloo_forgotten_));
  }
}

// A job that fails while etcd does not answer: the workers' own lines say
// why each failed; this says what they had in common, before the lines
// that end the job.
void Driver::ExplainLostEtcd(const Actions& actions) {
  const bool failing =
      std::any_of(actions.begin(), actions.end(), [](const Action& a) {
        const Finish* finish = std::get_if<Finish>(&a);
        return finish != nullptr && finish->exit_code != 0;
      });
  if (!failing) return;
  const nlohmann::json lead = etcd_->StatusJson();
  if (lead["leading"].get<bool>()) return;
  common::Announce(
      "hvdrun: etcd at " + config_.rendezvous_endpoint +
      " stopped answering this hvdrun (its lead lapsed " +
      common::DecimalSeconds(std::chrono::milliseconds(
          common::WallClockMs() - lead["since_ms"].get<int64_t>())) +
      " s before the job failed): the workers need etcd to form a "
      "generation");
}

// Slurm knows why a node failed (down, not responding, drained, and the
// reason an admin or slurmctld gave): one line per suspect node. The job
// is over; waiting a few seconds for the answer delays only its end.
void Driver::ExplainThroughSlurm(const std::vector<std::string>& hosts) {
  auto described = QuerySlurmNodeStates(hosts, std::chrono::seconds(5));
  if (!described.ok()) {
    common::Announce("hvdrun: cannot ask Slurm about node " + hosts.front() +
                     ": " + described.status().message());
    return;
  }
  for (const std::string& line : *described) {
    common::Announce("hvdrun: Slurm's view of " + line);
  }
}

void Driver::Start(const StartWorker& action) {
  auto process = LaunchWorker(action.slot, action.worker, launch_, config_);
  if (!process.ok()) {
    inbox_.Post(WorkerLaunchFailed{action.worker, process.status().message()});
    return;
  }
  Running running;
  running.process = *process;
  auto tail = std::make_shared<OutputTail>();
  record_.OnWorkerProcess(action.worker, process->pid, tail);
  auto relay = OutputRelay::Start(
      {{process->stdout_fd, action.slot.layout.rank, false, tail},
       {process->stderr_fd, action.slot.layout.rank, true, tail}},
      RelayOptionsFor(config_, action.slot, action.generation));
  if (relay.ok()) {
    running.relay = std::move(*relay);
  } else {
    spdlog::error("hvdrun: {}", relay.status().message());
  }
  spdlog::info("hvdrun: slot {} (rank {}) is pid {}", SlotNameOf(action.slot),
               action.slot.layout.rank, process->pid);
  pids_[process->pid] = action.worker;
  workers_[action.worker] = std::move(running);
  // Only this process may report for the slot from now on.
  reporting_[SlotNameOf(action.slot)] = action.worker;
  server_.reports().Admit(reporting_);
}

void Driver::Signal(WorkerId worker, int signal) {
  auto it = workers_.find(worker);
  if (it == workers_.end() || it->second.process.control_fd < 0) return;
  unsigned char byte = static_cast<unsigned char>(signal);
  ssize_t ignored = write(it->second.process.control_fd, &byte, 1);
  (void)ignored;
}

void Driver::SaveState() {
  DriverState state = policy_.Save(clock_);
  RefreshAddresses();
  const auto reports = server_.reports().Latest();
  for (SavedWorker& worker : state.workers) {
    auto report = reports.find(worker.slot);
    if (report != reports.end() && report->second.worker == worker.id) {
      worker.pid = report->second.pid;
    }
    // A slot's address is its newest joined worker's.
    auto address = addresses_.find(worker.slot);
    if (worker.joined > 0 && address != addresses_.end()) {
      worker.notify = address->second;
    }
  }
  std::string text = EncodeDriverState(state);
  if (text == saved_state_) return;
  if (text.size() > kMaxDriverStateBytes) {
    if (!state_too_large_) {
      spdlog::warn(
          "hvdrun: the driver's state is {} bytes, over the {} that etcd "
          "keeps for it; etcd keeps the last state that fitted",
          text.size(), kMaxDriverStateBytes);
    }
    state_too_large_ = true;
    return;
  }
  state_too_large_ = false;
  saved_state_ = text;
  etcd_->SaveState(std::move(text));
}

void Driver::RefreshAddresses() {
  for (auto& [slot, address] : server_.board().NotifyAddresses()) {
    addresses_[slot] = address;
  }
}

// --status-bind: "ADDR:PORT", "ADDR", ":PORT", "[V6]:PORT".
common::Result<StatusServerOptions> StatusBind(const std::string& bind) {
  StatusServerOptions options;
  std::string host = bind, port;
  if (!bind.empty() && bind[0] == '[') {
    const size_t close = bind.find(']');
    if (close == std::string::npos) {
      return common::Status::InvalidArgument("--status-bind " + bind +
                                             ": no ']' after the address");
    }
    host = bind.substr(1, close - 1);
    if (close + 1 < bind.size() && bind[close + 1] == ':') {
      port = bind.substr(close + 2);
    }
  } else if (std::count(bind.begin(), bind.end(), ':') == 1) {
    host = bind.substr(0, bind.find(':'));
    port = bind.substr(bind.find(':') + 1);
  }
  if (!host.empty()) options.bind_host = host;
  if (!port.empty()) {
    auto number = common::ParseInt(port, "--status-bind port", 0, 65535);
    if (!number.ok()) return number.status();
    options.port = static_cast<int>(*number);
  }
  return options;
}

int Fail(const std::string& message) {
  common::Announce("hvdrun: " + message);
  return 1;
}

// Runs the driver beside the status server (--status-bind, not none).
int RunWithStatusServer(const LaunchConfig& config, Driver& driver,
                        int signals);

}  // namespace

void BlockDriverSignals() {
  sigset_t set = DriverSignals();
  sigprocmask(SIG_BLOCK, &set, nullptr);
  // A guard that exits between two control bytes, or a closed stdout, must
  // be an EPIPE, not the end of hvdrun. Guards restore the default for the
  // worker.
  signal(SIGPIPE, SIG_IGN);
}

int RunJob(const LaunchConfig& given) {
  LaunchConfig config = given;
  sigset_t handled = DriverSignals();
  int signals = signalfd(-1, &handled, SFD_CLOEXEC | SFD_NONBLOCK);
  if (signals < 0) return Fail("signalfd failed");
  struct CloseOnReturn {
    int fd;
    ~CloseOnReturn() { close(fd); }
  } close_signals{signals};

  common::SecretFileRules secret_rules;
  secret_rules.flag = "--job-secret-file";
  secret_rules.min_chars = 32;
  secret_rules.private_to_user = true;
  auto secret =
      config.job_secret_file.empty()
          ? common::NewJobSecret()
          : common::SecretFromFile(config.job_secret_file, secret_rules);
  if (!secret.ok()) return Fail(secret.status().message());
  std::unique_ptr<EtcdJob> etcd;
  if (config.rendezvous_backend == RendezvousBackend::kEtcd) {
    if (config.job_id.empty()) {
      auto id = common::NewJobSecret();
      if (!id.ok()) return Fail(id.status().message());
      config.job_id = "hvd-" + id->substr(0, 12);
    }
    auto claimed = EtcdJob::Claim(config, *secret, config.start_timeout);
    if (!claimed.ok()) return Fail(claimed.status().message());
    etcd = std::move(*claimed);
    common::Announce("hvdrun: leads job '" + config.job_id + "' in etcd at " +
                     config.rendezvous_endpoint + " (keys under " +
                     etcd->prefix() + ")");
  }
  // The first discovery run must succeed: there is nothing to fall back on
  // yet. Hosts come and go: the server binds where any listed host can
  // reach it, unless every host given up front is this machine.
  std::vector<HostSlots> hosts = config.hosts;
  if (config.elastic && !config.discovery_script.empty()) {
    auto first = RunDiscovery(config.discovery_script, config.slots_per_host,
                              config.discovery_timeout);
    if (!first.ok()) return Fail(first.status().message());
    hosts = *first;
  }
  auto address = ChooseServerAddress(hosts, config.network_interface);
  if (!address.ok()) return Fail(address.status().message());
  rendezvous::ServerOptions options;
  options.bind_host = *address;
  options.port = config.rendezvous_port;
  options.secret = *secret;
  // Every worker keeps a connection and may hold a long-poll.
  const int workers = config.max_np > 0 ? config.max_np : config.num_proc;
  options.threads = std::max<size_t>(config.elastic ? 256 : 128,
                                     2 * static_cast<size_t>(workers) + 16);
  auto server = rendezvous::RendezvousServer::Start(options);
  if (!server.ok()) return Fail(server.status().message());
  auto launch =
      MakeLaunchContext(DriverEndpoint{*address, (*server)->port(), *secret});
  if (!launch.ok()) return Fail(launch.status().message());
  spdlog::info("hvdrun: rendezvous server on {}:{}", *address,
               (*server)->port());
  Driver driver(config, **server, *launch, hosts, etcd.get());

  int code = 0;
  if (config.status_bind == kNoStatusServer) {
    code = driver.Run(signals);
  } else {
    code = RunWithStatusServer(config, driver, signals);
  }
  (*server)->Stop();
  return code;
}

namespace {

int RunWithStatusServer(const LaunchConfig& config, Driver& driver,
                        int signals) {
  auto bind = StatusBind(config.status_bind);
  if (!bind.ok()) return Fail(bind.status().message());
  // A second secret, unrelated to the job's.
  auto token = config.status_token_file.empty()
                   ? common::NewJobSecret()
                   : StatusTokenFrom(config.status_token_file);
  if (!token.ok()) return Fail(token.status().message());
  bind->token = *token;
  // Before the driver's loop runs, a reader sees a job starting.
  auto starting = std::make_shared<const nlohmann::json>(
      nlohmann::json{{"job", {{"state", "starting"}}},
                     {"hosts", nlohmann::json::array()},
                     {"ranks", nlohmann::json::array()},
                     {"generations", nlohmann::json::array()},
                     {"failures", nlohmann::json::array()},
                     {"recoveries", nlohmann::json::array()},
                     {"messages", nlohmann::json::array()}});
  auto status_server = StatusServer::Start(*bind, [&driver, starting] {
    using namespace std::chrono_literals;
    auto snapshot = driver.snapshots().Get(1000ms, 1000ms);
    return snapshot ? snapshot : starting;
  });
  if (!status_server.ok()) return Fail(status_server.status().message());
  const std::string url = (*status_server)->url();
  common::Announce("hvdrun: status page: " + url);
  auto job_file = WriteJobFile({getpid(), url, FactsOf(config).command,
                                common::WallClockMs(), OwnProcessStart()});
  if (!job_file.ok()) {
    spdlog::warn("hvdrun: `hvdrun status` will not find this job: {}",
                 job_file.status().message());
  }

  int code = driver.Run(signals);
  if (job_file.ok()) RemoveJobFile(*job_file);
  (*status_server)->Stop();
  return code;
}

}  // namespace

}  // namespace hvd::launcher
