#include "elastic_driver.h"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "assignment.h"
#include "discovery.h"
#include "host_address.h"
#include "host_table.h"
#include "hvd/common/hmac.h"
#include "hvd/notify/client.h"
#include "hvd/rendezvous/server.h"
#include "output_relay.h"
#include "worker_launch.h"

namespace hvd::launcher {

using common::Result;
using common::Status;
using Clock = std::chrono::steady_clock;
using rendezvous::GenerationPlan;
using rendezvous::SlotName;

namespace {

// Runs the discovery script every interval on its own thread (a slow script
// must not hold up signals or worker exits) and wakes the driver through an
// eventfd when a result is ready. Failures keep the last good result.
class DiscoveryLoop {
 public:
  DiscoveryLoop(const LaunchConfig& config, int wake_fd)
      : config_(config), wake_fd_(wake_fd) {
    thread_ = std::thread([this] { Run(); });
  }
  ~DiscoveryLoop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    stopped_.notify_all();
    thread_.join();
  }
  // The newest result since the last call, if any.
  std::optional<std::vector<HostSlots>> Take() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(latest_, std::nullopt);
  }

 private:
  void Run() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      if (stopped_.wait_for(lock, config_.discovery_interval,
                            [&] { return stop_; })) {
        return;
      }
      lock.unlock();
      auto hosts =
          RunDiscovery(config_.discovery_script, config_.slots_per_host,
                       config_.discovery_timeout);
      lock.lock();
      if (!hosts.ok()) {
        spdlog::error("hvdrun: {}; keeping the last known hosts",
                      hosts.status().message());
        continue;
      }
      latest_ = std::move(*hosts);
      uint64_t one = 1;
      ssize_t ignored = write(wake_fd_, &one, sizeof(one));
      (void)ignored;
    }
  }

  const LaunchConfig& config_;
  const int wake_fd_;
  std::mutex mu_;
  std::condition_variable stopped_;
  bool stop_ = false;
  std::optional<std::vector<HostSlots>> latest_;
  std::thread thread_;
};

struct Worker {
  WorkerProcess process;
  std::string slot;
  int start_rank = 0;
  bool running = true;
  // Stopped by the driver because its host failed: its exit is no failure
  // of its own.
  bool stopped = false;
  std::unique_ptr<OutputRelay> relay;
};

class ElasticDriver {
 public:
  ElasticDriver(const LaunchConfig& config,
                rendezvous::RendezvousServer& server, LaunchContext launch)
      : config_(config),
        server_(server),
        launch_(std::move(launch)),
        table_(config.cooldown_range
                   ? std::optional<CooldownRange>(CooldownRange{
                         std::chrono::seconds(config.cooldown_range->first),
                         std::chrono::seconds(config.cooldown_range->second)})
                   : std::nullopt) {}

  // `hosts`: the first discovery result (or the -H list).
  int Run(int signals, const std::vector<HostSlots>& hosts);

 private:
  // The slots a generation formed now would have, by SlotName.
  std::vector<SlotAssignment> WouldBeSlots(Clock::time_point now) const;
  // Forms and publishes the next generation if enough slots are usable;
  // otherwise starts (or keeps) waiting. Returns a failure message to end
  // the job with, or nothing.
  // After a failure every rank syncs from rank 0: ranks may have restored
  // different commits (one finished the last allreduce, another did not).
  std::optional<std::string> Reassign(const std::string& why,
                                      bool after_failure = false);
  void StartWorker(const SlotAssignment& slot);
  void Notify(const std::map<std::string, std::string>& addresses,
              const std::vector<std::string>& added,
              const std::vector<std::string>& removed);
  void OnExit(pid_t pid, int status);
  void SignalAll(int sig);
  // Whether the slots a generation formed now would have differ from the
  // current generation's (slot or rank).
  bool MembershipChanged() const;
  int running() const;

