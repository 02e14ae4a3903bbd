// The executors: what each collective does with its negotiated entries on
// every member of a process set, above the backends that move its bytes
// (ops/gloo/, ops/shm/; later ops/nccl/). An executor packs fused entries
// into one buffer, scales, picks the backend the set and the op allow, and
// shapes the results; op_table.h says which executor serves which op.
#pragma once

#include <gloo/context.h>

#include <functional>
#include <memory>
#include <vector>

#include "hvd/common/status.h"
#include "hvd/runtime/types.h"
#include "negotiation/message.h"
#include "ops/shm/host_group.h"
#include "ops/tensor_entry.h"

namespace hvd::runtime {

namespace nccl {
class Lane;
struct Hierarchy;
}  // namespace nccl

// What a process set offers its collectives: its Gloo context, and its
// host's shared-memory stage when it has one (every rank's says the same
// about which ops use it); for CUDA tensors, its NCCL lane on this rank's
// device (ops/nccl/lane.h).
struct Backends {
  std::shared_ptr<gloo::Context> context;
  shm::HostGroup* host = nullptr;
  nccl::Lane* lane = nullptr;
  // With the lane: its local and cross communicators when the set's
  // allreduce is hierarchical now (HostGroup::allreduce_on, several hosts).
  nccl::Hierarchy* gpu_hierarchy = nullptr;
};

// `phase`, if set, hears each step of an executor start: the copy into the
// fusion buffer, the collective, the copy out (timeline activity names).
using PhaseFn = std::function<void(const char* activity)>;

// A unit of one or more entries of one fusable op type, data type and
// reduce parameters (see fusion_plan.h): entries[i] answers responses[i].
// More than one entry go through `buffer` (grown as needed, reused across
// cycles) and one collective. On success fills `results` (one per entry);
// the status is that of them all.
using FusedExecutorFn = common::Status(
    const Backends& backends, const std::vector<const TensorEntry*>& entries,
    const std::vector<const Response*>& responses, std::vector<uint8_t>* buffer,
    std::vector<OpResult>* results, const PhaseFn& phase);
using FusedExecutor = FusedExecutorFn*;
// One entry of an op that never fuses.
using SingleExecutorFn = OpResult(const Backends& backends,
                                  const Response& response,
                                  const TensorEntry& entry);
using SingleExecutor = SingleExecutorFn*;

// Reducescatter reduces the whole of every input (Debian's Gloo has no
// reduce-scatter in its current API) and keeps this rank's block of each.
FusedExecutorFn RunAllreduce, RunReducescatter, RunAllgather;
// Alltoall's response.sizes is the split matrix, rows rank s sends to rank
// r at [s * size + r]. Join moves no data: its result is the rank that
// joined last.
SingleExecutorFn RunBroadcast, RunAlltoall, RunBarrier, RunJoin;

// Reducescatter splits dimension 0 as evenly as it can; the first
// (rows % size) ranks get one row more.
std::vector<int64_t> ReducescatterRows(int64_t rows, int size);

// Multiplies `count` elements in place by factor / divisor. Integers are
// scaled in double precision and rounded toward zero, so Average of integers
// truncates like C's integer division.
void ScaleBuffer(DataType dtype, void* data, size_t count, double factor,
                 int divisor = 1);

size_t ElementCount(const std::vector<int64_t>& shape);

}  // namespace hvd::runtime
