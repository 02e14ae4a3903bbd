// InProcessControlPlane: a process set's ControlPlane (control_plane.h)
// whose members are threads of one process, for unit tests of the
// Controller and Negotiator. Test support only, so it lives with the tests:
// no production code runs ranks as threads.
//
// The members share an InProcessHub. Calls match up by their position in
// each member's sequence of calls (the n-th call of every member is one
// collective), as Gloo's do by slot. As with Gloo over TCP, a gather's
// sender and a broadcast's root return once their bytes are handed over;
// the gather's root and a broadcast's receivers wait for them.
//
// Failures, as a test needs them:
// - every wait ends at the hub's timeout (from the call's start) with
//   kTimeout naming the step and the ranks it waited for: a member that
//   stops calling makes the others fail, not hang;
// - Kill(rank) is a process dying: what any member handed over before is
//   still delivered, but from then on every wait that has not got what it
//   waits for fails at once with kTransport naming the rank, whichever
//   member it waits for (a broken connection, and the failures it cascades
//   into as the failed ranks close theirs); the dead rank's own calls are
//   kAborted;
// - members that disagree on a step (a gather against a broadcast,
//   different byte counts, a rank sending twice) get kInternal, which then
//   fails every wait as a death does.
//
// Thread-safety: the hub is thread-safe; each plane is called by its own
// member's thread only (ControlPlane's rule).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "hvd/common/status.h"
#include "negotiation/control_plane.h"

namespace hvd::runtime {

class InProcessHub {
 public:
  InProcessHub(int size, std::chrono::milliseconds timeout);
  InProcessHub(const InProcessHub&) = delete;
  InProcessHub& operator=(const InProcessHub&) = delete;

  int size() const { return size_; }

  // `rank` has died for `reason`; see the header comment.
  void Kill(int rank, const std::string& reason);

  // The plane of each member, called by that member's thread.
  common::Status Gather(int rank, uint64_t seq, std::string_view what,
                        const void* in, size_t bytes, void* out);
  common::Status Broadcast(int rank, uint64_t seq, std::string_view what,
                           void* buffer, size_t bytes);

 private:
  enum class Kind { kGather, kBroadcast };
  // The n-th collective of the set.
  struct Round {
    Kind kind = Kind::kGather;
    size_t bytes = 0;
    std::vector<std::vector<char>> parts;  // gather: by rank
    std::vector<bool> from;                // gather: which ranks have sent
    int arrived = 0;                       // gather: senders so far
    std::vector<char> data;                // broadcast: the root's bytes
    bool sent = false;                     // broadcast: the root has sent
    int received = 0;                      // broadcast: receivers so far
  };
  // Finds or makes round `seq` for this call, after checking that it
  // agrees with the calls already made to it (else the hub fails).
  // Requires mu_.
  common::Status Join(uint64_t seq, Kind kind, int rank, std::string_view what,
                      size_t bytes, Round** round);
  // The first failure sticks; wakes every wait. Requires mu_.
  void Fail(common::Status status);

  const int size_;
  const std::chrono::milliseconds timeout_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint64_t, Round> rounds_;  // guarded by mu_
  std::vector<bool> dead_;            // guarded by mu_; by rank
  common::Status failed_;             // guarded by mu_; ok until a failure
};

class InProcessControlPlane : public ControlPlane {
 public:
  InProcessControlPlane(std::shared_ptr<InProcessHub> hub, int rank)
      : hub_(std::move(hub)), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return hub_->size(); }
  common::Status Gather(std::string_view what, const void* in, size_t bytes,
                        void* out) override {
    return hub_->Gather(rank_, seq_++, what, in, bytes, out);
  }
  common::Status Broadcast(std::string_view what, void* buffer,
                           size_t bytes) override {
    return hub_->Broadcast(rank_, seq_++, what, buffer, bytes);
  }

 private:
  std::shared_ptr<InProcessHub> hub_;
  const int rank_;
  uint64_t seq_ = 0;  // this member's calls so far
};

// Runs body(rank) for rank 0 .. size - 1, each on its own thread, and
// returns when all have returned. Every wait of a plane is bounded, so this
// is too, as long as `body` only waits on planes.
template <typename Body>
void OnEveryRank(int size, Body body) {
  std::vector<std::thread> threads;
  for (int rank = 0; rank < size; ++rank) threads.emplace_back(body, rank);
  for (std::thread& thread : threads) thread.join();
}

}  // namespace hvd::runtime
