#include "status/job_record.h"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstring>

namespace hvd::launcher {

using nlohmann::json;

namespace {

template <typename T>
void KeepNewest(std::deque<T>& items, size_t max) {
  while (items.size() > max) items.pop_front();
}

double Ms(TimePoint from, TimePoint to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

std::string SignalName(int signal) {
  const char* abbrev = sigabbrev_np(signal);
  return abbrev ? std::string("SIG") + abbrev
                : "signal " + std::to_string(signal);
}

bool SameHosts(const std::vector<HostSlots>& a,
               const std::vector<HostSlots>& b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](auto& x, auto& y) {
           return x.host == y.host && x.slots == y.slots;
         });
}

}  // namespace

JobRecord::JobRecord(JobFacts facts, TimePoint started, int64_t started_wall_ms)
    : facts_(std::move(facts)),
      started_(started),
      started_wall_ms_(started_wall_ms) {}

int64_t JobRecord::WallMs(TimePoint t) const {
  return started_wall_ms_ +
         std::chrono::duration_cast<std::chrono::milliseconds>(t - started_)
             .count();
}

void JobRecord::ForgetExited() {
  const Generation* newest =
      generations_.empty() ? nullptr : &generations_.back();
  for (auto it = workers_.begin(); it != workers_.end();) {
    bool rank = false;
    if (newest) {
      for (const auto& [slot, id] : newest->plan.workers) {
        rank |= id == it->first;
      }
    }
    it = it->second.exited && !rank ? workers_.erase(it) : std::next(it);
  }
}

void JobRecord::OnEvent(TimePoint now, const Event& event) {
  // What the last event's actions needed of an exited worker is recorded.
  ForgetExited();
  if (auto* hosts = std::get_if<HostsDiscovered>(&event)) {
    if (!discovered_.empty() && !SameHosts(discovered_, hosts->hosts) &&
        !hosts_since_publish_) {
      hosts_since_publish_ = now;
    }
    discovered_ = hosts->hosts;
  } else if (auto* exited = std::get_if<WorkerExited>(&event)) {
    OnExit(now, exited->worker, exited->wait_status);
  } else if (auto* lost = std::get_if<WorkerLinkLost>(&event)) {
    // hvdrun's process for the worker ended; a reattach revives it.
    OnExit(now, lost->worker, lost->wait_status);
  } else if (auto* failed = std::get_if<WorkerLaunchFailed>(&event)) {
    // No process runs for it: one that could not be started, or adopted.
    auto it = workers_.find(failed->worker);
    if (it != workers_.end() && !it->second.exited) it->second.exited = now;
  } else if (auto* board = std::get_if<BoardChanged>(&event)) {
    for (Generation& g : generations_) {
      if (g.number != board->generation || g.complete) continue;
      g.missing = board->missing;
      if (g.missing.empty()) {
        g.complete = now;
        if (g.number > 1) ++resets_by_cause_[g.cause];
      }
    }
  }
}

void JobRecord::OnExit(TimePoint now, WorkerId worker, int wait_status) {
  auto it = workers_.find(worker);
  if (it != workers_.end() && !it->second.exited) {
    it->second.exited = now;
    it->second.wait_status = wait_status;
  }
}

void JobRecord::OnActions(TimePoint now, const Actions& actions) {
  for (const Action& action : actions) {
    if (auto* start = std::get_if<StartWorker>(&action)) {
      Worker& w = workers_[start->worker];
      w.id = start->worker;
      w.slot = SlotNameOf(start->slot);
      w.host = start->slot.host;
      w.local_rank = start->slot.layout.local_rank;
      w.started = now;
      if (!facts_.elastic) AddStaticRank(now, *start);
    } else if (auto* reattach = std::get_if<ReattachWorker>(&action)) {
      auto it = workers_.find(reattach->worker);
      if (it != workers_.end()) it->second.exited.reset();
    } else if (auto* published = std::get_if<PublishGeneration>(&action)) {
      Generation g;
      g.number = published->plan.generation;
      g.reason = published->plan.reason;
      g.plan = published->plan;
      g.published = now;
      for (const auto& [slot, a] : g.plan.slots) g.missing.insert(slot);
      if (g.number == 1) {
        g.cause = "start";
        g.triggered = started_;
      } else if (failure_since_publish_) {
        g.cause = "failure";
        g.triggered = *failure_since_publish_;
        if (failed_last_report_ && *failed_last_report_ <= g.triggered) {
          g.detect_ms = Ms(*failed_last_report_, g.triggered);
        }
      } else if (hosts_since_publish_) {
        g.cause = "hosts";
        g.triggered = *hosts_since_publish_;
      } else {
        g.cause = "other";
        g.triggered = now;
      }
      failure_since_publish_.reset();
      failed_last_report_.reset();
      hosts_since_publish_.reset();
      generations_.push_back(std::move(g));
      KeepNewest(generations_, kMaxGenerations);
    } else if (auto* failed = std::get_if<WorkerFailed>(&action)) {
      ++failures_total_;
      Failure failure{now, *failed, 0, 0, nullptr};
      auto w = workers_.find(failed->worker);
      if (w != workers_.end()) {
        failure.pid = w->second.pid;
        failure.worker_pid = w->second.worker_pid;
        failure.tail = w->second.tail;
      }
      failures_.push_back(std::move(failure));
      KeepNewest(failures_, kMaxFailures);
      if (!failure_since_publish_) {
        failure_since_publish_ = now;
        if (w != workers_.end() && w->second.report) {
          failed_last_report_ = w->second.report->received;
        }
      }
    } else if (auto* say = std::get_if<Say>(&action)) {
      messages_.emplace_back(now, say->line);
      KeepNewest(messages_, kMaxMessages);
    } else if (auto* finish = std::get_if<Finish>(&action)) {
      exit_code_ = finish->exit_code;
    }
  }
}