  const LaunchConfig& config_;
  rendezvous::RendezvousServer& server_;
  const LaunchContext launch_;
  HostTable table_;
  std::map<pid_t, Worker> workers_;
  GenerationPlan plan_;                          // newest published
  std::map<std::string, SlotAssignment> slots_;  // of plan_, by SlotName
  // Slots of the newest generation every slot checked into: the ranks that
  // trained last. The job succeeds when all of them exited 0, even if a
  // newer generation was still forming (its newcomers are then stopped).
  std::set<std::string> trained_;
  std::set<std::string> finished_;  // slots whose worker exited 0
  int resets_ = 0;
  int64_t sequence_ = 0;
  // Addresses to notify once every new slot of plan_ has checked in.
  std::optional<std::map<std::string, std::string>> notify_when_ready_;
  std::vector<std::string> added_, removed_;
  std::optional<Clock::time_point> waiting_since_;  // too few slots
  Clock::time_point checked_cooldowns_ = Clock::now();
  Clock::time_point plan_published_;
  // Slots of plan_ must check in by then. After a failure the survivors are
  // already resetting, so a slot that stays silent (hung) for the start
  // timeout is failed; after a host change the others first finish their
  // step, which may take long: the elastic timeout.
  std::chrono::milliseconds checkin_budget_{0};
  std::string failure_;
  int exit_code_ = 0;
  // Abort pushes run off the main loop (a hung worker's server answers
  // late); joined at the end.
  std::vector<std::thread> senders_;
  bool stopping_ = false;
};

std::vector<SlotAssignment> ElasticDriver::WouldBeSlots(
    Clock::time_point now) const {
  std::vector<HostSlots> usable = table_.Usable(now);
  int total = 0;
  for (const HostSlots& host : usable) total += host.slots;
  if (config_.max_np > 0) total = std::min(total, config_.max_np);
  if (total == 0) return {};
  auto ranks = AssignRanks(usable, total);
  return ranks.ok() ? *ranks : std::vector<SlotAssignment>{};
}

std::optional<std::string> ElasticDriver::Reassign(const std::string& why,
                                                   bool after_failure) {
  const auto now = Clock::now();
  std::vector<SlotAssignment> slots = WouldBeSlots(now);
  const int needed = plan_.generation == 0 ? config_.num_proc : config_.min_np;
  if (static_cast<int>(slots.size()) < needed) {
    if (!waiting_since_) {
      waiting_since_ = now;
      spdlog::warn(
          "hvdrun: {} usable slots, {} needed; waiting up to {} s for "
          "more ({})",
          slots.size(), needed, config_.elastic_timeout.count(), why);
    }
    return std::nullopt;
  }
  waiting_since_.reset();
  if (plan_.generation > 0) {
    bool survivor = std::any_of(slots.begin(), slots.end(), [&](auto& slot) {
      return slots_.count(SlotName(slot.host, slot.local_rank)) != 0;
    });
    if (!survivor) {
      return "no slot of generation " + std::to_string(plan_.generation) +
             " is left to carry the committed state; the job cannot go on";
    }
    if (config_.reset_limit && resets_ >= *config_.reset_limit) {
      return "reset limit of " + std::to_string(*config_.reset_limit) +
             " exceeded (" + why + ")";
    }
    ++resets_;
  }
  GenerationPlan plan;
  plan.generation = plan_.generation + 1;
  std::map<std::string, SlotAssignment> by_name;
  std::set<std::string> old_hosts, new_hosts;
  for (const auto& [name, slot] : slots_) old_hosts.insert(slot.host);
  bool newcomer = plan_.generation == 0 || after_failure;
  for (const SlotAssignment& slot : slots) {
    std::string name = SlotName(slot.host, slot.local_rank);
    by_name[name] = slot;
    new_hosts.insert(slot.host);
    if (!slots_.count(name)) newcomer = true;
  }
  for (const auto& [name, slot] : by_name) {
    rendezvous::WorkerAssignment a;
    a.generation = plan.generation;
    a.rank = slot.rank;
    a.size = slot.size;
    a.local_rank = slot.local_rank;
    a.local_size = slot.local_size;
    a.cross_rank = slot.cross_rank;
    a.cross_size = slot.cross_size;
    a.sync = newcomer;
    plan.slots[name] = a;
  }
  added_.clear();
  removed_.clear();
  for (const auto& host : new_hosts) {
    if (!old_hosts.count(host)) added_.push_back(host);
  }
  for (const auto& host : old_hosts) {
    if (!new_hosts.count(host)) removed_.push_back(host);
  }
  // Captured before publishing: the board forgets removed slots' addresses,
  // and those workers must hear that they are out.
  auto addresses = server_.board().NotifyAddresses();
  plan_ = plan;
  slots_ = by_name;
  Status published = server_.board().Publish(plan);
  if (!published.ok()) return published.message();
  server_.set_generation(plan.generation);
  plan_published_ = now;
  checkin_budget_ = after_failure
                        ? std::chrono::milliseconds(config_.start_timeout)
                        : std::chrono::milliseconds(config_.elastic_timeout);
  std::string summary;
  for (const SlotAssignment& slot : slots) {
    summary += (summary.empty() ? "" : ", ") + std::to_string(slot.rank) + "=" +
               SlotName(slot.host, slot.local_rank);
  }
  std::fprintf(stderr, "hvdrun: generation %lld (%s): %zu workers: %s\n",
               static_cast<long long>(plan.generation), why.c_str(),
               slots.size(), summary.c_str());
  std::set<std::string> live;
  for (const auto& [pid, worker] : workers_) {
    if (worker.running) live.insert(worker.slot);
  }
  for (const SlotAssignment& slot : slots) {
    if (!live.count(SlotName(slot.host, slot.local_rank))) StartWorker(slot);
  }
  // Running workers hear of a host change once every newcomer has checked
  // in (warm joiners); with no newcomer, at once. After a failure they are
  // resetting already, and a hung one would only hold the driver up.
  notify_when_ready_.reset();
  if (!addresses.empty() && !after_failure) notify_when_ready_ = addresses;
  return std::nullopt;
}

