// The deadlock detector, run by the coordinator of a process set that holds
// every rank: it ends a wait that can never end. A rank blocked in a wait
// (synchronize, a synchronous op, barrier, join) submits nothing new, so
// when every rank waits, none has enqueued anything since its wait began,
// and no response comes for a while, the names still pending can never
// become ready: each waits for a rank that waits for something else. The
// detector then fails every pending collective (and a pending join) on
// every rank with kMismatch, naming what each rank waits for.
//
// The bound is the Gloo timeout: a rank reports "waiting" when one of its
// threads is blocked, but another thread of a multi-threaded script may
// still be computing and enqueue later. Such a thread gets as long as one
// Gloo operation may take, the longest hvd ever lets one step of a
// collective stall (docs/design.md, "Deadlock detection").
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "negotiation/coordinator.h"

namespace hvd::runtime {

class DeadlockDetector {
 public:
  // `global_ranks`: the set's members by set rank, named in the message.
  // `after`: how long every member must wait with no response.
  DeadlockDetector(std::vector<int> global_ranks,
                   std::chrono::steady_clock::duration after);

  // One cycle: whether each member (by set rank) reported waiting, and
  // whether this cycle produced any response. When every member has
  // waited, with no response, for `after`, and something is pending (a
  // name some ranks submitted, or a join), returns the message to fail
  // every pending collective with, and starts counting afresh.
  // `pending` and `joined` (global ranks) need only be filled when every
  // member waits.
  std::optional<std::string> Observe(SteadyTime now,
                                     const std::vector<bool>& waiting,
                                     bool responded,
                                     const std::vector<PendingTensor>& pending,
                                     const std::vector<int>& joined);

 private:
  std::vector<int> global_ranks_;
  std::chrono::steady_clock::duration after_;
  // Since when every member has waited with no response.
  std::optional<SteadyTime> since_;
};

// The message: per rank, what it waits for; why none can go on; what to do.
std::string DescribeDeadlock(const std::vector<int>& global_ranks,
                             const std::vector<PendingTensor>& pending,
                             const std::vector<int>& joined,
                             std::chrono::steady_clock::duration waited);

}  // namespace hvd::runtime
