#include "driver/driver_loop.h"

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
#include "hvd/common/worker_key.h"
#include "hvd/notify/client.h"
#include "hvd/rendezvous/protocol.h"
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

int Driver::Run(int signals) {
  server_.board().SetListener([this] {
    board_changed_ = true;
    inbox_.Wake();
  });
  // A worker's first report brings its pid for the state in etcd.
  if (etcd_ != nullptr) {
    server_.reports().SetListener([this] {
      if (state_lacks_pid_) inbox_.Wake();
    });
  }
  if (etcd_ != nullptr) {
    const std::string job = "job '" + config_.job_id + "'";
    etcd_->Run([this, job](const LeadChange& change) {
      if (!change.holder.empty()) {
        deposed_ = true;
        inbox_.Post(LeadTaken{change.reason + " (" + change.holder + ")"});
      } else if (deposed_) {
        // Its stop is under way: a lead won back meanwhile (the job
        // ended under the other hvdrun, say) is none of its business.
      } else if (change.leading) {
        common::Announce("hvdrun: leads " + job + " in etcd again");
        regained_ = true;
        inbox_.Wake();
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
    if (resumed_) {
      Resume(now);
    } else {
      Execute(now, policy_.Start(now));
    }
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
      if (std::holds_alternative<LeadTaken>(event)) {
        ReleaseAdoptable();
        withheld_.clear();  // the other hvdrun's to do now
      }
      record_.OnEvent(now, event);
      Execute(now, policy_.OnEvent(now, event));
      if (policy_.finished()) break;
    }
    if (regained_.exchange(false) && !policy_.finished() && !deposed_) {
      Replay();
    }
    if (etcd_ != nullptr && !policy_.finished()) SaveState();
    if (snapshots_.wanted()) PublishSnapshot();
  }
  PublishSnapshot();
  discovery.reset();
  if (etcd_ != nullptr) etcd_->Finish();
  server_.board().SetListener(nullptr);
  server_.reports().SetListener(nullptr);
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
        // ssh's 255: the link may be all that was lost, the worker
        // waiting in its guard (the policy decides).
        if (worker.process.adoptable && WIFEXITED(status) &&
            WEXITSTATUS(status) == 255) {
          events.push_back(WorkerLinkLost{it->second, status});
        } else {
          events.push_back(WorkerExited{it->second, status});
        }
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
  // Not sure it leads (etcd out of reach past the lease): another hvdrun
  // may lead now, so no worker starts and no word goes to the workers
  // until this one leads again (Replay), or learns that another does
  // (LeadTaken). Its own board still publishes: workers that reach etcd
  // find the leading hvdrun's server there, and those that cannot need
  // etcd to meet anyway, which bounds their wait (the elastic timeout).
  const bool sure = etcd_ == nullptr || etcd_->leading();
  for (const Action& action : actions) {
    if (!sure && Withhold(action)) continue;
    Carry(action);
  }
}

void Driver::Carry(const Action& action) {
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
                          key = NotifyKey(slot)] {
              common::Status sent = notify::SendHostsUpdated(
                  address, key, message, std::chrono::milliseconds(2000));
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
                          key = NotifyKey(slot)] {
              common::Status sent = notify::SendAbort(
                  address, key, abort, std::chrono::milliseconds(1000));
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
          // The policy waits for an answer: a probe that threw failed.
          auto unanswered = [this, worker = a.worker](const common::Status&) {
            inbox_.Post(WorkerProbed{worker, false, false});
          };
          errands_.Run(unanswered, [this, worker = a.worker, slot = a.slot,
                                    address = address->second,
                                    key = common::WorkerKey(
                                        launch_.endpoint.secret,
                                        {a.worker, a.slot})] {
            common::Status alive =
                notify::Ping(address, key, std::chrono::milliseconds(1500));
            if (!alive.ok()) {
              spdlog::warn("hvdrun: slot {} did not answer: {}", slot,
                           alive.message());
            }
            inbox_.Post(WorkerProbed{worker, alive.ok(),
                                     alive.code() == common::Code::kTransport});
          });
        } else if constexpr (std::is_same_v<T, ReattachWorker>) {
          Reattach(a);
        } else if constexpr (std::is_same_v<T, CheckHost>) {
          auto unchecked = [this, host = a.host](const common::Status& why) {
            inbox_.Post(HostChecked{host, false, why.message(), {}});
          };
          errands_.Run(unchecked, [this, host = a.host] {
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

bool Driver::Withhold(const Action& action) {
  std::string what;
  if (auto* start = std::get_if<StartWorker>(&action)) {
    what = "the start of slot " + SlotNameOf(start->slot);
  } else if (auto* reattach = std::get_if<ReattachWorker>(&action)) {
    what = "the reattaching of slot " + SlotNameOf(reattach->slot);
  } else if (std::holds_alternative<PushAbort>(action) ||
             std::holds_alternative<PushHostsUpdated>(action)) {
    what = "a message to the workers";
  } else {
    return false;
  }
  withheld_.push_back(action);
  common::Announce("hvdrun: holds back " + what +
                   " while it is not sure it leads job '" + config_.job_id +
                   "' (etcd out of reach); it carries it out once it leads "
                   "again");
  return true;
}

void Driver::Replay() {
  std::vector<Action> withheld;
  withheld.swap(withheld_);
  for (const Action& action : withheld) {
    // A start or reattach the policy has given up on meanwhile stays
    // undone.
    auto* start = std::get_if<StartWorker>(&action);
    if (start != nullptr && !policy_.Alive(start->worker)) continue;
    auto* reattach = std::get_if<ReattachWorker>(&action);
    if (reattach != nullptr && !policy_.Alive(reattach->worker)) continue;
    Carry(action);
  }
}

void Driver::ForgetGlooGenerations(int64_t published) {
  if (etcd_ != nullptr) {
    etcd_->GenerationPublished(published);
    return;
  }
  const int64_t kept = FirstGlooGenerationKept(published);
  for (; gloo_forgotten_ < kept; ++gloo_forgotten_) {
    server_.store().DeletePrefix(
        rendezvous::protocol::kGlooScope,
        rendezvous::protocol::GlooGenerationPrefix(gloo_forgotten_));
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
  Keep(action.worker, action.slot, action.generation, *process, "is pid");
}

void Driver::Reattach(const ReattachWorker& action) {
  auto process = AdoptWorker(action.slot, action.worker, launch_, config_,
                             action.connect_within);
  if (!process.ok()) {
    inbox_.Post(
        WorkerLaunchFailed{action.worker, process.status().message(), true});
    return;
  }
  Keep(action.worker, action.slot, action.generation, *process,
       "is reattached through pid");
}

void Driver::Keep(WorkerId id, const SlotAssignment& slot, int64_t generation,
                  const WorkerProcess& process, const char* how) {
  Running running;
  running.process = process;
  auto tail = std::make_shared<OutputTail>();
  record_.OnWorkerProcess(id, process.pid, tail);
  auto relay =
      OutputRelay::Start({{process.stdout_fd, slot.layout.rank, false, tail},
                          {process.stderr_fd, slot.layout.rank, true, tail}},
                         RelayOptionsFor(config_, slot, generation));
  if (relay.ok()) {
    running.relay = std::move(*relay);
  } else {
    spdlog::error("hvdrun: {}", relay.status().message());
  }
  spdlog::info("hvdrun: slot {} (rank {}) {} {}", SlotNameOf(slot),
               slot.layout.rank, how, process.pid);
  pids_[process.pid] = id;
  workers_[id] = std::move(running);
  // Only this process may report for the slot from now on.
  reporting_[SlotNameOf(slot)] = id;
  server_.reports().Admit(reporting_);
}

void Driver::Signal(WorkerId worker, int signal) {
  auto it = workers_.find(worker);
  if (it == workers_.end() || it->second.process.control_fd < 0) return;
  unsigned char byte = static_cast<unsigned char>(signal);
  ssize_t ignored = write(it->second.process.control_fd, &byte, 1);
  (void)ignored;
}

std::string Driver::NotifyKey(const std::string& slot) const {
  // The newest process of the slot: an address an older one left behind
  // refuses the push (401), as that process is no longer the job's.
  auto owner = reporting_.find(slot);
  return common::WorkerKey(
      launch_.endpoint.secret,
      {owner == reporting_.end() ? 0 : owner->second, slot});
}

void Driver::RefreshAddresses() {
  for (auto& [slot, address] : server_.board().NotifyAddresses()) {
    addresses_[slot] = address;
  }
}
}  // namespace hvd::launcher
