// ElasticBoard: the driver's record of generations and who has checked in.
//
// The driver publishes each generation (its number and every slot's
// assignment); a worker checks its slot in for the newest generation after
// the one it last belonged to and is answered once every slot of that
// generation has checked in: a barrier with a timeout. A worker whose slot
// is not in the newest generation learns that it was removed. Workers hand
// over their notification address when they check in.
//
// Thread-safe; waits are bounded by the caller's budget and end early with
// kAborted when the board closes.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "hvd/common/status.h"
#include "hvd/rendezvous/worker_assignment.h"

namespace hvd::rendezvous {

struct GenerationPlan {
  int64_t generation = 0;
  std::map<std::string, WorkerAssignment> slots;  // by SlotName
  // The process each slot belongs to (hvdrun's worker id, HVD_WORKER_ID);
  // a slot not listed takes any. A process the driver replaced (say, it was
  // cut off by a partition and came back) cannot check in for the slot.
  std::map<std::string, int64_t> workers;
  // Why the driver formed it (ShortReason) and its hosts in rank order
  // with their slots ("a:2"); every slot's check-in answer carries both.
  std::string reason;
  std::vector<std::string> hosts;
};

class ElasticBoard {
 public:
  // Makes `plan` the newest generation; numbers start at 1 and must grow.
  // Waiters of older generations move on to it.
  common::Status Publish(GenerationPlan plan);
  // Publish on a new board for a generation that is already running: the
  // board of an hvdrun that took the job over. Every slot of `plan` has
  // checked in, with the notification addresses in `notify`.
  common::Status Resume(GenerationPlan plan,
                        std::map<std::string, std::string> notify);

  // Checks `slot` in for the newest generation after `after` and waits up
  // to `wait` until every slot of it has checked in. kNotFound: the slot is
  // not in the newest generation (removed from the job), or it belongs to
  // another process than `worker` (this one was replaced); kTimeout: the
  // barrier did not complete in time (checking in again continues it).
  common::Result<WorkerAssignment> CheckIn(const std::string& slot,
                                           int64_t after,
                                           const std::string& notify_address,
                                           std::chrono::milliseconds wait,
                                           int64_t worker = 0);

  // The newest generation (0 before the first) and the slots of it that
  // have not checked in yet.
  int64_t generation() const;
  std::vector<std::string> Missing() const;

  // Whether `worker` in `slot` belongs to `generation`: the newest one
  // lists the slot for that process (a slot listed without a process takes
  // any). Before the first generation every worker belongs to every one: a
  // static job has no generations, and all its workers are members.
  bool IsMember(int64_t generation, const std::string& slot,
                int64_t worker) const;

  // Slots waiting for a generation after the newest one: their world broke
  // (a peer failed or hung) before the driver formed a new generation.
  std::vector<std::string> ResetRequests() const;

  // Notification addresses registered at check-in by slots that are part of
  // the newest generation (kept from earlier generations for slots that
  // stay).
  std::map<std::string, std::string> NotifyAddresses() const;

  // CheckIn calls blocked in their wait at this moment. Once a caller sees
  // one, a Publish or Close is certain to reach it: tests use this to know
  // a check-in is parked before they act.
  int waiting() const;

  // Ends every wait with kAborted, now and later.
  void Close();

  // Called whenever a slot checks in or asks for a generation after the
  // newest, so that the driver wakes instead of polling. It runs on the
  // server thread that made the change, with the board's lock held: it must
  // be quick and must not call the board. Set it before the server serves.
  void SetListener(std::function<void()> listener);

 private:
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::optional<GenerationPlan> newest_;
  std::set<std::string> checked_in_;
  std::set<std::string> reset_requests_;
  std::map<std::string, std::string> notify_;
  int waiting_ = 0;
  bool closed_ = false;
  std::function<void()> listener_;
};

}  // namespace hvd::rendezvous
