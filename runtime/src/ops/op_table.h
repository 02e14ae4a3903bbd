// One row per collective: everything the runtime's parts ask of an op type
// (its name, its timeline activities, what the ranks must agree on, how it
// runs), so adding a collective is a row and an executor, not a case in
// every file. The backends the executors use are ops/gloo/ and ops/shm/.
#pragma once

#include "hvd/runtime/types.h"
#include "ops/executor.h"

namespace hvd::runtime {

// What every rank's request for one tensor must match, besides its name
// and group (coordinator.cc checks each and names the ranks that differ).
enum class Agreement {
  kReduction,  // data type, reduce op, pre- and postscale, shape
  kRows,       // data type, the shape after dimension 0
  kRoot,       // data type, root rank, shape
  kRanks,      // the ranks of a process set to add
  kSetId,      // the id of a process set to remove
  kNothing,
};

struct OpInfo {
  OpType type;
  const char* name;                // Python's and the logs' name
  const char* activity;            // timeline.h
  const char* negotiate_activity;  // timeline.h
  Agreement agreement;
  // Moves tensor data: counted in bytes, and its responses may be cached.
  bool payload;
  // Splits or concatenates along dimension 0, so it needs one.
  bool needs_rows;
  // Runs while some ranks have joined (those contribute zeros or take
  // part), as in Horovod; it refuses the others then.
  bool runs_with_joined_ranks;
  // Exactly one of these for ops that run on a set's backends; neither for
  // process set changes, which change the background loop's own tables.
  FusedExecutor fused;
  SingleExecutor single;
  // The same for CUDA tensors (ops/nccl/executors.h); neither: the op
  // takes host memory only.
  FusedExecutor gpu_fused = nullptr;
  SingleExecutor gpu_single = nullptr;
};

const OpInfo& OpInfoOf(OpType type);

}  // namespace hvd::runtime
