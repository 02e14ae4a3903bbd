// Driver: one job's driver loop, JobPolicy's I/O shell (driver.h says
// what it does for a job). Internal to driver/: RunJob (driver.cc) makes
// one and runs it. Its loop, launches and pushes are in driver_loop.cc;
// what it keeps in etcd and how it takes a job over from another hvdrun
// (--standby) in driver_takeover.cc.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "driver/driver_threads.h"
#include "driver/etcd_job.h"
#include "driver/worker_launch.h"
#include "hvd/common/hmac.h"
#include "hvd/rendezvous/server.h"
#include "policy/driver_state.h"
#include "policy/job_policy.h"
#include "process/output_relay.h"
#include "status/job_record.h"
#include "status/status_snapshots.h"

namespace hvd::launcher {

using Clock = std::chrono::steady_clock;

// The policy's settings; which interfaces count depends on where the
// rendezvous server is (`server_address`).
PolicyConfig PolicyFor(const LaunchConfig& config,
                       const std::string& server_address);
JobFacts FactsOf(const LaunchConfig& config);

class Driver {
 public:
  Driver(const LaunchConfig& config, rendezvous::RendezvousServer& server,
         LaunchContext launch, std::vector<HostSlots> hosts, EtcdJob* etcd,
         std::optional<DriverState> resumed)
      : config_(config),
        server_(server),
        etcd_(etcd),
        resumed_(std::move(resumed)),
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

  // Hands `actions` to the job record, then carries them out, or holds
  // back worker starts and pushes while this hvdrun is not sure it leads.
  void Execute(TimePoint now, const Actions& actions);
  void Carry(const Action& action);
  // Keeps `action` for Replay if it is one to hold back; returns whether.
  bool Withhold(const Action& action);
  // This hvdrun leads again: the withheld starts (of workers the policy
  // still has) and messages are carried out, in order.
  void Replay();
  void Start(const StartWorker& action);
  // Takes over the job the last leader left in `resumed_`: its board, its
  // policy, and each of its workers through AdoptWorker; a worker that
  // cannot be adopted is lost (WorkerLaunchFailed, adopting).
  void Resume(TimePoint now);
  // Attaches to the guard of a worker whose link was lost, as Resume
  // adopts one.
  void Reattach(const ReattachWorker& action);
  // Keeps a started, adopted or reattached worker: its output relay, its
  // pid (logged as "slot S (rank R) <how> <pid>").
  void Keep(WorkerId id, const SlotAssignment& slot, int64_t generation,
            const WorkerProcess& process, const char* how);
  void ExplainThroughSlurm(const std::vector<std::string>& hosts);
  void ExplainLostEtcd(const Actions& actions);
  // The Gloo keys of generations no worker needs once `published` is: in
  // the embedded store here, in etcd on EtcdJob's thread.
  void ForgetGlooGenerations(int64_t published);
  void Signal(WorkerId worker, int signal);
  // Another hvdrun leads the job now: the workers it can adopt are its,
  // not this one's to stop. Their guards' control pipes close, as if this
  // hvdrun had died, so each remote guard waits for the new leader; the
  // policy's stop then reaches only the others.
  void ReleaseAdoptable();
  // Addresses workers registered at check-in. Kept here too: the board
  // forgets the slots a new generation drops, which must still be told.
  void RefreshAddresses();
  // The key a push to `slot`'s notification server is signed with: its
  // newest worker's own (common/worker_key.h).
  std::string NotifyKey(const std::string& slot) const;
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
  EtcdJob* const etcd_;                       // with --rendezvous-backend etcd
  const std::optional<DriverState> resumed_;  // --standby, once it leads
  const LaunchContext launch_;
  JobPolicy policy_;
  JobRecord record_;
  const WallClockAnchor clock_;
  std::string saved_state_;  // the last one handed to EtcdJob
  bool state_too_large_ = false;
  // A running worker has not reported its pid yet: reports wake the loop.
  std::atomic<bool> state_lacks_pid_{false};
  Inbox inbox_;
  StatusSnapshots snapshots_;
  std::atomic<bool> board_changed_{false};
  std::atomic<bool> regained_{false};  // the lead came back (EtcdJob's thread)
  // Another hvdrun took the lead (EtcdJob's thread): this one only stops.
  std::atomic<bool> deposed_{false};
  std::vector<Action> withheld_;  // starts, reattaches, messages held back
  Cancellation cancel_errands_;   // before errands_: they use its fd
  Errands errands_;
  std::map<WorkerId, Running> workers_;
  std::map<pid_t, WorkerId> pids_;
  std::map<std::string, std::string> addresses_;
  std::map<std::string, WorkerId> reporting_;  // slot -> its newest worker
  int64_t sequence_ = 0;                       // of HostsUpdated messages
  int64_t gloo_forgotten_ = 0;  // generations below it have no Gloo keys
  int exit_code_ = 1;
};

}  // namespace hvd::launcher
