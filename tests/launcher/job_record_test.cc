// JobRecord and the views of it (status text, Prometheus metrics), fed by a
// real JobPolicy with synthetic events and times: no process, no sleep.
#include "status/job_record.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <set>

#include "status/status_server.h"

namespace hvd::launcher {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

const TimePoint kT0 = TimePoint(1000h);
constexpr int64_t kWall0 = 1'800'000'000'000;

// A policy and its record, fed as the driver feeds them.
class Job {
 public:
  Job(PolicyConfig config, std::vector<HostSlots> hosts)
      : policy_(config, hosts),
        record_(JobFacts{config.elastic, config.num_proc, config.min_np,
                         config.max_np, "python train.py"},
                kT0, kWall0) {}

  Actions Start() { return Run(policy_.Start(now_)); }
  // This job's hvdrun takes over the job `state` describes, as
  // Driver::Resume does: the record first, then the policy; every worker
  // but those in `lost` is adopted (its guard here is pid 5000 + its id),
  // the others fail to be.
  Actions Resume(const DriverState& state, std::set<WorkerId> lost = {}) {
    record_.OnResumed(now_, state);
    Actions actions = Run(policy_.Resume(now_, state, {kT0, kWall0}));
    for (const SavedWorker& saved : state.workers) {
      slots_[saved.slot] = saved.id;
      if (lost.count(saved.id)) continue;
      record_.OnWorkerProcess(saved.id, 5000 + saved.id,
                              std::make_shared<OutputTail>());
    }
    for (WorkerId id : lost) {
      Actions failed = On(WorkerLaunchFailed{id, "no guard waits", true});
      actions.insert(actions.end(), failed.begin(), failed.end());
    }
    return actions;
  }
  // The state this job's policy would leave in etcd, each worker with the
  // pid it reported on its host: 7000 + its id.
  DriverState Save() const {
    DriverState state = policy_.Save({kT0, kWall0});
    for (SavedWorker& w : state.workers) w.pid = 7000 + w.id;
    return state;
  }
  Actions On(const Event& event) {
    record_.OnEvent(now_, event);
    return Run(policy_.OnEvent(now_, event));
  }
  // Every slot of the newest generation checks in.
  Actions AllCheckIn() {
    return On(BoardChanged{policy_.generation(), {}, {}});
  }
  void Advance(std::chrono::milliseconds d) { now_ += d; }
  json Snapshot() { return record_.Snapshot(now_, policy_.HostRows(now_)); }
  JobRecord& record() { return record_; }
  WorkerId WorkerIn(const std::string& slot) const { return slots_.at(slot); }

 private:
  Actions Run(Actions actions) {
    record_.OnActions(now_, actions);
    for (const Action& action : actions) {
      if (auto* start = std::get_if<StartWorker>(&action)) {
        slots_[SlotNameOf(start->slot)] = start->worker;
        auto tail = std::make_shared<OutputTail>();
        tail->Add("worker " + std::to_string(start->worker) + " says hi",
                  false);
        record_.OnWorkerProcess(start->worker, 4000 + start->worker, tail);
      }
    }
    return actions;
  }