void JobRecord::AddStaticRank(TimePoint now, const StartWorker& start) {
  // A static job is one generation, formed as its workers start; they meet
  // in Gloo's rendezvous without checking in.
  if (generations_.empty()) {
    Generation g;
    g.number = 1;
    g.reason = g.cause = "start";
    g.plan.generation = 1;
    g.plan.reason = g.reason;
    g.triggered = started_;
    generations_.push_back(std::move(g));
  }
  Generation& g = generations_.back();
  rendezvous::WorkerAssignment a;
  a.generation = 1;
  a.layout = start.slot.layout;
  a.sync = false;
  const std::string slot = SlotNameOf(start.slot);
  g.plan.slots[slot] = a;
  g.plan.workers[slot] = start.worker;
  g.published = now;
  if (static_cast<int>(g.plan.slots.size()) == start.slot.layout.size)
    g.complete = now;
}

void JobRecord::OnResumed(TimePoint now, const DriverState& state) {
  resets_taken_over_ = state.resets;
  for (const SavedWorker& saved : state.workers) {
    Worker& w = workers_[saved.id];
    w.id = saved.id;
    w.slot = saved.slot;
    w.host = saved.host;
    // A worker of the plan has the local rank it joined with; any other
    // (a spare, one being stopped) its slot's index, as it started.
    auto planned = state.plan.slots.find(saved.slot);
    w.local_rank = planned != state.plan.slots.end()
                       ? planned->second.layout.local_rank
                       : saved.index;
    w.worker_pid = saved.pid;
    w.started = now;
    w.adopted = now;
  }
  ResumeGeneration(now, state);
}

void JobRecord::ResumeGeneration(TimePoint now, const DriverState& state) {
  Generation g;
  g.taken_over = true;
  g.triggered = g.published = now;
  if (state.plan.generation > 0) {
    g.number = state.plan.generation;
    g.reason = state.plan.reason;
    g.plan = state.plan;
    // The saved state keeps no cause, only the reason; a first generation
    // can have had no other than the start.
    g.cause = g.number == 1 ? "start" : "other";
    for (const auto& entry : g.plan.slots) {
      const std::string& slot = entry.first;
      const bool joined = std::any_of(
          state.workers.begin(), state.workers.end(), [&](const auto& w) {
            return w.slot == slot && w.joined >= g.number;
          });
      if (!joined) g.missing.insert(slot);
    }
    if (state.complete_generation == g.number) g.missing.clear();
  } else if (!facts_.elastic && !state.workers.empty()) {
    // A static job's one generation, of the workers still running: they
    // met in Gloo's rendezvous under the last leader.
    g.number = 1;
    g.reason = g.cause = "start";
    g.plan.generation = 1;
    g.plan.reason = g.reason;
    for (const SavedWorker& saved : state.workers) {
      rendezvous::WorkerAssignment a;
      a.generation = 1;
      a.layout.rank = saved.start_rank;
      a.layout.local_rank = saved.index;
      a.sync = false;
      g.plan.slots[saved.slot] = a;
      g.plan.workers[saved.slot] = saved.id;
    }
  } else {
    return;  // taken over before its first generation
  }
  if (g.missing.empty()) g.complete = now;
  generations_.push_back(std::move(g));
}

void JobRecord::OnWorkerProcess(WorkerId worker, pid_t pid,
                                std::shared_ptr<OutputTail> tail) {
  auto it = workers_.find(worker);
  if (it == workers_.end()) return;
  it->second.pid = pid;
  it->second.tail = std::move(tail);
}

