// JobPolicy: every decision hvdrun's driver makes, as a pure function of
// its state, the time and one event (docs/design.md, "The driver").
//
// The driver's I/O shell (driver.cc) turns signals, worker exits, discovery
// results, check-ins on the rendezvous board and liveness probes into
// events, hands each to OnEvent with the current time, and carries out the
// actions it gets back: start or signal a worker, publish a generation,
// push HostsUpdated or Abort, probe a worker, print a line, finish. Between
// events it waits until NextDeadline(), never longer and never spinning.
//
// Static mode (no --min-np, no discovery script) is the same policy with
// fixed hosts and no resets: the first failure stops the job.
//
// The elastic rules, which the unit tests in tests/launcher pin down:
// - A generation is formed only if it includes a running worker that holds
//   the committed state (one that checked in to the last generation every
//   slot joined); rank 0 is always such a worker.
// - A worker that has joined a generation is never killed for checking in
//   late while it answers liveness probes on its notification server; one
//   that misses `liveness_misses` probes in a row is hung and fails. A new
//   worker must check in within the start timeout.
// - A joined worker whose link to hvdrun was lost (ssh exited 255; with
//   --adopt-grace-seconds its guard waits for an hvdrun) is reattached, a
//   try a second at most, for the adopt grace; it fails when that ends, or
//   at once when its peers ask for a reset without it: then the worker is
//   gone, not only its link.
// - One failure is one reset: generations are counted when a worker joins
//   them, so a generation replaced before anyone joined it is free, and
//   reset requests alone form a generation only once every running member
//   asked (a stall shutdown), never because an exit arrives late.
// - With too few slots the job waits up to the elastic timeout, but fails at
//   once when no worker is running and every listed host is blacklisted for
//   good, or when no worker holding the committed state is left.
// - A failed worker's host is blacklisted and its other workers stopped
//   (Horovod's rule), except where that would stop every worker holding
//   the committed state (one machine, a holder beside the failed worker):
//   then only the failed slot is out, with the host's cooldown counted per
//   slot, and the host's other workers go on, as long as the job can: with
//   a cooldown (the slot comes back), or with at least min_np slots left.
// - Slots: a worker keeps its slot ("host:index") for life; a new worker
//   starts with its slot's index as its local rank, so it may start only
//   where no lower slot of its host is out. Rank 0 holds the committed
//   state: if the first host's lowest slots hold nothing, they follow its
//   holders as a group of their own (job_policy_slots.cc).
// - A job no worker ever checked in to (hvd.init() never reached the
//   rendezvous) stops once kStartAttempts worker starts in a row failed the
//   same way and none is left running: a missing script, a bad import.
// - A generation's reason is its real cause: a discovery result that
//   changed the hosts, a cooldown that ended, a failure.
// - The final lines of the endings horovodrun names carry its words too
//   (a line of their own before hvdrun's last): processes that failed,
//   the reset limit, the elastic timeout (docs/errors.md).
//
// The host check (check_hosts; host_check.h): no worker starts on a host
// before its check passed. Static mode checks the hosts of its ranks and
// starts nothing unless all passed. Elastic mode checks every usable host
// before its first worker and again when it comes back from the blacklist;
// one that fails is blacklisted like a failed worker's host; the first
// generation waits until no check is pending. At most
// kHostChecksAtOnce checks run at a time (each is an ssh and an errand
// thread of the driver's); the others wait their turn, in the order asked,
// and their deadline runs from their start. A check without an answer by
// start_timeout + host_check_grace has failed.
//
// Not thread-safe: one driver thread owns it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include <deque>

#include "hvd/common/network_interfaces.h"
#include "hvd/rendezvous/elastic_board.h"
#include "job/assignment.h"
#include "job/launch_config.h"
#include "policy/driver_state.h"
#include "policy/host_table.h"

