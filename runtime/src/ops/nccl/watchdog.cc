#include "ops/nccl/watchdog.h"

#include <algorithm>
#include <string>

#include "hvd/common/logging.h"

namespace hvd::runtime::nccl {

using common::Status;

WatchAction DecideWatch(const Watch& watch, Clock::time_point now) {
  if (watch.abort_reason) {
    return {
        Verdict::kFail,
        Status::Aborted(watch.what + " was aborted: " + *watch.abort_reason)};
  }
  switch (watch.state.health) {
    case CommHealth::kFailed:
      // NCCL's own error: a peer's connection broke, or a remote error.
      return {Verdict::kFail, watch.state.error.WithContext(watch.what)};
    case CommHealth::kReady:
      return {Verdict::kDone, Status::Ok()};
    case CommHealth::kInProgress:
      break;
  }
  if (now - watch.started >= watch.deadline) {
    return {
        Verdict::kFail,
        Status::Timeout(watch.what + " did not finish within " +
                        common::DecimalSeconds(watch.deadline) + " s" +
                        " (a peer did not take part: it may have died, hung or "
                        "be overloaded; --gloo-timeout-seconds / "
                        "HOROVOD_GLOO_TIMEOUT_SECONDS bound collectives, "
                        "--start-timeout / HOROVOD_START_TIMEOUT the setup)")};
  }
  return {Verdict::kWait, Status::Ok()};
}

ResetPlan PlanReset(int old_size, const std::vector<int>& old_rank_of,
                    int nccl_version) {
  ResetPlan plan;
  constexpr int kFirstWithShrink = 22700;  // NCCL 2.27
  if (old_size == 0) {
    plan.why = "there is no communicator to keep or shrink";
    return plan;
  }
  std::vector<bool> stays(old_size, false);
  int previous = -1;
  for (size_t rank = 0; rank < old_rank_of.size(); ++rank) {
    const int old_rank = old_rank_of[rank];
    if (old_rank < 0 || old_rank >= old_size) {
      plan.why = "rank " + std::to_string(rank) + " is new to the job";
      return plan;
    }
    if (old_rank <= previous) {
      plan.why = "rank " + std::to_string(rank) +
                 " does not keep its old order (it was rank " +
                 std::to_string(old_rank) + ")";
      return plan;
    }
    previous = old_rank;
    stays[old_rank] = true;
  }
  for (int old_rank = 0; old_rank < old_size; ++old_rank) {
    if (!stays[old_rank]) plan.excluded.push_back(old_rank);
  }
  if (plan.excluded.empty()) {  // everyone in order: every one in place
    plan.keep = true;
    return plan;
  }
  if (nccl_version < kFirstWithShrink) {
    plan.excluded.clear();
    plan.why = "NCCL " + std::to_string(nccl_version) +
               " has no ncclCommShrink (2.27 or newer has)";
    return plan;
  }
  plan.shrink = true;
  return plan;
}

ResetPlan PlanInheritance(const std::vector<Inheritance>& members) {
  ResetPlan plan;
  if (members.empty()) {
    plan.why = "the set has no members";
    return plan;
  }
  const Inheritance* known = nullptr;
  int nccl_version = members.front().nccl_version;
  bool failed = false;
  std::vector<int> old_rank_of;
  for (size_t rank = 0; rank < members.size(); ++rank) {
    const Inheritance& m = members[rank];
    if (m.refuses) {
      plan.why = "rank " + std::to_string(rank) +
                 " turned keeping and shrinking off (HVD_NCCL_SHRINK=0)";
      return plan;
    }
    nccl_version = std::min(nccl_version, m.nccl_version);
    old_rank_of.push_back(m.generation < 0 ? -1 : m.rank);
    if (m.generation < 0) continue;
    failed = failed || m.failed;
    if (known == nullptr) known = &m;
    if (m.generation != known->generation || m.size != known->size) {
      plan.why = "rank " + std::to_string(rank) + " comes from generation " +
                 std::to_string(m.generation) + "'s communicator of " +
                 std::to_string(m.size) + ", another from generation " +
                 std::to_string(known->generation) + "'s of " +
                 std::to_string(known->size);
      return plan;
    }
  }
  plan =
      PlanReset(known == nullptr ? 0 : known->size, old_rank_of, nccl_version);
  if (plan.keep && failed) {
    // Everyone came back, but it failed: a shrink of nobody would carry
    // its fault over.
    plan.keep = false;
    plan.why = "its generation failed and no rank left";
  }
  plan.abort_first = plan.shrink && failed;
  return plan;
}

}  // namespace hvd::runtime::nccl
