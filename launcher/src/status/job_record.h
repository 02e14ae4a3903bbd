// JobRecord: the job as the status page, /metrics and `hvdrun status` show
// it (docs/design.md, "Watching a job"): its generations and why each
// began, the ranks of the newest one, every failure, and the recovery of
// each generation split into phases.
//
// The driver thread feeds it what passes between the policy and the I/O
// shell: the policy's events and actions, the pid of each started worker,
// and, in an hvdrun that took the job over (--standby), the state the last
// leader left. It never decides anything; it only remembers, within fixed
// bounds (the newest kMaxGenerations generations, kMaxFailures failures,
// kMaxMessages of hvdrun's lines).
//
// Pure and not thread-safe: times come in as arguments (steady clock), and
// Snapshot() turns them into wall-clock milliseconds since the Unix epoch
// with the pair of clocks given at construction.
#pragma once

#include <sys/types.h>

#include <deque>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "hvd/rendezvous/worker_report.h"
#include "policy/driver_state.h"
#include "policy/host_table.h"
#include "policy/job_policy.h"
#include "process/output_tail.h"

namespace hvd::launcher {

struct JobFacts {
  bool elastic = false;
  int num_proc = 0, min_np = 0, max_np = 0;
  std::string command;  // the worker command, as one line
};

class JobRecord {
 public:
  static constexpr size_t kMaxGenerations = 200;
  static constexpr size_t kMaxFailures = 100;
  static constexpr size_t kMaxMessages = 50;

  // `started` and `started_wall_ms` are one instant on both clocks.
  JobRecord(JobFacts facts, TimePoint started, int64_t started_wall_ms);

  void OnEvent(TimePoint now, const Event& event);
  void OnActions(TimePoint now, const Actions& actions);
  // This hvdrun took the job over at `now` (Driver::Resume) from the state
  // its last leader saved: it adopts every worker of `state` (their pids on
  // their hosts as saved) and the newest generation, complete if every
  // slot had joined it. Called once, before the resumed policy's first
  // actions are recorded: they may already concern these workers. A worker
  // the driver then fails to adopt is a failure, through the policy, as
  // any.
  void OnResumed(TimePoint now, const DriverState& state);
  // The driver started or adopted `worker` (of a StartWorker action, or of
  // OnResumed) as `pid`, its output kept in `tail`.
  void OnWorkerProcess(WorkerId worker, pid_t pid,
                       std::shared_ptr<OutputTail> tail);
  // The workers' latest reports (ReportBoard::Latest(), by slot): their
  // progress for the ranks, their last sign of life (the detect phase of a
  // recovery runs from the failed worker's to its failure) and the phases
  // of each generation's recovery they measured. Call it whenever the
  // reports may be about to change meaning: before a failure or a new
  // generation is recorded, and before a snapshot.
  void OnReports(const std::map<std::string, rendezvous::WorkerReport>& latest);

  // Everything above, at `now`: docs/protocol.md, "GET /status.json",
  // without the parts the workers report.
  nlohmann::json Snapshot(TimePoint now,
                          const std::vector<HostTable::Row>& hosts) const;

 private:
  struct Worker {
    WorkerId id = 0;
    std::string slot, host;
    int local_rank = 0;
    pid_t pid = 0;           // on hvdrun's machine: its guard
    int64_t worker_pid = 0;  // on its host: the worker's own, reported
    TimePoint started;       // when it started, if this hvdrun started it
    std::optional<TimePoint> adopted;  // or when this hvdrun adopted it
    std::optional<TimePoint> exited;
    int wait_status = 0;
    std::optional<rendezvous::WorkerReport> report;  // its latest
    std::optional<double> step_rate, commit_rate;    // over the last two seen
    std::shared_ptr<OutputTail> tail;
  };
  struct Generation {
    int64_t number = 0;
    std::string reason, cause;  // cause: start, failure, hosts, other
    rendezvous::GenerationPlan plan;
    TimePoint triggered, published;
    std::optional<TimePoint> complete;  // every slot checked in
    // Published by the hvdrun that led before this one took the job over:
    // when it began and was published is not known here, and `published`
    // and `complete` are the takeover's time.
    bool taken_over = false;
    // With cause "failure": the failed worker's last report to the
    // failure (taken when it was published).
    std::optional<double> detect_ms;
    std::set<std::string> missing;  // slots not checked in yet
    // What its workers measured of their recovery into it.
    std::map<WorkerId, rendezvous::RecoveryMarks> marks;
  };
  struct Failure {
    TimePoint at;
    WorkerFailed what;
    pid_t pid = 0;
    int64_t worker_pid = 0;
    std::shared_ptr<OutputTail> tail;  // still filling while output drains
  };

  int64_t WallMs(TimePoint t) const;
  void OnExit(TimePoint now, WorkerId worker, int wait_status);
  // Forgets workers that exited and are not ranks of the newest
  // generation (failures keep copies of what they need).
  void ForgetExited();
  void AddStaticRank(TimePoint now, const StartWorker& start);
  // OnResumed's generation: the plan's, or a static job's one.
  void ResumeGeneration(TimePoint now, const DriverState& state);
  nlohmann::json GenerationJson(const Generation& g) const;
  nlohmann::json RecoveryJson(const Generation& g) const;
  nlohmann::json ReportJson(const Worker& w) const;

  const JobFacts facts_;
  const TimePoint started_;
  const int64_t started_wall_ms_;
  std::map<WorkerId, Worker> workers_;
  std::deque<Generation> generations_;
  std::deque<Failure> failures_;
  std::deque<std::pair<TimePoint, std::string>> messages_;
  std::map<std::string, int> resets_by_cause_;
  // Resets before this hvdrun took the job over (their causes are not
  // kept in the driver's state).
  int resets_taken_over_ = 0;
  std::vector<HostSlots> discovered_;
  // What the next generation answers: the first failure, or host change,
  // since the last one was published.
  std::optional<TimePoint> failure_since_publish_, hosts_since_publish_;
  // The last report of that failure's worker, for the detect phase.
  std::optional<TimePoint> failed_last_report_;
  int failures_total_ = 0;
  std::optional<int> exit_code_;
  std::optional<TimePoint> stopping_since_;
  std::optional<TimePoint> waiting_since_;
};

}  // namespace hvd::launcher
