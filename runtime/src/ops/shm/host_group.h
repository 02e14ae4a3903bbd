// The shared-memory stage of hierarchical collectives: the ranks of one
// host exchange data through a segment they all map instead of Gloo's
// loopback TCP, and only one slice per rank crosses hosts, over the cross
// context (the ranks with the same local rank, one per host), every local
// rank on its own slice at once so every host's links carry data.
//
// Allreduce on one host: each local rank copies a chunk into its slot,
// reduces its slice of the chunk from every slot (Gloo's reduction
// functions), and every rank copies every slice back (a reduce-scatter and
// an allgather). With several hosts, local rank k reduces its region of the
// whole tensor chunk by chunk, allreduces it across hosts in one Gloo call
// (per chunk, the network's latency would dominate), and shares it back.
// Broadcast: across hosts among the root's local rank, then through the
// root's slot. Allgather: across hosts among equal local ranks, then
// through the slots. Data moves in chunks through two buffers per rank, so
// each chunk costs two barriers and the segment stays small however large
// the tensor.
//
// docs/design.md ("Hierarchical collectives") says when it is used and
// why; one file per collective, as ops/gloo/ has them.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <gloo/context.h>

#include "hvd/common/rank_layout.h"
#include "hvd/common/status.h"
#include "hvd/runtime/config.h"
#include "hvd/runtime/types.h"
#include "transport/abortable_context.h"

namespace hvd::runtime::shm {

class Segment;
class HostBarrier;

// What a generation's runtime hands to HostGroup::Connect for one process
// set.
struct HostGroupSetup {
  const RuntimeConfig* config = nullptr;
  int64_t generation = 0;
  // This rank's place in the set (SetPlace; the job's layout for the
  // global set).
  common::RankLayout place;
  // The set's context: its ranks agree on it whether to use the group.
  std::shared_ptr<gloo::Context> context;
  // Names the set in the segment's name: "s0" for the global set,
  // "s<id>.<serial>" for the others (see ConnectSetContext).
  std::string set_tag = "s0";
  std::shared_ptr<AbortSwitch> abort_switch;
  // Connects the set's cross context (its ranks with this rank's
  // place.local_rank, one per host); called only when hosts are more than
  // one and the group is used, by every rank of the set at once.
  std::function<common::Result<std::shared_ptr<gloo::Context>>()> connect_cross;
};

// Where job rank `job.rank` sits in the process set of `ranks` (ascending
// global ranks, holding job.rank), with hosts as the job's layout has them
// when it is host by host (host h runs ranks h * local_size and on): rank
// and size in the set, local rank and size among the set's ranks on its
// host, cross rank and size among the hosts that run some of the set.
common::RankLayout SetPlace(const common::RankLayout& job,
                            const std::vector<int>& ranks);

class HostGroup {
 public:
  // Every rank of the set calls this once per generation (for the global
  // set) or when the set is made. Null (on every rank: they agree) when the
  // flat path serves: one of the set's ranks per host, hosts with different
  // numbers of them, a job not laid out host by host, both kinds switched
  // off, or a segment that could not be made on some host (logged).
  static common::Result<std::unique_ptr<HostGroup>> Connect(
      const HostGroupSetup& setup);
  ~HostGroup();

  bool allreduce_on() const { return allreduce_on_; }
  // Autotune's choice (the same on every rank, in the same cycle).
  void set_allreduce_on(bool on) { allreduce_on_ = on; }
  bool allgather_on() const { return allgather_on_; }

  // Every rank of the set with the same arguments but `data`.
  common::Status Allreduce(DataType dtype, ReduceOp op, void* data,
                           size_t count, const std::string& what);
  common::Status Broadcast(void* data, size_t bytes, int root,
                           const std::string& what);
  // `bytes_by_rank[r]` from the set's rank r, concatenated in rank order
  // into `output`.
  common::Status Allgather(const void* input,
                           const std::vector<size_t>& bytes_by_rank,
                           void* output, const std::string& what);
  // `bytes` from every rank to rank 0's `output` (size() * bytes, in rank
  // order; unused elsewhere): through the segment to each host's local
  // rank 0, then across hosts among them.
  common::Status Gather(const void* input, size_t bytes, void* output,
                        const std::string& what);

  // This rank's place in the set, and the set's size.
  int rank() const { return place_.rank; }
  int size() const { return place_.size; }
  const common::RankLayout& place() const { return place_; }

 private:
  HostGroup(const RuntimeConfig& config, const common::RankLayout& place,
            bool allreduce_on, bool allgather_on,
            std::unique_ptr<Segment> segment,
            std::shared_ptr<AbortSwitch> abort_switch);

  // Allreduce with more than one host (allreduce.cc).
  common::Status AllreduceAcrossHosts(DataType dtype, ReduceOp op, void* data,
                                      size_t count, const std::string& what);
  // Rank `local_rank`'s slot in the buffer this step uses.
  uint8_t* Slot(int local_rank) const;
  // A Gloo call on the cross context; a failure breaks the segment so the
  // other local ranks stop waiting at once.
  common::Status Cross(const std::string& what,
                       const std::function<void()>& call);

  const common::RankLayout place_;
  bool allreduce_on_;
  const bool allgather_on_;
  std::unique_ptr<Segment> segment_;
  const size_t chunk_bytes_;
  std::shared_ptr<gloo::Context> cross_;  // null on one host
  std::atomic<bool> aborted_{false};
  std::unique_ptr<HostBarrier> barrier_;
  std::shared_ptr<AbortSwitch> abort_switch_;
  int abort_subscription_ = -1;
  // Local rank 0 with several hosts: its host's part of a Gather.
  std::vector<uint8_t> host_block_;
  // Which of the two buffers the next step writes.
  int parity_ = 0;
};

}  // namespace hvd::runtime::shm
