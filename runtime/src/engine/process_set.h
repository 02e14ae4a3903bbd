// Process sets: subsets of the job's ranks that run collectives among
// themselves. Every rank keeps the same table (ids, member ranks); a member
// also holds the set's Gloo context, tensor queue and negotiator, so each
// set negotiates and runs on its own. Set 0 is every rank.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <gloo/context.h>
#include <gloo/transport/device.h>

#include "engine/tensor_queue.h"
#include "hvd/common/status.h"
#include "hvd/runtime/config.h"
#include "negotiation/controller.h"
#include "ops/shm/host_group.h"
#include "transport/abortable_context.h"
#include "transport/socket_watch.h"

namespace hvd::runtime {

namespace nccl {
class Lane;
}

struct ProcessSet {
  int32_t id = 0;
  std::vector<int> ranks;  // global ranks, ascending
  int rank = -1;           // this worker's rank in the set; -1: not a member
  // Members only:
  std::shared_ptr<gloo::Context> context;
  std::unique_ptr<TensorQueue> queue;
  std::unique_ptr<Controller> controller;
  // The shared-memory stage of hierarchical collectives, which also carries
  // the controller's exchange (ops/shm/host_control_plane.h); null: flat Gloo.
  std::shared_ptr<shm::HostGroup> host;
  // Unnamed collectives get "<op>.noname.<n>" (UnnamedName) from this:
  // every member issues the set's unnamed collectives in the same order.
  // The background thread moves it up to every number the set answers
  // (CatchUpUnnamed), so that a member that had joined, or whose
  // collective was refused, counts on with the others.
  std::atomic<int64_t> unnamed{0};
  // The background thread's HandleTable::QuietWait mark for this set.
  uint64_t activity_seen = 0;
  // The CUDA device of this rank's GPU collectives in the set, fixed by the
  // first one enqueued (-1: none yet); one device per rank and set.
  std::atomic<int32_t> gpu_device{-1};
  // Their NCCL lane on that device, made by the background thread at the
  // set's first GPU collective; null until then.
  std::shared_ptr<nccl::Lane> lane;

  bool member() const { return rank >= 0; }
  int size() const { return static_cast<int>(ranks.size()); }
};

// Raises `set.unnamed` to the highest unnamed number in `responses`, which
// every member receives alike. A member that had joined runs (or only
// sees) the others' unnamed collectives without numbering them itself, and
// a refused collective's number was taken on its own rank only; without
// this, their next unnamed collectives would take numbers the others had
// used, and never match (issue: a join beside a refused allgather).
void CatchUpUnnamed(ProcessSet& set, const std::vector<Response>& responses);

// "[0, 2, 3]", for messages and names.
std::string RanksString(const std::vector<int>& ranks);
std::string RanksString(const std::vector<int64_t>& ranks);

// Checks a user's rank list against a job of `world_size` ranks: not
// empty, every rank in range, none twice. Returns it sorted.
common::Result<std::vector<int>> NormalizeRanks(std::vector<int> ranks,
                                                int world_size);

// Builds set `id`; a member connects its context and its host group (every
// member calls this in the same cycle, with the same `serial`,
// ProcessSetTable::inserted()) and records its connections in `sockets`.
common::Result<std::shared_ptr<ProcessSet>> ConnectProcessSet(
    const RuntimeConfig& config,
    const std::shared_ptr<gloo::transport::Device>& device,
    const std::shared_ptr<AbortSwitch>& abort_switch, int64_t generation,
    int32_t id, int64_t serial, std::vector<int> ranks, WorkSignal* signal,
    const ControllerOptions& options, std::vector<SocketId>* sockets);

// How a member's controller exchanges its lists: through the set's host
// group when it has one, else over its Gloo context.
std::unique_ptr<ControlPlane> ControlPlaneOf(const ProcessSet& set);

// The table, read by the threads that enqueue and changed by the background
// thread only.
class ProcessSetTable {
 public:
  void Insert(std::shared_ptr<ProcessSet> set);
  std::shared_ptr<ProcessSet> Find(int32_t id) const;
  std::shared_ptr<ProcessSet> FindByRanks(const std::vector<int>& ranks) const;
  std::shared_ptr<ProcessSet> Remove(int32_t id);
  std::vector<std::shared_ptr<ProcessSet>> All() const;  // by id
  // The id the next added set gets; every rank counts the same way. As in
  // Horovod, the ids of removed sets are given again first, oldest removal
  // first.
  int32_t next_id() const;
  // How many sets were ever inserted: the same on every rank, as every rank
  // adds and removes sets in the same cycles. Keys a new set's rendezvous
  // (ConnectProcessSet) so that a set given a removed set's id again does
  // not read the addresses the removed one published.
  int64_t inserted() const;

 private:
  mutable std::mutex mu_;
  std::map<int32_t, std::shared_ptr<ProcessSet>> sets_;
  int32_t next_id_ = 0;
  int64_t inserted_ = 0;
  std::deque<int32_t> free_ids_;
};

}  // namespace hvd::runtime
