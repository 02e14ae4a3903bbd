// The collectives on CUDA tensors: the NCCL twins of ops/executor.h's, run
// on a process set's Lane (lane.h). Fused entries are packed into the
// lane's device buffer with copies on hvd's stream, reduced by one NCCL
// call and copied out; inputs are waited for on the device and the host
// waits once, at the end, so no byte goes through the host.
#pragma once

#include <vector>

#include "hvd/common/status.h"
#include "hvd/runtime/types.h"
#include "negotiation/message.h"
#include "ops/executor.h"
#include "ops/nccl/lane.h"
#include "ops/nccl/nccl_api.h"

namespace hvd::runtime::nccl {

// How NCCL runs request `r`'s reduction over `size` ranks: Sum and Average
// directly; prescale and postscale folded, with Average's 1/size, into one
// factor every input is multiplied by before the sum. An error, the same
// on every rank, for what NCCL cannot compute without a kernel of hvd's
// own: scaling Min, Max or Product, scaling integers other than a sum by a
// whole number, Adasum. Whether it is an error does not depend on `size`:
// the request checks refuse those at enqueue.
common::Result<Reduction> NcclReduction(const Request& r, int size);

// On backends.lane; the host buffer is unused (the lane has its own).
// Allreduce is hierarchical with backends.gpu_hierarchy (local
// reduce-scatter, cross allreduce, local allgather, through the device
// buffer), except an integer average, which stays flat.
// Allgather's outputs are device memory it allocates (OpResult's
// device_data), all of a unit's tensors in one NCCL group: ncclAllGather
// where every rank has as many rows, else a broadcast from each rank of
// its rows (NCCL has no allgather of unequal parts).
FusedExecutorFn RunNcclAllreduce, RunNcclAllgather;
// Reducescatter's outputs are device memory too: ncclReduceScatter where
// dimension 0 splits evenly, else a reduce to each rank of its block, all
// of a unit's tensors in one group.
FusedExecutorFn RunNcclReducescatter;
// Alltoall: a send and a receive per peer with rows to move (the split
// matrix of response.sizes), in one group; the output is device memory.
SingleExecutorFn RunNcclBroadcast, RunNcclAlltoall;

}  // namespace hvd::runtime::nccl