void JobRecord::OnReports(
    const std::map<std::string, rendezvous::WorkerReport>& latest) {
  for (const auto& [slot, report] : latest) {
    auto it = workers_.find(report.worker);
    if (it == workers_.end() || it->second.slot != slot) continue;
    Worker& w = it->second;
    if (w.report && w.report->received >= report.received) continue;
    if (w.report) {
      const double seconds =
          std::chrono::duration<double>(report.received - w.report->received)
              .count();
      w.step_rate = (report.steps - w.report->steps) / seconds;
      w.commit_rate = (report.commits - w.report->commits) / seconds;
    }
    w.report = report;
    if (report.pid > 0) w.worker_pid = report.pid;
    if (!report.recovery) continue;
    for (Generation& g : generations_) {
      if (g.number == report.recovery->generation && g.plan.slots.count(slot)) {
        g.marks[report.worker] = *report.recovery;
      }
    }
  }
}

json JobRecord::GenerationJson(const Generation& g) const {
  json out{{"generation", g.number},
           {"reason", g.reason},
           {"cause", g.cause},
           {"size", g.plan.slots.size()},
           {"published_ms", WallMs(g.published)},
           {"complete_ms", nullptr},
           {"missing", g.missing},
           {"sync", !g.plan.slots.empty() && g.plan.slots.begin()->second.sync},
           {"taken_over", g.taken_over}};
  if (g.complete) out["complete_ms"] = WallMs(*g.complete);
  return out;
}

json JobRecord::RecoveryJson(const Generation& g) const {
  // Phases the driver sees; the workers' (connect, state sync, first step)
  // are added from their reports.
  json phases{{"detect_ms", nullptr},
              {"decide_ms", nullptr},
              {"rendezvous_ms", nullptr}};
  // A generation taken over was formed under another hvdrun, whose times
  // are gone; its workers' own phases still come with their reports.
  if (!g.taken_over) phases["decide_ms"] = Ms(g.triggered, g.published);
  if (g.detect_ms) phases["detect_ms"] = *g.detect_ms;
  // The slowest rank's phases: the generation trains once all have.
  phases["connect_ms"] = phases["sync_ms"] = phases["first_step_ms"] = nullptr;
  for (const auto& [worker, marks] : g.marks) {
    const std::pair<const char*, double> measured[] = {
        {"connect_ms", marks.connect_ms},
        {"sync_ms", marks.sync_ms},
        {"first_step_ms", marks.first_step_ms}};
    for (const auto& [name, value] : measured) {
      if (phases[name].is_null() || phases[name].get<double>() < value) {
        phases[name] = value;
      }
    }
  }
  if (g.complete && !g.taken_over) {
    phases["rendezvous_ms"] = Ms(g.published, *g.complete);
  }
  return {{"generation", g.number},
          {"cause", g.cause},
          {"reason", g.reason},
          {"triggered_ms",
           g.taken_over ? json(nullptr) : json(WallMs(g.triggered))},
          {"reported_ranks", g.marks.size()},
          {"phases", phases}};
}

json JobRecord::ReportJson(const Worker& w) const {
  if (!w.report) return nullptr;
  const rendezvous::WorkerReport& r = *w.report;
  json ops = json::object();
  for (const auto& [op, counter] : r.ops) {
    ops[op] = {{"count", counter.count}, {"bytes", counter.bytes}};
  }
  json out{{"received_ms", WallMs(r.received)},
           {"reports", r.received_count},
           {"generation", r.generation},
           {"rank", r.rank},
           {"steps", r.steps},
           {"commits", r.commits},
           {"stalls", r.stalls},
           {"ops", ops},
           {"step_rate", nullptr},
           {"commit_rate", nullptr}};
  if (w.step_rate) out["step_rate"] = *w.step_rate;
  if (w.commit_rate) out["commit_rate"] = *w.commit_rate;
  return out;
}