namespace hvd::launcher {

// Host checks running at once: a hundred thousand discovered hosts are
// checked a batch at a time, and leave the driver's errand pool
// (kErrandThreads, 64) room for pushes and probes.
inline constexpr size_t kHostChecksAtOnce = 32;

using common::NetworkInterface;

using TimePoint = std::chrono::steady_clock::time_point;
using WorkerId = int64_t;

// Worker starts in a row that may fail the same way, before any worker of
// the job checked in, until the job stops: it cannot start (a missing
// script fails every time; horovodrun would restart it forever, torchrun
// not at all). Three tells a lasting fault from a passing one.
inline constexpr int kStartAttempts = 3;

struct PolicyConfig {
  bool elastic = false;
  int num_proc = 1;
  int min_np = 1;
  int max_np = 0;  // 0: no bound
  std::optional<int> reset_limit;
  std::optional<CooldownRange> cooldown;
  std::chrono::milliseconds elastic_timeout{kDefaultElasticTimeout};
  std::chrono::milliseconds start_timeout{kDefaultStartTimeout};
  std::chrono::milliseconds stop_grace{5000};
  // A joined worker late for a check-in is probed this long after it
  // became late, and again this long after a refused probe: a process that
  // is gone is found within a second...
  std::chrono::milliseconds quick_probe_interval{250};
  // ...and one that answers is probed again this often...
  std::chrono::milliseconds liveness_interval{2000};
  // ...and is hung after this many unanswered probes in a row.
  int liveness_misses = 3;
  // Probe every worker of the current generation every liveness interval,
  // not only late ones, and repeat a failed probe after the quick interval:
  // on for Slurm steps, whose srun learns of a silent node only from
  // slurmctld (SlurmdTimeout), while survivors may wait in a collective
  // until Gloo's timeout. ssh's keep-alives do this for ssh workers.
  bool probe_members = false;
  // After SIGKILL, how long to wait for exits before giving up on them.
  std::chrono::milliseconds reap_grace{5000};
  // Check each host (CheckHost) before it gets a worker. From() turns it
  // on; off, every host is taken as it is.
  bool check_hosts = false;
  // --network-interfaces: a host with none of them fails its check.
  std::vector<std::string> network_interfaces;
  // Whether a loopback interface of that list counts: only when the job is
  // on this machine alone (the rendezvous server is on loopback); across
  // machines, peers could not reach it.
  bool loopback_interfaces_count = true;
  // A check unanswered this long after the start timeout has failed. The
  // driver kills its ssh sooner; this bounds an answer that got lost.
  std::chrono::milliseconds host_check_grace{5000};
  // --adopt-grace-seconds: how long a worker whose link to hvdrun was lost
  // is reattached before it counts as failed (its guard waits that long
  // for an hvdrun); 0: a lost link is a failed worker.
  std::chrono::milliseconds reattach_window{0};

  static PolicyConfig From(const LaunchConfig& config);
};

// Events.
struct HostsDiscovered {
  std::vector<HostSlots> hosts;
};
struct WorkerExited {
  WorkerId worker = 0;
  int wait_status = 0;  // as waitpid reports it
};
// The link to a worker that can be adopted (--adopt-grace-seconds) ended
// as a lost ssh connection does (exit code 255): its worker may live on,
// its guard waiting for an hvdrun to attach again.
struct WorkerLinkLost {
  WorkerId worker = 0;
  int wait_status = 0;
};
struct WorkerLaunchFailed {
  WorkerId worker = 0;
  std::string message;
  // A worker the last leader ran, which this hvdrun could not take over
  // (JobPolicy::Resume): it is lost.
  bool adopting = false;
};
// The rendezvous board now: its newest generation, the slots of it that
// have not checked in, and the slots asking for a generation after it.
struct BoardChanged {
  int64_t generation = 0;
  std::set<std::string> missing;
  std::set<std::string> reset_requests;
};
struct WorkerProbed {
  WorkerId worker = 0;
  bool alive = false;
  // The worker's host refused the connection: its notification server,
  // which lives as long as the worker's process, is gone, so the process
  // is dead or dying (a killed process, a crashed slurmstepd) though its
  // ssh or srun may not know yet.
  bool refused = false;
};
// The answer to CheckHost: the host's interfaces, or why it cannot run
// workers (the message names the host).
struct HostChecked {
  std::string host;
  bool ok = false;
  std::string message;  // when !ok
  std::vector<NetworkInterface> interfaces;
};
struct SignalReceived {
  int signal = 0;
};
// Another hvdrun leads the job in etcd now (--rendezvous-backend etcd):
// this one must not go on with its workers. `reason` names the leader.
struct LeadTaken {
  std::string reason;
};
// A deadline passed (or nothing happened; harmless).
struct Tick {};
using Event = std::variant<HostsDiscovered, WorkerExited, WorkerLinkLost,
                           WorkerLaunchFailed, BoardChanged, WorkerProbed,
                           HostChecked, SignalReceived, LeadTaken, Tick>;

// Actions.
struct StartWorker {
  WorkerId worker = 0;
  SlotAssignment slot;
  // The generation the new worker is meant to join (the one published with
  // it; its first check-in may land in a later one); 0 in static mode.
  int64_t generation = 0;
};
struct SignalWorker {
  WorkerId worker = 0;
  int signal = 0;
};
struct PublishGeneration {
  rendezvous::GenerationPlan plan;
};
// To the notification servers of `slots` (their registered addresses).
struct PushHostsUpdated {
  int64_t generation = 0;
  std::vector<std::string> slots, added, removed;
};
struct PushAbort {
  int64_t generation = 0;
  std::string reason;
  std::vector<std::string> slots;
};
struct ProbeWorker {
  WorkerId worker = 0;
  std::string slot;
};
// Attach to the waiting guard of a worker whose link was lost, as a new
// leader adopts one; ssh may take `connect_within` to connect.
struct ReattachWorker {
  WorkerId worker = 0;
  SlotAssignment slot;
  int64_t generation = 0;
  std::chrono::seconds connect_within{1};
};
// Check that `host` can run workers (ssh, hvdrun there, its interfaces);
// answered by HostChecked.
struct CheckHost {
  std::string host;
};
// A worker failed: for the job's record (the status page); the driver
// does nothing else with it.
struct WorkerFailed {
  WorkerId worker = 0;
  std::string slot, host;
  int rank = 0;
  int64_t generation = 0;  // the generation it had joined; 0: none
  std::string what;        // "exited with code 3", "is hung ...", ...
  int exit_code = 0;       // as hvdrun would exit for it
  int signal = 0;          // the signal that ended it; 0: none
};
struct Say {
  std::string line;  // printed as "hvdrun: <line>"
};
struct Finish {
  int exit_code = 0;
  // A failed job's hosts worth explaining: the failed worker's and those
  // whose workers ignored the stop (unreachable?). The driver asks Slurm
  // about them when it started the workers as steps.
  std::vector<std::string> suspect_hosts;
};
using Action =
    std::variant<StartWorker, SignalWorker, PublishGeneration, PushHostsUpdated,
                 PushAbort, ProbeWorker, ReattachWorker, CheckHost,
                 WorkerFailed, Say, Finish>;
using Actions = std::vector<Action>;

// The slot's name on the rendezvous board: "<host>:<local_rank>".
std::string SlotNameOf(const SlotAssignment& slot);

class JobPolicy {
 public:
  JobPolicy(PolicyConfig config, std::vector<HostSlots> hosts);

