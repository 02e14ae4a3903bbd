// What a worker learns when it checks in for a generation (elastic mode),
// and its JSON form on the wire. Shared by the driver and the workers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "hvd/common/rank_layout.h"
#include "hvd/common/status.h"

namespace hvd::rendezvous {

// A slot is "<host>:<local rank>": a worker's identity across generations.
std::string SlotName(const std::string& host, int local_rank);

struct WorkerAssignment {
  int64_t generation = 0;
  // On the wire as the top-level fields "rank", "size", "local_rank",
  // "local_size", "cross_rank" and "cross_size".
  common::RankLayout layout;
  // Every rank restores rank 0's state at the start of this generation
  // (some slot is new to the job).
  bool sync = true;
  // The same for every slot of the generation (GenerationPlan's): why the
  // driver formed it, at most kMaxReasonBytes ("slot b:0 failed; host b
  // blacklisted"), and its hosts in rank order with their slots ("a:2").
  std::string reason;
  std::vector<std::string> hosts;
  // With the etcd backend: the generation's key (common/worker_key.h),
  // wrapped for the worker that checked in; "" otherwise.
  std::string generation_key;
};

// A generation's reason is cut to this many bytes (ShortReason).
inline constexpr size_t kMaxReasonBytes = 200;

// `reason` when it fits kMaxReasonBytes; otherwise its start, cut on a
// UTF-8 character boundary, and "...", within the bound.
std::string ShortReason(const std::string& reason);

// The check-in answer's JSON, both ways. `reason`, `hosts` and
// `generation_key` may be missing (empty); a reason beyond kMaxReasonBytes is
// cut (ShortReason).
std::string EncodeAssignment(const WorkerAssignment& assignment);
common::Result<WorkerAssignment> DecodeAssignment(const std::string& json);

}  // namespace hvd::rendezvous