void ElasticDriver::StartWorker(const SlotAssignment& slot) {
  auto worker = LaunchWorker(slot, launch_, config_);
  if (!worker.ok()) {
    spdlog::error("hvdrun: {}", worker.status().message());
    table_.Blacklist(slot.host, Clock::now());
    return;
  }
  Worker entry;
  entry.slot = SlotName(slot.host, slot.local_rank);
  entry.start_rank = slot.rank;
  entry.process = *worker;
  auto relay = OutputRelay::Start({{worker->stdout_fd, slot.rank, false},
                                   {worker->stderr_fd, slot.rank, true}},
                                  config_.output_dir);
  if (relay.ok()) entry.relay = std::move(*relay);
  spdlog::info("hvdrun: slot {} (rank {}) is pid {}", entry.slot, slot.rank,
               worker->pid);
  workers_.emplace(worker->pid, std::move(entry));
}

void ElasticDriver::Notify(const std::map<std::string, std::string>& addresses,
                           const std::vector<std::string>& added,
                           const std::vector<std::string>& removed) {
  notify::HostsUpdated message;
  message.generation = plan_.generation;
  message.sequence = ++sequence_;
  message.added = added;
  message.removed = removed;
  for (const auto& [slot, address] : addresses) {
    Status sent =
        notify::SendHostsUpdated(address, launch_.endpoint.secret, message,
                                 std::chrono::milliseconds(2000));
    if (!sent.ok()) {
      // A worker that just died cannot be told; its exit is handled.
      spdlog::info("hvdrun: could not notify slot {}: {}", slot,
                   sent.message());
    }
  }
}

void ElasticDriver::SignalAll(int sig) {
  unsigned char byte = static_cast<unsigned char>(sig);
  for (auto& [pid, worker] : workers_) {
    if (worker.running && worker.process.control_fd >= 0) {
      ssize_t ignored = write(worker.process.control_fd, &byte, 1);
      (void)ignored;
    }
  }
}

