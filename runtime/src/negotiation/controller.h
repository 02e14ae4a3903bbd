// A process set's controller: each cycle it turns this rank's new requests
// into the list of responses every member runs now, identical on every
// member. With the response cache on, members first AND their cache-hit
// bit vectors and OR their invalid bit vectors (the first rank gathers and
// combines them and broadcasts the result); hits
// common to all run straight from the cache, and the round trip to the
// coordinator (Negotiator) happens only when some member has a request the
// cache cannot answer, or wants the round for another reason.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "hvd/common/status.h"
#include "hvd/runtime/types.h"
#include "negotiation/control_plane.h"
#include "negotiation/deadlock_detector.h"
#include "negotiation/message.h"
#include "negotiation/negotiator.h"
#include "negotiation/response_cache.h"
#include "negotiation/stall_inspector.h"

namespace hvd::runtime {

struct ControllerOptions {
  size_t cache_capacity = 1024;  // 0: no cache
  // The stall inspector runs on the set's first rank. A cache hit that
  // waits `stall.warn_after` for the other members goes to the coordinator
  // instead, so that the inspector sees it.
  bool stall_check = true;
  StallOptions stall;
  // A set of every rank: when every member has waited this long with no
  // response, its pending collectives fail (deadlock_detector.h). Zero: off.
  // A waiting rank's cache hit that the others have not matched for half
  // of it goes to the coordinator, so that the detector sees it.
  std::chrono::steady_clock::duration deadlock_after{0};
};

class Controller {
 public:
  // Negotiates over `plane` (the set's: Gloo's in the runtime).
  Controller(std::unique_ptr<ControlPlane> plane, std::vector<int> global_ranks,
             const ControllerOptions& options);

  // One cycle on every member: `requests` are those added since the last
  // cycle; `shutdown` asks every member to stop; `waiting`: this rank is
  // blocked in a wait and has enqueued nothing else (HandleTable::QuietWait,
  // asked before the requests were popped).
  common::Result<ResponseList> Cycle(std::vector<Request> requests,
                                     bool shutdown, bool waiting = false);

  ResponseCache& cache() { return cache_; }
  // The set's first rank: the next cycle goes to the coordinator and brings
  // `tuning` to every member.
  void Announce(const Tuning& tuning);
  // Safe from any thread.
  NegotiationStats stats() const;

 private:
  struct Waiting {
    Request request;
    std::chrono::steady_clock::time_point since;
  };
  // Caches the new responses (with this rank's own request for each) and
  // freshens the ones that ran from the cache, in response order.
  void Remember(const std::vector<Response>& responses, size_t cached);
  // The set's first rank: runs the stall inspector about once a second;
  // true when it says to stop (the coordinator then tells every rank).
  bool InspectStalls();
  // The set's first rank: fails every pending collective once the detector
  // has proven a deadlock in an earlier cycle; true when it did.
  bool EndDeadlock();
  // The set's first rank: one cycle's observation for the detector.
  void ObserveWaits(const std::vector<bool>& waiting, bool responded);
  // Cycle() without its clock.
  common::Result<ResponseList> Negotiate(std::vector<Request> requests,
                                         bool shutdown, bool waiting);

  std::unique_ptr<ControlPlane> plane_;
  Negotiator negotiator_;  // borrows *plane_
  ResponseCache cache_;
  std::chrono::steady_clock::duration stall_time_;
  std::unique_ptr<StallInspector> inspector_;   // first rank only
  std::unique_ptr<DeadlockDetector> detector_;  // first rank only, or none
  // A waiting rank's unmatched cache hit goes to the coordinator after this.
  std::chrono::steady_clock::duration hit_patience_;
  // The detector's verdict, acted on at the next cycle's start.
  std::optional<std::string> deadlock_;
  SteadyTime last_inspection_;
  // Cache hits of this rank that not every member has submitted yet.
  std::vector<Waiting> waiting_hits_;
  // Requests sent to the coordinator and not answered yet, by name.
  std::unordered_map<std::string, Request> sent_;
  // This rank has joined and its join has not completed.
  bool joined_ = false;
  bool announcing_ = false;
  std::atomic<int64_t> cycles_{0};
  std::atomic<int64_t> coordinator_rounds_{0};
  std::atomic<int64_t> cache_hits_{0};
  std::atomic<int64_t> negotiation_ns_{0};
};

}  // namespace hvd::runtime