  TimePoint now_ = kT0;
  JobPolicy policy_;
  JobRecord record_;
  std::map<std::string, WorkerId> slots_;
};

rendezvous::WorkerReport Report(const std::string& slot, WorkerId worker,
                                TimePoint received, int64_t steps) {
  rendezvous::WorkerReport report;
  report.slot = slot;
  report.worker = worker;
  report.steps = steps;
  report.commits = steps / 10;
  report.ops["allreduce"] = {steps, 4 * steps};
  report.received = received;
  return report;
}

PolicyConfig Elastic() {
  PolicyConfig config;
  config.elastic = true;
  config.num_proc = 4;
  config.min_np = 2;
  config.max_np = 4;
  config.cooldown = CooldownRange{10s, 100s};
  return config;
}

TEST(JobRecordTest, AFailureIsARecoveryWithPhasesAndARecordedFailure) {
  Job job(Elastic(), {{"a", 2}, {"b", 2}});
  job.Start();
  job.Advance(300ms);
  job.AllCheckIn();
  json s = job.Snapshot();
  EXPECT_EQ(s["job"]["state"], "running");
  EXPECT_EQ(s["job"]["generation"], 1);
  ASSERT_EQ(s["ranks"].size(), 4u);
  EXPECT_EQ(s["ranks"][0]["slot"], "a:0");
  EXPECT_EQ(s["ranks"][0]["pid"], 4000 + job.WorkerIn("a:0"));
  EXPECT_TRUE(s["ranks"][3]["checked_in"]);
  EXPECT_EQ(s["recoveries"][0]["cause"], "start");
  EXPECT_EQ(s["recoveries"][0]["phases"]["rendezvous_ms"], 300.0) << s.dump(1);

  job.Advance(10s);
  const WorkerId victim = job.WorkerIn("b:1");
  job.record().OnReports({{"b:1", Report("b:1", victim, kT0 + 9700ms, 40)}});
  // An older report changes nothing; one of another process is ignored.
  job.record().OnReports({{"b:1", Report("b:1", victim, kT0 + 9600ms, 30)}});
  job.record().OnReports({{"b:1", Report("b:1", 999, kT0 + 9900ms, 50)}});
  Actions failed = job.On(WorkerExited{victim, SIGKILL});
  ASSERT_FALSE(failed.empty());
  job.Advance(50ms);
  job.AllCheckIn();

  s = job.Snapshot();
  EXPECT_EQ(s["job"]["generation"], 2);
  EXPECT_EQ(s["job"]["world_size"], 2);
  EXPECT_EQ(s["job"]["resets"], 1);
  EXPECT_EQ(s["job"]["resets_by_cause"]["failure"], 1);
  ASSERT_EQ(s["failures"].size(), 1u);
  const json& failure = s["failures"][0];
  EXPECT_EQ(failure["slot"], "b:1");
  EXPECT_EQ(failure["signal"], "SIGKILL");
  EXPECT_EQ(failure["exit_code"], 128 + SIGKILL);
  EXPECT_EQ(failure["generation"], 1);
  EXPECT_EQ(failure["pid"], 4000 + victim);
  ASSERT_EQ(failure["output_tail"].size(), 1u);
  EXPECT_EQ(failure["output_tail"][0]["text"],
            "worker " + std::to_string(victim) + " says hi");

  const json& recovery = s["recoveries"][1];
  ASSERT_TRUE(recovery["phases"]["detect_ms"].is_number()) << s.dump(1);
  EXPECT_EQ(recovery["cause"], "failure");
  EXPECT_DOUBLE_EQ(recovery["phases"]["detect_ms"], 600.0);  // 9.7 s -> 10.3 s
  EXPECT_DOUBLE_EQ(recovery["phases"]["decide_ms"], 0.0);
  EXPECT_DOUBLE_EQ(recovery["phases"]["rendezvous_ms"], 50.0);

  // Host b is blacklisted for its first cooldown (10 s from the failure).
  bool found = false;
  for (const json& host : s["hosts"]) {
    if (host["host"] != "b") continue;
    found = true;
    EXPECT_EQ(host["state"], "blacklisted");
    EXPECT_EQ(host["usable_again_ms"], kWall0 + 10300 + 10000);
    EXPECT_EQ(host["times_blacklisted"], 1);
  }
  EXPECT_TRUE(found);
}

TEST(JobRecordTest, ReportsGiveRanksTheirProgressAndRecoveriesTheirPhases) {
  Job job(Elastic(), {{"a", 2}, {"b", 2}});
  job.Start();
  job.AllCheckIn();
  const WorkerId first = job.WorkerIn("a:0"), second = job.WorkerIn("a:1");
  auto marked = [](rendezvous::WorkerReport report, double connect, double sync,
                   double first_step) {
    report.recovery = rendezvous::RecoveryMarks{1, connect, sync, first_step};
    return report;
  };
  job.record().OnReports(
      {{"a:0", marked(Report("a:0", first, kT0 + 1s, 10), 30, 200, 5)},
       {"a:1", marked(Report("a:1", second, kT0 + 1s, 10), 50, 100, 7)}});
  job.record().OnReports({{"a:0", Report("a:0", first, kT0 + 3s, 30)}});
  job.Advance(3s);
  json s = job.Snapshot();
  const json& report = s["ranks"][0]["report"];
  ASSERT_TRUE(report.is_object()) << s["ranks"].dump();
  EXPECT_EQ(report["steps"], 30);
  EXPECT_DOUBLE_EQ(report["step_rate"], 10.0);  // 20 steps in 2 s
  EXPECT_DOUBLE_EQ(report["commit_rate"], 1.0);
  EXPECT_EQ(report["ops"]["allreduce"]["bytes"], 120);
  EXPECT_EQ(report["received_ms"], kWall0 + 3000);
  EXPECT_TRUE(s["ranks"][1]["report"]["step_rate"].is_null());
  // The slowest rank's of each phase.
  const json& phases = s["recoveries"][0]["phases"];
  EXPECT_DOUBLE_EQ(phases["connect_ms"], 50.0);
  EXPECT_DOUBLE_EQ(phases["sync_ms"], 200.0);
  EXPECT_DOUBLE_EQ(phases["first_step_ms"], 7.0);
  EXPECT_EQ(s["recoveries"][0]["reported_ranks"], 2);  // of 4
}

TEST(JobRecordTest, AGenerationReplacedBeforeAnyoneJoinedIsNoReset) {
  Job job(Elastic(), {{"a", 2}, {"b", 2}});
  job.Start();
  job.AllCheckIn();
  job.On(WorkerExited{job.WorkerIn("b:0"), SIGKILL});
  // Before generation 2 completes, its other worker on b is stopped; the
  // job goes on with generation 2 only once everyone joined it.
  json s = job.Snapshot();
  EXPECT_EQ(s["job"]["state"], "recovering");
  EXPECT_EQ(s["job"]["resets"], 0);
  EXPECT_FALSE(s["generations"].back()["missing"].empty());
}

TEST(JobRecordTest, AStaticJobIsOneGenerationOfItsStartedRanks) {
  PolicyConfig config;
  config.num_proc = 3;
  Job job(config, {{"localhost", 3}});
  job.Start();
  json s = job.Snapshot();
  EXPECT_EQ(s["job"]["state"], "running");
  EXPECT_EQ(s["job"]["generation"], 1);
  ASSERT_EQ(s["ranks"].size(), 3u);
  EXPECT_EQ(s["ranks"][2]["slot"], "localhost:2");
  EXPECT_EQ(s["hosts"][0]["state"], "running");
}

TEST(JobRecordTest, AFailureKeepsItsPidAndOutputAfterItsWorkerIsForgotten) {
  PolicyConfig config = Elastic();
  config.cooldown.reset();
  Job job(config, {{"a", 2}, {"b", 2}, {"c", 2}});
  job.Start();  // a and b: 4 ranks; c waits as a spare
  job.AllCheckIn();
  const WorkerId victim = job.WorkerIn("b:0");
  job.On(WorkerExited{victim, SIGKILL});  // b:1 is stopped, c takes over
  job.On(WorkerExited{job.WorkerIn("b:1"), SIGTERM});
  job.AllCheckIn();
  json s = job.Snapshot();
  ASSERT_EQ(s["failures"].size(), 1u);
  EXPECT_EQ(s["failures"][0]["pid"], 4000 + victim);
  ASSERT_EQ(s["failures"][0]["output_tail"].size(), 1u);
  // b's workers are no ranks any more: forgotten, counted on no host.
  for (const json& host : s["hosts"]) {
    if (host["host"] == "b") {
      EXPECT_EQ(host["workers"], 0);
    }
  }
  for (const json& rank : s["ranks"]) EXPECT_NE(rank["host"], "b");
}

const json* HostIn(const json& s, const std::string& host) {
  for (const json& h : s["hosts"]) {
    if (h["host"] == host) return &h;
  }
  return nullptr;
}

TEST(JobRecordTest, ATakeoverListsTheAdoptedWorkersAndTheirGeneration) {
  Job leader(Elastic(), {{"a", 2}, {"b", 2}});
  leader.Start();
  leader.AllCheckIn();
  const DriverState state = leader.Save();
  ASSERT_EQ(state.workers.size(), 4u);

  // The standby's record knows nothing of the job until it takes it over:
  // then, before any worker reports, it has every rank.
  Job standby(Elastic(), {{"a", 2}, {"b", 2}});
  standby.Advance(20s);
  EXPECT_TRUE(standby.Snapshot()["ranks"].empty());
  standby.Resume(state);
  standby.Advance(100ms);
  json s = standby.Snapshot();
  EXPECT_EQ(s["job"]["state"], "running") << s.dump(1);
  EXPECT_EQ(s["job"]["generation"], 1);
  EXPECT_EQ(s["job"]["world_size"], 4);
  EXPECT_EQ(s["job"]["resets"], 0);
  ASSERT_EQ(s["ranks"].size(), 4u) << s.dump(1);
  const char* slots[] = {"a:0", "a:1", "b:0", "b:1"};
  for (int rank = 0; rank < 4; ++rank) {
    const json& r = s["ranks"][rank];
    const WorkerId id = leader.WorkerIn(slots[rank]);
    EXPECT_EQ(r["rank"], rank);
    EXPECT_EQ(r["slot"], slots[rank]);
    EXPECT_EQ(r["host"], std::string(slots[rank], 1));
    EXPECT_EQ(r["local_rank"], rank % 2);
    EXPECT_EQ(r["worker"], id);
    EXPECT_EQ(r["worker_pid"], 7000 + id);  // the saved one
    EXPECT_EQ(r["pid"], 5000 + id);         // its adopting guard here
    EXPECT_TRUE(r["checked_in"]);
    EXPECT_EQ(r["adopted_ms"], kWall0 + 20000);
    EXPECT_TRUE(r["started_ms"].is_null());  // under the last leader
    EXPECT_TRUE(r["report"].is_null());
  }
  ASSERT_EQ(s["generations"].size(), 1u);
  const json& g = s["generations"][0];
  EXPECT_EQ(g["generation"], 1);
  EXPECT_EQ(g["cause"], "start");
  EXPECT_EQ(g["reason"], state.plan.reason);
  EXPECT_EQ(g["size"], 4);
  EXPECT_TRUE(g["taken_over"]);
  EXPECT_EQ(g["complete_ms"], kWall0 + 20000);
  EXPECT_TRUE(g["missing"].empty());
  // Its formation was timed by the last leader, not here.
  const json& phases = s["recoveries"][0]["phases"];
  EXPECT_TRUE(phases["decide_ms"].is_null());
  EXPECT_TRUE(phases["rendezvous_ms"].is_null());
  EXPECT_TRUE(s["recoveries"][0]["triggered_ms"].is_null());
  for (const char* host : {"a", "b"}) {
    const json* h = HostIn(s, host);
    ASSERT_NE(h, nullptr);
    EXPECT_EQ((*h)["state"], "running");
    EXPECT_EQ((*h)["workers"], 2);
  }
}

TEST(JobRecordTest, AnAdoptedWorkerReportsAndFailsAsAStartedOne) {
  Job leader(Elastic(), {{"a", 2}, {"b", 2}});
  leader.Start();
  leader.AllCheckIn();
  Job standby(Elastic(), {{"a", 2}, {"b", 2}});
  standby.Advance(20s);
  standby.Resume(leader.Save());
  const WorkerId victim = standby.WorkerIn("b:1");

  rendezvous::WorkerReport report = Report("b:1", victim, kT0 + 21s, 40);
  report.pid = 8123;  // its reports say where it runs now
  standby.record().OnReports({{"b:1", report}});
  standby.record().OnReports({{"b:1", Report("b:1", victim, kT0 + 22s, 60)}});
  standby.Advance(2500ms);
  json s = standby.Snapshot();
  const json& rank = s["ranks"][3];
  EXPECT_EQ(rank["slot"], "b:1");
  EXPECT_EQ(rank["worker_pid"], 8123);
  EXPECT_EQ(rank["report"]["steps"], 60);
  EXPECT_DOUBLE_EQ(rank["report"]["step_rate"], 20.0);

  standby.On(WorkerExited{victim, SIGKILL});
  standby.Advance(50ms);
  standby.AllCheckIn();
  s = standby.Snapshot();
  ASSERT_EQ(s["failures"].size(), 1u) << s.dump(1);
  const json& failure = s["failures"][0];
  EXPECT_EQ(failure["slot"], "b:1");
  EXPECT_EQ(failure["rank"], 3);
  EXPECT_EQ(failure["generation"], 1);
  EXPECT_EQ(failure["pid"], 5000 + victim);
  EXPECT_EQ(failure["worker_pid"], 8123);
  EXPECT_EQ(failure["signal"], "SIGKILL");
  // The recovery is this hvdrun's own: timed, and a reset by failure.
  EXPECT_EQ(s["job"]["generation"], 2);
  EXPECT_EQ(s["job"]["resets_by_cause"]["failure"], 1);
  const json& recovery = s["recoveries"].back();
  EXPECT_EQ(recovery["cause"], "failure");
  EXPECT_DOUBLE_EQ(recovery["phases"]["detect_ms"], 500.0);  // 22 s -> 22.5
  EXPECT_DOUBLE_EQ(recovery["phases"]["rendezvous_ms"], 50.0);
  EXPECT_FALSE(s["generations"].back()["taken_over"]);
}

TEST(JobRecordTest, AWorkerTheStandbyCannotAdoptIsAFailure) {
  Job leader(Elastic(), {{"a", 2}, {"b", 2}});
  leader.Start();
  leader.AllCheckIn();
  Job standby(Elastic(), {{"a", 2}, {"b", 2}});
  const WorkerId lost = leader.WorkerIn("a:1");
  Actions actions = standby.Resume(leader.Save(), {lost});
  ASSERT_TRUE(std::any_of(actions.begin(), actions.end(), [](auto& a) {
    return std::holds_alternative<WorkerFailed>(a);
  }));
  json s = standby.Snapshot();
  ASSERT_EQ(s["failures"].size(), 1u) << s.dump(1);
  const json& failure = s["failures"][0];
  EXPECT_EQ(failure["slot"], "a:1");
  EXPECT_EQ(failure["rank"], 1);
  EXPECT_EQ(failure["worker"], lost);
  EXPECT_EQ(failure["worker_pid"], 7000 + lost);
  EXPECT_TRUE(failure["pid"].is_null());  // no guard of its ran here
  EXPECT_EQ(s["job"]["failures"], 1);
  // No process of it runs: a is not counted its worker.
  const json* a = HostIn(s, "a");
  ASSERT_NE(a, nullptr);
  EXPECT_NE((*a)["workers"], 2);
}

TEST(JobRecordTest, AGenerationTakenOverBeforeItCompletedWaitsForItsSlots) {
  PolicyConfig config = Elastic();
  Job leader(config, {{"a", 2}, {"b", 2}, {"c", 2}});
  leader.Start();  // a and b; c is spare
  leader.AllCheckIn();
  const WorkerId b0 = leader.WorkerIn("b:0"), b1 = leader.WorkerIn("b:1");
  leader.On(WorkerExited{b0, SIGKILL});
  leader.On(WorkerExited{b1, SIGTERM});
  leader.AllCheckIn();  // generation 2, on a and c: one reset
  leader.On(WorkerExited{leader.WorkerIn("c:1"), SIGKILL});
  const DriverState state = leader.Save();  // generation 3, not joined
  ASSERT_EQ(state.resets, 1);
  ASSERT_EQ(state.complete_generation, 2);
  ASSERT_EQ(state.plan.generation, 3);

  Job standby(config, {{"a", 2}, {"b", 2}, {"c", 2}});
  standby.Resume(state);
  json s = standby.Snapshot();
  EXPECT_EQ(s["job"]["state"], "recovering") << s.dump(1);
  EXPECT_EQ(s["job"]["generation"], 3);
  EXPECT_EQ(s["job"]["resets"], 1);  // the last leader's
  const json& g = s["generations"].back();
  EXPECT_EQ(g["cause"], "other");  // etcd keeps its reason, not its cause
  EXPECT_EQ(g["reason"], state.plan.reason);
  EXPECT_TRUE(g["complete_ms"].is_null());
  EXPECT_EQ(g["missing"].size(), state.plan.slots.size());
  for (const json& rank : s["ranks"]) EXPECT_FALSE(rank["checked_in"]);

  standby.Advance(1s);
  standby.AllCheckIn();
  s = standby.Snapshot();
  EXPECT_EQ(s["job"]["state"], "running");
  EXPECT_EQ(s["job"]["resets"], 2);
  EXPECT_EQ(s["generations"].back()["complete_ms"], kWall0 + 1000);
}

TEST(JobRecordTest, AStaticJobTakenOverIsItsOneGeneration) {
  PolicyConfig config;
  config.num_proc = 3;
  Job leader(config, {{"localhost", 3}});
  leader.Start();
  Job standby(config, {{"localhost", 3}});
  standby.Resume(leader.Save());
  json s = standby.Snapshot();
  EXPECT_EQ(s["job"]["state"], "running") << s.dump(1);
  EXPECT_EQ(s["job"]["generation"], 1);
  ASSERT_EQ(s["ranks"].size(), 3u);
  EXPECT_EQ(s["ranks"][2]["slot"], "localhost:2");
  EXPECT_EQ(s["ranks"][2]["local_rank"], 2);
  EXPECT_EQ(s["ranks"][2]["worker_pid"], 7000 + leader.WorkerIn("localhost:2"));
}

TEST(JobRecordTest, AWorkerIsNotRunningHereWhileItsLinkIsLost) {
  PolicyConfig config = Elastic();
  config.reattach_window = 60s;
  Job job(config, {{"a", 2}, {"b", 2}});
  job.Start();
  job.AllCheckIn();
  job.Advance(10s);
  auto workers_on_b = [&job] {
    const json s = job.Snapshot();
    for (const json& host : s["hosts"]) {
      if (host["host"] == "b") return host["workers"].get<int>();
    }
    return -1;
  };
  EXPECT_EQ(workers_on_b(), 2);
  const WorkerId b0 = job.WorkerIn("b:0");
  // The policy reattaches at once (ReattachWorker): running again.
  Actions lost = job.On(WorkerLinkLost{b0, 255 << 8});
  ASSERT_EQ(std::count_if(lost.begin(), lost.end(),
                          [](const Action& a) {
                            return std::holds_alternative<ReattachWorker>(a);
                          }),
            1);
  EXPECT_EQ(workers_on_b(), 2);
  // The try could not connect: no process runs for it until the next.
  job.Advance(100ms);
  job.On(WorkerLinkLost{b0, 255 << 8});
  EXPECT_EQ(workers_on_b(), 1);
  job.Advance(900ms);
  job.On(Tick{});
  EXPECT_EQ(workers_on_b(), 2);
}

TEST(JobRecordTest, KeepsBoundedHistories) {
  Job job(Elastic(), {{"a", 2}});
  job.Start();
  Actions says;
  for (size_t i = 0; i < JobRecord::kMaxMessages + 10; ++i) {
    says.push_back(Say{"line " + std::to_string(i)});
  }
  job.record().OnActions(kT0, says);
  json s = job.Snapshot();
  ASSERT_EQ(s["messages"].size(), JobRecord::kMaxMessages);
  EXPECT_EQ(s["messages"].back()["text"],
            "line " + std::to_string(JobRecord::kMaxMessages + 9));
}

TEST(StatusViewsTest, MetricsCountWhatTheRecordSaw) {
  Job job(Elastic(), {{"a", 2}, {"b", 2}});
  job.Start();
  job.AllCheckIn();
  job.On(WorkerExited{job.WorkerIn("a:1"), 9 << 8});  // exit code 9
  job.AllCheckIn();
  json s = job.Snapshot();
  s["ranks"][0]["report"] = {
      {"steps", 12},
      {"step_rate", 2.5},
      {"received_ms", s["job"]["now_ms"]},
      {"ops", {{"allreduce", {{"count", 7}, {"bytes", 700}}}}}};
  const std::string metrics = MetricsText(s);
  EXPECT_NE(metrics.find("hvd_generation 2\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("hvd_resets_total{cause=\"failure\"} 1\n"),
            std::string::npos);
  EXPECT_NE(metrics.find("hvd_worker_failures_total 1\n"), std::string::npos);
  EXPECT_NE(metrics.find("hvd_hosts{state=\"blacklisted\"} 1\n"),
            std::string::npos);
  EXPECT_NE(metrics.find("hvd_recovery_phase_seconds_count{phase=\"decide\"} "
                         "2\n"),
            std::string::npos);
  EXPECT_NE(metrics.find("hvd_worker_ops_total{slot=\"b:0\",rank=\"0\","
                         "op=\"allreduce\"} 7\n"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("hvd_worker_steps_total{slot=\"b:0\",rank=\"0\"} "
                         "12\n"),
            std::string::npos);

  const std::string text = StatusText(s);
  EXPECT_NE(text.find("job: running, generation 2, 2 ranks, 1 reset, "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("exited with code 9"), std::string::npos) << text;
  EXPECT_NE(text.find("| worker"), std::string::npos) << text;
}

TEST(StatusViewsTest, TheLeaderLineSaysWhoLeadsOrWhyItIsNotSure) {
  json s{{"job", {{"now_ms", 100000}}},
         {"leader",
          {{"job_id", "j"},
           {"etcd", "e1:2379"},
           {"this_hvdrun", "hvdrun pid 7 on n1, started T"},
           {"leading", true},
           {"since_ms", 40000},
           {"changes", json::array()}}}};
  EXPECT_NE(StatusText(s).find("leader: hvdrun pid 7 on n1, started T leads "
                               "job 'j' in etcd at e1:2379, since 60.00 s "
                               "ago\n"),
            std::string::npos)
      << StatusText(s);
  // A takeover's phases, each after the one before.
  json with_takeover = s;
  with_takeover["leader"]["takeover"] = {{"from", "hvdrun pid 3 on n0"},
                                         {"detected_ms", 1000000},
                                         {"elected_ms", 1000250},
                                         {"rebuilt_ms", 1000300},
                                         {"adopted_ms", 1001300},
                                         {"adopted", 4},
                                         {"workers", 4}};
  const std::string text = StatusText(with_takeover);
  EXPECT_NE(text.find("takeover: from hvdrun pid 3 on n0, detected at "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(", elected +0.25 s, rebuilt +0.05 s, adopted +1.00 s "
                      "(4 of 4 workers)\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(StatusText(s).find("takeover:"), std::string::npos);
  s["leader"]["leading"] = false;
  s["leader"]["changes"] = {{{"leading", false}, {"reason", "lease ran out"}}};
  EXPECT_NE(StatusText(s).find("is not sure it leads job 'j' in etcd at "
                               "e1:2379, since 60.00 s ago (lease ran out)"),
            std::string::npos)
      << StatusText(s);
  EXPECT_EQ(StatusText({{"job", json::object()}}).find("leader:"),
            std::string::npos);
}

TEST(StatusViewsTest, LabelValuesAreEscaped) {
  json s{{"job", json::object()},
         {"ranks",
          {{{"slot", "we\"ird\\host\n:0"},
            {"rank", 0},
            {"report", {{"steps", 1}}}}}}};
  const std::string metrics = MetricsText(s);
  EXPECT_NE(metrics.find("slot=\"we\\\"ird\\\\host\\n:0\""), std::string::npos)
      << metrics;
}

}  // namespace
}  // namespace hvd::launcher