bool ElasticDriver::MembershipChanged() const {
  std::set<std::string> would, current;
  for (const auto& slot : WouldBeSlots(Clock::now())) {
    would.insert(SlotName(slot.host, slot.local_rank) + "#" +
                 std::to_string(slot.rank));
  }
  for (const auto& [name, slot] : slots_) {
    current.insert(name + "#" + std::to_string(slot.rank));
  }
  return would != current;
}

int ElasticDriver::running() const {
  return static_cast<int>(
      std::count_if(workers_.begin(), workers_.end(),
                    [](const auto& entry) { return entry.second.running; }));
}

void ElasticDriver::OnExit(pid_t pid, int status) {
  auto it = workers_.find(pid);
  if (it == workers_.end()) return;
  Worker& worker = it->second;
  worker.running = false;
  close(worker.process.control_fd);
  worker.process.control_fd = -1;
  const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  const bool current = slots_.count(worker.slot) != 0;
  std::fprintf(stderr, "hvdrun: slot %s (started as rank %d) %s%s\n",
               worker.slot.c_str(), worker.start_rank,
               DescribeExit(status).c_str(),
               current ? "" : " (not in the current generation)");
  if (stopping_ || worker.stopped) return;
  if (ok) {
    finished_.insert(worker.slot);
    return;
  }
  if (!current) return;
  const std::string host = worker.slot.substr(0, worker.slot.rfind(':'));
  table_.Blacklist(host, Clock::now());
  // The host's other workers go too: it is out of the job.
  unsigned char term = SIGTERM;
  for (auto& [other_pid, other] : workers_) {
    if (other.running && other.slot.rfind(host + ":", 0) == 0 &&
        other.process.control_fd >= 0) {
      ssize_t ignored = write(other.process.control_fd, &term, 1);
      (void)ignored;
      other.stopped = true;
    }
  }
  failure_ = "slot " + worker.slot + " (rank " +
             std::to_string(plan_.slots[worker.slot].rank) + ") " +
             DescribeExit(status);
  exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  // Survivors blocked on a hung peer would otherwise wait out the Gloo
  // timeout; the ones blocked on the dead worker fail by themselves.
  notify::Abort abort{plan_.generation,
                      "slot " + worker.slot + " " + DescribeExit(status)};
  auto addresses = server_.board().NotifyAddresses();
  addresses.erase(worker.slot);
  // One thread per worker: a hung worker's server answers only at the
  // timeout and must not delay the others' abort.
  for (const auto& [slot, address] : addresses) {
    senders_.emplace_back([slot = slot, address = address, abort,
                           secret = launch_.endpoint.secret] {
      Status sent = notify::SendAbort(address, secret, abort,
                                      std::chrono::milliseconds(1000));
      if (!sent.ok()) {
        spdlog::info("hvdrun: abort to slot {}: {}", slot, sent.message());
      }
    });
  }
  auto fatal = Reassign(
      "slot " + worker.slot + " failed; host " + host + " blacklisted", true);
  if (fatal) {
    failure_ = *fatal + "; last failure: " + failure_;
    stopping_ = true;
  }
}

