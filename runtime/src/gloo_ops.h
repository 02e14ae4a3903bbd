// The collectives on host memory, on Gloo's algorithms (the gloo::allreduce,
// allgatherv, alltoallv, broadcast and barrier API; never the older
// algorithm classes, which must not share a context with it). Each runs
// negotiated entries on every member of a process set (`context` is the
// set's) and returns their results; Gloo's exceptions become statuses.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include <gloo/context.h>

#include "hvd/runtime/types.h"
#include "shm/host_group.h"
#include "tensor_queue.h"

namespace hvd::runtime {

// Runs a unit of one or more allreduce, reducescatter or allgather entries
// of one type, data type and reduce parameters (see fusion_plan.h):
// entries[i] answers responses[i]. More than one entry go through `buffer`
// (grown as needed, reused across cycles) and one Gloo call. On success
// fills `results` (one per entry); the status is that of them all.
// `phase`, if set, hears each step start: the copy into the fusion buffer,
// the collective, the copy out (timeline activity names). `host`, if set,
// is the set's shared-memory stage: reductions and allgathers go through it
// when it says they are on (every rank's says the same).
using PhaseFn = std::function<void(const char* activity)>;
common::Status RunFusable(const std::shared_ptr<gloo::Context>& context,
                          shm::HostGroup* host,
                          const std::vector<const TensorEntry*>& entries,
                          const std::vector<const Response*>& responses,
                          std::vector<uint8_t>* buffer,
                          std::vector<OpResult>* results,
                          const PhaseFn& phase = {});

OpResult RunBroadcast(const std::shared_ptr<gloo::Context>& context,
                      shm::HostGroup* host, const TensorEntry& entry);
// `matrix`: rows rank s sends to rank r at [s * size + r].
OpResult RunAlltoall(const std::shared_ptr<gloo::Context>& context,
                     const TensorEntry& entry,
                     const std::vector<int64_t>& matrix);
OpResult RunBarrier(const std::shared_ptr<gloo::Context>& context);

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
