// The job policy tests' harness: feeds JobPolicy synthetic events and
// times and keeps what a driver would. No process, no sleep: time is a
// value the test moves.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "policy/job_policy.h"

namespace hvd::launcher::policy_test {

using namespace std::chrono_literals;

inline const TimePoint kT0 = TimePoint(1000h);

// Wait statuses: exited with `code`, killed by `sig`.
inline int Exit(int code) { return code << 8; }
inline int Killed(int sig) { return sig; }

template <typename T>
std::vector<T> All(const Actions& actions) {
  std::vector<T> found;
  for (const Action& a : actions) {
    if (auto* t = std::get_if<T>(&a)) found.push_back(*t);
  }
  return found;
}

inline std::string Lines(const Actions& actions) {
  std::string text;
  for (const Say& say : All<Say>(actions)) text += say.line + "\n";
  return text;
}

// Feeds the policy and keeps what a driver would: the newest generation,
// who checked in to it, which worker runs which slot.
class Harness {
 public:
  explicit Harness(PolicyConfig config,
                   std::vector<HostSlots> hosts = {{"a", 2}, {"b", 2}})
      : policy_(config, hosts) {}

  Actions Start() { return Record(policy_.Start(now_)); }
  Actions On(const Event& event) {
    return Record(policy_.OnEvent(now_, event));
  }
  Actions Tick() { return On(hvd::launcher::Tick{}); }
  // Moves the clock to the policy's next deadline and ticks.
  Actions ToDeadline() {
    auto deadline = policy_.NextDeadline();
    EXPECT_TRUE(deadline.has_value());
    if (deadline) now_ = *deadline;
    return Tick();
  }
  void Advance(std::chrono::milliseconds d) { now_ += d; }

  // Slots check in to the newest generation.
  Actions CheckIn(const std::vector<std::string>& slots) {
    for (const auto& slot : slots) checked_.insert(slot);
    return On(Board());
  }
  Actions AskReset(const std::vector<std::string>& slots) {
    for (const auto& slot : slots) resets_.insert(slot);
    return On(Board());
  }
  Actions CheckInAll() {
    std::vector<std::string> all;
    for (const auto& [slot, a] : plan_.slots) all.push_back(slot);
    return CheckIn(all);
  }
  Actions ExitSlot(const std::string& slot, int wait_status) {
    WorkerId id = worker(slot);
    running_.erase(slot);
    return On(WorkerExited{id, wait_status});
  }

  WorkerId worker(const std::string& slot) const {
    auto it = running_.find(slot);
    EXPECT_NE(it, running_.end()) << slot;
    return it == running_.end() ? 0 : it->second;
  }
  bool has_worker(const std::string& slot) const {
    return running_.count(slot) != 0;
  }
  const rendezvous::GenerationPlan& plan() const { return plan_; }
  int rank(const std::string& slot) const {
    return plan_.slots.at(slot).layout.rank;
  }
  JobPolicy& policy() { return policy_; }
  TimePoint now() const { return now_; }
  int exit_code() const { return exit_code_; }
  const std::string& log() const { return log_; }

 private:
  BoardChanged Board() const {
    BoardChanged board;
    board.generation = plan_.generation;
    for (const auto& [slot, a] : plan_.slots) {
      if (!checked_.count(slot)) board.missing.insert(slot);
    }
    board.reset_requests = resets_;
    return board;
  }

  Actions Record(Actions actions) {
    for (const Action& action : actions) {
      if (auto* start = std::get_if<StartWorker>(&action)) {
        running_[SlotNameOf(start->slot)] = start->worker;
      } else if (auto* publish = std::get_if<PublishGeneration>(&action)) {
        plan_ = publish->plan;
        checked_.clear();
        resets_.clear();
      } else if (auto* finish = std::get_if<Finish>(&action)) {
        exit_code_ = finish->exit_code;
      } else if (auto* say = std::get_if<Say>(&action)) {
        log_ += say->line + "\n";
      }
    }
    // A published plan names the process of each of its slots: the one
    // that runs there, or the one just started for it.
    if (!All<PublishGeneration>(actions).empty()) {
      for (const auto& [slot, a] : plan_.slots) {
        EXPECT_EQ(plan_.workers.count(slot) ? plan_.workers.at(slot) : -1,
                  running_.count(slot) ? running_.at(slot) : -2)
            << "plan " << plan_.generation << " slot " << slot;
      }
    }
    // The loop never spins: after any event the next deadline lies ahead.
    if (auto deadline = policy_.NextDeadline()) {
      EXPECT_GT(*deadline, now_) << "a deadline already passed: busy loop";
    }
    return actions;
  }

  JobPolicy policy_;
  TimePoint now_ = kT0;
  rendezvous::GenerationPlan plan_;
  std::set<std::string> checked_, resets_;
  std::map<std::string, WorkerId> running_;
  int exit_code_ = -1;
  std::string log_;
};

inline PolicyConfig Elastic(int np, int min_np) {
  PolicyConfig config;
  config.elastic = true;
  config.num_proc = np;
  config.min_np = min_np;
  config.elastic_timeout = 600s;
  config.start_timeout = 30s;
  return config;
}

inline PolicyConfig Static(int np) {
  PolicyConfig config;
  config.num_proc = np;
  config.min_np = np;
  return config;
}

// A running elastic job: generation 1 on a:0, a:1, b:0, b:1, all joined.
inline Harness Trained(PolicyConfig config = Elastic(4, 2)) {
  Harness h(config);
  h.Start();
  h.CheckInAll();
  return h;
}

}  // namespace hvd::launcher::policy_test