int ElasticDriver::Run(int signals, const std::vector<HostSlots>& hosts) {
  int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  table_.Update(hosts);
  std::unique_ptr<DiscoveryLoop> discovery;
  if (!config_.discovery_script.empty()) {
    discovery = std::make_unique<DiscoveryLoop>(config_, wake);
  }
  auto fatal = Reassign("start");
  if (fatal) {
    failure_ = *fatal;
    stopping_ = true;
    exit_code_ = 1;
  }
  std::optional<Clock::time_point> kill_at;
  bool success = false;
  while (true) {
    const auto now = Clock::now();
    if (stopping_ && !kill_at) {
      SignalAll(SIGTERM);
      kill_at = now + config_.stop_grace;
    }
    if (stopping_ && running() == 0) break;
    if (server_.board().Missing().empty() && !slots_.empty()) {
      trained_.clear();
      for (const auto& [name, slot] : slots_) trained_.insert(name);
    }
    if (!stopping_ && !trained_.empty() &&
        std::includes(finished_.begin(), finished_.end(), trained_.begin(),
                      trained_.end())) {
      success = true;
      stopping_ = true;  // stops workers of removed slots still around
      continue;
    }
    if (!stopping_ && waiting_since_ &&
        now - *waiting_since_ > config_.elastic_timeout) {
      auto blacklisted = table_.Blacklisted(now);
      failure_ =
          "not enough slots for " +
          std::to_string(config_.elastic_timeout.count()) + " s (--min-np " +
          std::to_string(config_.min_np) + ")" +
          (blacklisted.empty()
               ? std::string()
               : "; blacklisted hosts: " + std::to_string(blacklisted.size())) +
          (failure_.empty() ? "" : "; last failure: " + failure_);
      if (exit_code_ == 0) exit_code_ = 1;
      stopping_ = true;
      continue;
    }
    if (!stopping_ && notify_when_ready_) {
      // Ready when nothing but the running workers' slots is missing.
      std::set<std::string> waiting_on;
      for (const std::string& slot : server_.board().Missing()) {
        waiting_on.insert(slot);
      }
      bool newcomers_in = std::all_of(waiting_on.begin(), waiting_on.end(),
                                      [&](const std::string& slot) {
                                        return notify_when_ready_->count(slot);
                                      });
      if (newcomers_in) {
        Notify(*notify_when_ready_, added_, removed_);
        notify_when_ready_.reset();
      }
    }
    // Ranks whose world broke without the driver seeing an exit (a hung
    // peer and the Gloo timeout): a moment for a pending exit to arrive
    // first, then a new generation; a hung slot fails its check-in.
    if (!stopping_ && !server_.board().ResetRequests().empty() &&
        server_.board().OldestResetRequestAge() >
            std::chrono::milliseconds(250)) {
      auto fatal_reset = Reassign("ranks reset without a known failure", true);
      if (fatal_reset) {
        failure_ = *fatal_reset;
        exit_code_ = 1;
        stopping_ = true;
      }
      continue;
    }
    if (!stopping_ && !server_.board().Missing().empty() &&
        now - plan_published_ > checkin_budget_) {
      // Slots that never checked in count as failed.
      for (const std::string& slot : server_.board().Missing()) {
        for (auto& [pid, worker] : workers_) {
          if (worker.running && worker.slot == slot) {
            unsigned char kill_byte = SIGKILL;
            ssize_t ignored = write(worker.process.control_fd, &kill_byte, 1);
            (void)ignored;
          }
        }
        table_.Blacklist(slot.substr(0, slot.rfind(':')), now);
      }
      auto fatal_missing =
          Reassign("slots did not check in within " +
                       std::to_string(checkin_budget_.count() / 1000) + " s",
                   true);
      if (fatal_missing) {
        failure_ = *fatal_missing;
        exit_code_ = 1;
        stopping_ = true;
      }
      continue;
    }

    int timeout_ms = 100;
    if (kill_at) {
      timeout_ms = static_cast<int>(std::clamp<int64_t>(
          std::chrono::duration_cast<std::chrono::milliseconds>(*kill_at - now)
              .count(),
          0, 100));
      if (now >= *kill_at) {
        SignalAll(SIGKILL);
        kill_at = now + std::chrono::hours(24);
      }
    }
    pollfd fds[2] = {{signals, POLLIN, 0}, {wake, POLLIN, 0}};
    if (poll(fds, 2, timeout_ms) < 0) continue;
    // A host whose blacklisting just ended counts as a discovery change.
    auto cooldown_end = table_.NextCooldownEnd(checked_cooldowns_);
    bool cooled_down = cooldown_end && *cooldown_end <= Clock::now();
    if (cooled_down) checked_cooldowns_ = Clock::now();
    if ((fds[1].revents & POLLIN) || cooled_down) {
      uint64_t count;
      if (fds[1].revents & POLLIN) {
        ssize_t ignored = read(wake, &count, sizeof(count));
        (void)ignored;
      }
      if (auto hosts = discovery ? discovery->Take() : std::nullopt) {
        table_.Update(*hosts);
      }
      if (!stopping_ && (MembershipChanged() || waiting_since_)) {
        auto fatal_change = Reassign("hosts changed");
        if (fatal_change) {
          failure_ = *fatal_change;
          exit_code_ = 1;
          stopping_ = true;
        }
      }
    }
    if (!(fds[0].revents & POLLIN)) continue;
    signalfd_siginfo info;
    if (read(signals, &info, sizeof(info)) != sizeof(info)) continue;
    const int sig = static_cast<int>(info.ssi_signo);
    if (sig != SIGCHLD) {
      if (stopping_) {
        SignalAll(SIGKILL);
        continue;
      }
      std::fprintf(stderr, "hvdrun: received %s; stopping the workers\n",
                   strsignal(sig));
      failure_ = std::string("stopped by ") + strsignal(sig);
      exit_code_ = 128 + sig;
      SignalAll(sig);
      stopping_ = true;
      kill_at = Clock::now() + config_.stop_grace;
      continue;
    }
    // Reap workers by pid only: waitpid(-1) would also take the exit
    // status of a discovery script running on the discovery thread.
    std::vector<pid_t> running_pids;
    for (const auto& [pid, worker] : workers_) {
      if (worker.running) running_pids.push_back(pid);
    }
    for (pid_t pid : running_pids) {
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) == pid) OnExit(pid, status);
    }
  }
  discovery.reset();
  for (std::thread& sender : senders_) sender.join();
  close(wake);
  for (auto& [pid, worker] : workers_) {
    if (worker.relay) worker.relay->Join();
  }
  if (success) {
    std::fprintf(stderr,
                 "hvdrun: every rank of the last generation finished; job "
                 "succeeded after %d resets\n",
                 resets_);
    return 0;
  }
  if (exit_code_ == 0) exit_code_ = 1;
  std::fprintf(stderr, "hvdrun: %s; job failed (exit code %d)\n",
               failure_.c_str(), exit_code_);
  return exit_code_;
}

}  // namespace