  // The first actions: the first generation, or waiting for slots.
  Actions Start(TimePoint now);
  // Instead of Start, in an hvdrun that took the job over: the policy as
  // `state` says the last leader left it (job_policy_state.cc). Its workers
  // run, their generation goes on, their hosts passed their checks; a
  // worker the driver cannot adopt is reported as exited, as any.
  Actions Resume(TimePoint now, const DriverState& state,
                 const WallClockAnchor& clock);
  Actions OnEvent(TimePoint now, const Event& event);

  // When OnEvent(Tick) must run next at the latest; nullopt: only events.
  std::optional<TimePoint> NextDeadline() const;
  bool finished() const { return finished_; }
  // Whether worker `id`'s process may still run, as the policy sees it.
  bool Alive(WorkerId id) const {
    auto it = workers_.find(id);
    return it != workers_.end() && it->second.alive();
  }
  int64_t generation() const { return plan_.generation; }
  int resets() const;
  // Every host of the job and its state at `now` (static jobs: the hosts
  // given, never blacklisted).
  std::vector<HostTable::Row> HostRows(TimePoint now) const;
  // What a new leader would rebuild this policy from (driver_state.h),
  // without what only the driver knows (pids, notification addresses).
  DriverState Save(const WallClockAnchor& clock) const;

 private:
  struct Worker {
    WorkerId id = 0;
    std::string slot, host;
    int index = 0;  // its slot's on its host
    int start_rank = 0;
    TimePoint started;
    // Its life as the policy sees it: running (kProbing while a liveness
    // probe of it is out), told to stop by the driver (kStopping: its exit
    // is no failure), or gone (kExited: failed, not started, or left
    // behind after SIGKILL).
    enum class State { kRunning, kProbing, kStopping, kExitedOk, kExited };
    State state = State::kRunning;
    // Running and not told to stop.
    bool active() const {
      return state == State::kRunning || state == State::kProbing;
    }
    // Its process may still run.
    bool alive() const { return active() || state == State::kStopping; }
    int64_t joined = 0;   // the newest generation it checked in to
    int joined_rank = 0;  // its rank there
    // The newest generation it was told to join (a HostsUpdated push, or
    // its peers failed): it owes a check-in.
    int64_t told = 0;
    // Liveness of a joined worker that is late for a check-in.
    std::optional<TimePoint> next_probe;
    int misses = 0;
    // Its link to hvdrun was lost (job_policy_links.cc): reattached until
    // reattach_until; without a link, the next try is due at reattach_at.
    std::optional<TimePoint> relinked;  // when its newest link began
    std::optional<TimePoint> reattach_until, reattach_at;
  };

