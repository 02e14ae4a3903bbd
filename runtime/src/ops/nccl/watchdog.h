// The decisions of an NCCL communicator's life, as pure functions of the
// time and what NCCL and the job said (communicator.h carries them out):
// how long to keep waiting on a non-blocking call, and whether a new
// generation can shrink the old communicator or must build a new one.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hvd/common/status.h"
#include "ops/nccl/nccl_api.h"

namespace hvd::runtime::nccl {

using Clock = std::chrono::steady_clock;

// One wait on a communicator: what it waits for ("init of set 0 on device
// 1", for messages), since when, for how long at most, what NCCL says now,
// and the reason of an abort someone asked for (the driver's Abort push,
// a reset), if any.
struct Watch {
  std::string what;
  Clock::time_point started;
  std::chrono::milliseconds deadline{0};
  CommState state;
  std::optional<std::string> abort_reason;
};

enum class Verdict {
  kWait,  // poll again
  kDone,  // NCCL finished the call
  kFail,  // the communicator failed; `status` is the error callers get
};
struct WatchAction {
  Verdict verdict = Verdict::kWait;
  common::Status status;
};

// An abort asked for wins over everything; then NCCL's error; then success;
// then the deadline (a hung or dead peer NCCL has not noticed).
WatchAction DecideWatch(const Watch& watch, Clock::time_point now);

// How a new generation gets its communicator from the old one: keep it as
// it is, shrink it, or (neither) abort it and init a new one.
struct ResetPlan {
  bool keep = false;
  bool shrink = false;
  std::vector<int> excluded;  // with shrink: the old ranks that left
  // With shrink: NCCL ends the old one's pending work first (a member's
  // generation failed, so it may have some).
  bool abort_first = false;
  std::string why;  // with init: why neither serves
};

// `old_rank_of` holds, for each rank of the new generation in order, its
// rank in the old communicator (-1: it was not in it), as every member
// learns by an allgather, so every member decides alike. The old one is
// kept when every old rank is back in its place; it is shrunk when nobody
// is new, the survivors' new ranks follow their old order and somebody
// left, with NCCL 2.27 or newer (`nccl_version`).
ResetPlan PlanReset(int old_size, const std::vector<int>& old_rank_of,
                    int nccl_version);

// What one member of a process set's new generation brings of the set's
// last communicator (the lane its generation left, gpus.h): that
// generation, its rank and size there, on the device it uses now, and
// whether that generation failed here; the NCCL it runs; and whether it
// refuses to keep or shrink (HVD_NCCL_SHRINK=0). generation -1: none (new
// to the job, on another device, or its communicator is gone).
struct Inheritance {
  int64_t generation = -1;
  int rank = -1;
  int size = 0;
  bool failed = false;
  int nccl_version = 0;
  bool refuses = false;
};

// The plan every member reaches from all members' inheritances (in new
// rank order, as an allgather gives them): PlanReset, when they all come
// from one communicator (one generation, one size) and none refuses; the
// oldest member's NCCL counts. A communicator whose generation failed anywhere
// is never kept (it may be broken), and is shrunk with abort_first.
ResetPlan PlanInheritance(const std::vector<Inheritance>& members);

}  // namespace hvd::runtime::nccl