int RunElasticJob(const LaunchConfig& config) {
  sigset_t handled;
  sigemptyset(&handled);
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&handled, sig);
  int signals = signalfd(-1, &handled, SFD_CLOEXEC);
  if (signals < 0) {
    spdlog::error("hvdrun: signalfd failed");
    return 1;
  }
  auto secret = common::NewJobSecret();
  // Hosts come and go: bind where any listed host can reach, unless every
  // host given up front is this machine. The first discovery run must
  // succeed: there is nothing to fall back on yet.
  std::vector<HostSlots> known = config.hosts;
  if (!config.discovery_script.empty()) {
    auto first = RunDiscovery(config.discovery_script, config.slots_per_host,
                              config.discovery_timeout);
    if (!first.ok()) {
      std::fprintf(stderr, "hvdrun: %s\n", first.status().message().c_str());
      close(signals);
      return 1;
    }
    known = *first;
  }
  auto address = ChooseServerAddress(known, config.network_interface);
  if (!secret.ok() || !address.ok()) {
    std::fprintf(
        stderr, "hvdrun: %s\n",
        (!secret.ok() ? secret.status() : address.status()).message().c_str());
    close(signals);
    return 1;
  }
  rendezvous::ServerOptions options;
  options.bind_host = *address;
  options.secret = *secret;
  options.threads = 256;
  auto server = rendezvous::RendezvousServer::Start(options);
  if (!server.ok()) {
    std::fprintf(stderr, "hvdrun: %s\n", server.status().message().c_str());
    close(signals);
    return 1;
  }
  auto launch =
      MakeLaunchContext(DriverEndpoint{*address, (*server)->port(), *secret});
  if (!launch.ok()) {
    std::fprintf(stderr, "hvdrun: %s\n", launch.status().message().c_str());
    close(signals);
    return 1;
  }
  ElasticDriver driver(config, **server, *launch);
  int code = driver.Run(signals, known);
  (*server)->Stop();
  close(signals);
  return code;
}

}  // namespace hvd::launcher