  // "name#rank" for every slot: two generations with equal keys give
  // every worker the same rank.
  static std::set<std::string> PlanKey(const rendezvous::GenerationPlan& plan);

  // Handlers, one per event.
  void OnHosts(TimePoint now, const HostsDiscovered& event, Actions& out);
  void OnExit(TimePoint now, const WorkerExited& event, Actions& out);
  void OnLinkLost(TimePoint now, const WorkerLinkLost& event, Actions& out);
  void OnLaunchFailed(TimePoint now, const WorkerLaunchFailed& event,
                      Actions& out);
  void OnBoard(TimePoint now, const BoardChanged& event, Actions& out);
  void OnProbe(TimePoint now, const WorkerProbed& event, Actions& out);
  void OnHostChecked(TimePoint now, const HostChecked& event, Actions& out);
  void OnSignal(TimePoint now, int signal, Actions& out);
  void OnTimers(TimePoint now, Actions& out);
  // OnTimers' parts: a stop's next step (job_policy_stop.cc); host checks
  // past their deadline (job_policy_host_check.cc); workers that never
  // checked in, and probes that are due (job_policy_liveness.cc).
  void EscalateStop(TimePoint now, Actions& out);
  void FailUnansweredChecks(TimePoint now, Actions& out);
  void FailLateStarters(TimePoint now, Actions& out);
  void StartProbes(TimePoint now, Actions& out);
  // Reattaches workers whose link was lost when due, or fails them: the
  // window ended, or their peers asked for a reset without them
  // (job_policy_links.cc).
  void ReattachLinks(TimePoint now, Actions& out);
  // Workers that `actions` signal but that have no link to be signalled
  // through count as exited; their guards stop them.
  void StopUnlinked(const Actions& actions, Actions& out);
  // A joined worker owes a check-in it has not made: it was told of the
  // newest generation, or its peers asked for a reset and it did not.
  bool Late(const Worker& w) const;

  // Elastic: records the failure (`what` completes "slot S (rank R) ..."),
  // blacklists the worker's host and stops its other workers, or only its
  // slot (KeepsHostOf). `broke`: a worker holding the committed state went,
  // so that the others' world broke (they are told with an Abort push);
  // `blacklisted`: "host H blacklisted", or what went instead.
  struct Failed {
    bool broke = false;
    std::string blacklisted;
  };
  Failed FailWorker(TimePoint now, Worker& worker, const std::string& what,
                    int exit_code, int signal, Actions& out);
  // Whether the failed worker's host stays in the job: blacklisting it
  // would stop every worker holding the committed state, and the job can
  // go on without the worker's slot (job_policy.h, the elastic rules).
  bool KeepsHostOf(TimePoint now, const Worker& failed) const;
  // Counts a failed start of a worker that never checked in (while no
  // worker ever did: job_policy_restarts.cc).
  void CountFailedStart(const Worker& worker, const std::string& what);
  // Stops the job if it cannot start (kStartAttempts); returns whether it
  // did.
  bool StopIfCannotStart(TimePoint now, Actions& out);
  // Forms and publishes the next generation if it can; else waits or ends
  // the job. `members_failed`: the running workers' world broke, so they
  // are resetting already (no HostsUpdated push; every rank syncs).
  void Reassign(TimePoint now, const std::string& why, bool members_failed,
                Actions& out);
  // Fails the job now unless it can still go on while it waits for slots.
  void CheckWaiting(TimePoint now, Actions& out);
  // The slots the next generation would have, in rank order; `also_out`:
  // as if that slot were out too.
  std::vector<SlotAssignment> WouldBeSlots(
      TimePoint now, const std::string& also_out = "") const;
  // The slots of `host` a generation may use, by index (job_policy.h,
  // "Slots": survivors keep theirs, a new worker only below every gap);
  // `active`: ActiveBySlot().
  std::vector<int> UsableSlotsOf(
      const HostSlots& host, TimePoint now, const std::string& also_out,
      const std::map<std::string, const Worker*>& active) const;
  // The active worker of each slot (RunningIn for many slots at once).
  std::map<std::string, const Worker*> ActiveBySlot() const;
  // Whether the next generation would have other slots than plan_'s.
  bool MembershipChanged(TimePoint now) const;
  void StartSlot(TimePoint now, const SlotAssignment& slot, int64_t generation,
                 Actions& out);
  // `horovod_words`: horovodrun's message for this ending, if it has one,
  // printed before the final line.
  void Stop(TimePoint now, const std::string& failure, int exit_code,
            Actions& out, const std::string& horovod_words = "");
  // horovodrun's words for a job that ends because workers failed, if any
  // did.
  std::string HorovodWordsForFailures() const;
  // No worker holding the committed state is left, or none is in the next
  // generation: the job cannot go on without losing it.
  void StopForLostState(TimePoint now, Actions& out);
  void Succeed(TimePoint now, Actions& out);
  void SignalAll(int signal, Actions& out);
  void MaybeFinish(Actions& out);
  void UpdateLateness(TimePoint now);
  // The job's failures, for the final message.
  std::string FailureSummary() const;
  void AddSuspect(const std::string& host, bool failed);