json JobRecord::Snapshot(TimePoint now,
                         const std::vector<HostTable::Row>& hosts) const {
  const Generation* newest =
      generations_.empty() ? nullptr : &generations_.back();
  std::string state = "starting";
  if (exit_code_) {
    state = *exit_code_ == 0 ? "succeeded" : "failed";
  } else if (newest && newest->complete) {
    state = "running";
  } else if (newest && newest->number > 1) {
    state = "recovering";
  }
  json job{{"state", state},
           {"elastic", facts_.elastic},
           {"command", facts_.command},
           {"num_proc", facts_.num_proc},
           {"min_np", facts_.min_np},
           {"max_np", facts_.max_np},
           {"started_ms", started_wall_ms_},
           {"now_ms", WallMs(now)},
           {"generation", newest ? newest->number : 0},
           {"world_size", newest ? newest->plan.slots.size() : 0},
           {"failures", failures_total_},
           {"exit_code", nullptr}};
  if (exit_code_) job["exit_code"] = *exit_code_;
  json resets = json::object();
  int resets_total = 0;
  for (const auto& [cause, count] : resets_by_cause_) {
    resets[cause] = count;
    resets_total += count;
  }
  job["resets"] = resets_taken_over_ + resets_total;
  job["resets_by_cause"] = resets;

  // Workers running now, by host.
  std::map<std::string, int> running_on;
  for (const auto& [id, w] : workers_) {
    if (!w.exited) ++running_on[w.host];
  }
  json host_list = json::array();
  for (const HostTable::Row& row : hosts) {
    std::string host_state = !row.listed                  ? "removed"
                             : row.blacklisted            ? "blacklisted"
                             : running_on.count(row.host) ? "running"
                                                          : "idle";
    json entry{
        {"host", row.host},
        {"slots", row.slots},
        {"state", host_state},
        {"workers", running_on.count(row.host) ? running_on[row.host] : 0},
        {"times_blacklisted", row.times_blacklisted},
        {"usable_again_ms", nullptr}};
    if (row.blacklisted && row.usable_again) {
      entry["usable_again_ms"] = WallMs(*row.usable_again);
    }
    host_list.push_back(std::move(entry));
  }

  json ranks = json::array();
  if (newest) {
    std::vector<std::pair<int, std::string>> order;
    for (const auto& [slot, a] : newest->plan.slots) {
      order.emplace_back(a.layout.rank, slot);
    }
    std::sort(order.begin(), order.end());
    for (const auto& [rank, slot] : order) {
      const rendezvous::WorkerAssignment& a = newest->plan.slots.at(slot);
      json entry{{"rank", rank},
                 {"slot", slot},
                 {"host", slot.substr(0, slot.rfind(':'))},
                 {"local_rank", a.layout.local_rank},
                 {"checked_in", newest->missing.count(slot) == 0},
                 {"worker", nullptr},
                 {"pid", nullptr},
                 {"worker_pid", nullptr},
                 {"started_ms", nullptr},
                 {"adopted_ms", nullptr},
                 {"report", nullptr}};
      auto id = newest->plan.workers.find(slot);
      if (id != newest->plan.workers.end()) {
        entry["worker"] = id->second;
        auto w = workers_.find(id->second);
        if (w != workers_.end()) {
          if (w->second.pid > 0) entry["pid"] = w->second.pid;
          if (w->second.worker_pid > 0) {
            entry["worker_pid"] = w->second.worker_pid;
          }
          if (w->second.adopted) {
            entry["adopted_ms"] = WallMs(*w->second.adopted);
          } else {
            entry["started_ms"] = WallMs(w->second.started);
          }
          entry["host"] = w->second.host;
          entry["report"] = ReportJson(w->second);
        }
      }
      ranks.push_back(std::move(entry));
    }
  }

  json generation_list = json::array();
  json recoveries = json::array();
  for (const Generation& g : generations_) {
    generation_list.push_back(GenerationJson(g));
    recoveries.push_back(RecoveryJson(g));
  }

  json failure_list = json::array();
  for (const Failure& f : failures_) {
    json entry{{"at_ms", WallMs(f.at)},
               {"slot", f.what.slot},
               {"host", f.what.host},
               {"rank", f.what.rank},
               {"generation", f.what.generation},
               {"worker", f.what.worker},
               {"what", f.what.what},
               {"exit_code", f.what.exit_code},
               {"signal", nullptr},
               {"pid", nullptr},
               {"worker_pid", nullptr},
               {"output_tail", json::array()}};
    if (f.what.signal > 0) entry["signal"] = SignalName(f.what.signal);
    if (f.pid > 0) entry["pid"] = f.pid;
    if (f.worker_pid > 0) entry["worker_pid"] = f.worker_pid;
    if (f.tail) {
      for (const auto& line : f.tail->Lines()) {
        entry["output_tail"].push_back(
            {{"stream", line.is_stderr ? "stderr" : "stdout"},
             {"text", line.text}});
      }
    }
    failure_list.push_back(std::move(entry));
  }

  json messages = json::array();
  for (const auto& [at, line] : messages_) {
    messages.push_back({{"at_ms", WallMs(at)}, {"text", line}});
  }
  return {{"job", job},
          {"hosts", host_list},
          {"ranks", ranks},
          {"generations", generation_list},
          {"failures", failure_list},
          {"recoveries", recoveries},
          {"messages", messages}};
}

}  // namespace hvd::launcher
