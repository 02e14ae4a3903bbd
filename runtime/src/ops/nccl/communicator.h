// One NCCL communicator of one generation (a process set on one device)
// through its life: made from a unique id rank 0 publishes, waited on under
// the watchdog's deadline, failed when a peer dies, hangs or the driver
// says so, then shrunk for the next generation when only ranks left or
// aborted, closed cleanly at shutdown. Every NCCL call goes through the seam
// (nccl_api.h) and every wait is a poll of DecideWatch (watchdog.h), so nothing
// blocks in NCCL and a dead peer becomes a status, never a hang or
// std::terminate.
//
// A wait that fails (NCCL's error, the deadline, an abort asked for) ends
// with a status at once, but leaves the communicator to its owner, failed:
// every later wait fails at once, and the owner either shrinks it (NCCL
// ends its pending work first) or aborts it. Its destructor aborts it.
//
// Thread safety: one owner thread (the background loop) calls everything
// but RequestAbort, which any thread may call at any time: the owner's
// current or next wait fails the communicator with kAborted.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "hvd/common/status.h"
#include "ops/nccl/nccl_api.h"
#include "ops/nccl/watchdog.h"

namespace hvd::runtime::nccl {

// Hands rank 0's unique id to every member: rank 0 passes the id it made,
// the others null, and all get rank 0's (through the rendezvous store under
// the generation's prefix in production, id_exchange.h).
using IdExchange =
    std::function<common::Result<UniqueId>(const UniqueId* made)>;

// The bounds of the waits (the Gloo path's: the start timeout for setup,
// the collective timeout for everything after), and how the waits pass the
// time: the real clock and a short pause between polls, a fake in tests.
struct CommunicatorLimits {
  std::chrono::milliseconds setup{30000};
  std::chrono::milliseconds op{30000};
  std::function<Clock::time_point()> now = Clock::now;
  std::function<void()> pause;  // empty: sleep 100 microseconds
};

class Communicator {
 public:
  // Rank `rank` of `size` on CUDA device `device`; `name` says which
  // ("set 0 on device 1") in every message. Fails with what NCCL, the
  // exchange or the watchdog said; nothing is left to free then.
  static common::Result<std::unique_ptr<Communicator>> Create(
      Api* api, const IdExchange& exchange, std::string name, int device,
      int rank, int size, CommunicatorLimits limits);

  // Closes the communicator cleanly if it is still open (Close()).
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  // Any thread: the owner's current or next wait fails the communicator.
  void RequestAbort(const std::string& reason);

  // Makes NCCL calls on the communicator (`calls` gets the raw one; a
  // group of them, say), then waits until NCCL has launched them. Fails
  // it when a call fails or the wait does.
  common::Status Launch(const std::string& what,
                        const std::function<common::Status(Comm)>& calls);

  // Waits until NCCL has finished the communicator's last call (a
  // collective's launch, for instance), bounded by the op limit.
  common::Status AwaitIdle(const std::string& what);
  // Waits until `event` (recorded after this communicator's collectives on
  // a stream) has completed on the device, bounded by the op limit: the
  // host's only wait on the data path, so a peer that dies mid-collective
  // ends it through NCCL's error, the deadline or an abort.
  common::Status AwaitDone(Event event, const std::string& what);

  // A communicator of this one's ranks less `excluded` (ranks of this one),
  // through ncclCommShrink, numbering the survivors in their old order.
  // This one is aborted either way, once the shrink has finished or
  // failed. `abort_first`: NCCL ends this one's pending work first, as
  // after a death (a failed generation may have left some).
  common::Result<std::unique_ptr<Communicator>> Shrink(
      const std::vector<int>& excluded, bool abort_first);

  // Ends the communicator now: ncclCommAbort. Idempotent.
  void Abort();
  // Finalizes within the op limit, then destroys; aborts instead when it
  // has failed, or the finalize fails or runs out. Idempotent.
  common::Status Close();

  // Whether NCCL still holds it (not aborted, shrunk or closed); a failed
  // communicator is open until its owner aborts or shrinks it.
  bool open() const { return comm_ != nullptr; }
  bool failed() const { return !failure_.ok(); }
  int rank() const { return rank_; }
  int size() const { return size_; }
  int device() const { return device_; }

 private:
  Communicator(Api* api, Comm comm, std::string name, int device, int rank,
               int size, CommunicatorLimits limits);

  // Polls the communicator (and `event`, if one is given, which must have
  // completed too) until DecideWatch says done or abort (then aborts it),
  // `what` naming the wait, within `deadline`.
  common::Status Await(const std::string& what,
                       std::chrono::milliseconds deadline,
                       Event event = nullptr);
  std::optional<std::string> AbortReason();
  // Why the communicator cannot run what `what` asks, if it cannot.
  common::Status Unusable(const std::string& what) const;

  Api* const api_;
  Comm comm_;
  const std::string name_;
  const int device_;
  const int rank_;
  const int size_;
  const CommunicatorLimits limits_;
  common::Status failure_;  // the first failed wait's

  std::mutex mu_;
  std::optional<std::string> abort_reason_;  // guarded by mu_
};

}  // namespace hvd::runtime::nccl