  // Host checks. RequestChecks asks for every usable host without one.
  void RequestChecks(TimePoint now, Actions& out);
  // Queues a check of `host` (an entry of checks_ made by the caller).
  void QueueCheck(TimePoint now, const std::string& host, Actions& out);
  // Starts queued checks while fewer than kHostChecksAtOnce run.
  void StartQueuedChecks(TimePoint now, Actions& out);
  // Forgets `host`'s check, whatever its state (it is checked again when
  // asked again).
  void DropCheck(const std::string& host);
  void FailHostCheck(TimePoint now, const std::string& host,
                     const std::string& problem, Actions& out);
  // After a check ended: start the static job (or fail it), form the first
  // elastic generation, or let a newly checked host in (`why`: what made
  // it be checked).
  void AfterChecks(TimePoint now, const std::string& why, Actions& out);
  bool HostReady(const std::string& host) const;
  bool AnyCheckPending() const;
  TimePoint CheckDeadline(TimePoint started) const;

  Worker* RunningIn(const std::string& slot);
  const Worker* RunningIn(const std::string& slot) const;
  bool IsHolder(const Worker& worker) const;
  int running() const;

  const PolicyConfig config_;
  HostTable table_;
  std::vector<HostSlots> static_hosts_;
  std::map<WorkerId, Worker> workers_;
  WorkerId next_id_ = 1;

  rendezvous::GenerationPlan plan_;  // newest published
  BoardChanged board_;               // for plan_
  // The newest generation every slot checked in to, and the workers that
  // did: they hold the committed state.
  int64_t complete_ = 0;
  std::set<std::string> complete_key_;  // its "slot#rank"s
  std::set<WorkerId> holders_;
  std::set<int64_t> joined_;  // generations some worker checked in to

  std::optional<TimePoint> waiting_since_;  // too few slots
  TimePoint cooldowns_checked_;             // cooldown ends up to here seen
  // HostsUpdated for these slots once every other slot of plan_ checked in.
  std::optional<PushHostsUpdated> push_when_ready_;

  // Failures (newest last) with the generation the worker had joined, and
  // the job's end.
  std::vector<std::pair<int64_t, std::string>> failures_;
  std::string stop_reason_;
  std::string horovod_words_;  // for the final lines
  // While no worker ever checked in: how the last start that failed
  // before its check-in failed, and how many in a row failed so.
  std::string failed_start_;
  int failed_starts_ = 0;
  // Hosts of the worker that stopped the job and of workers still running
  // after the stop grace, in that order; how many are of the first kind.
  std::vector<std::string> suspect_hosts_;
  size_t failed_hosts_ = 0;
  int exit_code_ = 0;
  bool stopping_ = false;
  bool succeeded_ = false;
  bool finished_ = false;
  std::optional<TimePoint> kill_at_, give_up_at_;

  // Host checks: the verdict, or when a pending one began. Elastic mode drops
  // a host's entry when it is blacklisted, so it is checked again when it
  // comes back.
  // kQueued: asked for, waiting for one of kHostChecksAtOnce; kPending:
  // running since `started`.
  struct HostCheckState {
    enum { kQueued, kPending, kPassed, kFailed } state = kQueued;
    TimePoint started;
    bool returning = false;  // back from a blacklisting
  };
  std::map<std::string, HostCheckState> checks_;
  // The hosts of kQueued checks in the order asked (a host whose entry
  // went meanwhile is skipped), and how many checks are kPending.
  std::deque<std::string> check_queue_;
  size_t checks_running_ = 0;
  // Static mode: the ranks waiting for their hosts' checks, and the hosts
  // that failed them.
  std::optional<std::vector<SlotAssignment>> awaiting_checks_;
  std::vector<std::string> failed_checks_;
  // Elastic mode: the first generation waits until no check is pending.
  bool start_pending_ = false;
};

}  // namespace hvd::launcher
