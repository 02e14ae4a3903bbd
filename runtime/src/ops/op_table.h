// How each collective runs: one row of executors per OpType, so adding a
// collective is a row here, a row of negotiation/op_info.h and an
// executor, not a case in every file. The backends the executors use are
// ops/gloo/, ops/shm/ and ops/nccl/.
#pragma once

#include "hvd/runtime/types.h"
#include "ops/executor.h"

namespace hvd::runtime {

struct OpExecutors {
  OpType type;
  // Exactly one of these for ops that run on a set's backends; neither for
  // process set changes, which change the background loop's own tables.
  FusedExecutor fused;
  SingleExecutor single;
  // The same for CUDA tensors (ops/nccl/executors.h); neither: the op
  // takes host memory only.
  FusedExecutor gpu_fused = nullptr;
  SingleExecutor gpu_single = nullptr;
};

const OpExecutors& OpExecutorsOf(OpType type);

}  // namespace hvd::runtime
