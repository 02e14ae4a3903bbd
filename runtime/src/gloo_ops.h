// The collectives on host memory, on Gloo's algorithms (the gloo::allreduce,
// allgatherv, broadcast and barrier API; never the older algorithm classes,
// which must not share a context with it). Each runs one negotiated entry on
// every rank and returns its result; Gloo's exceptions become statuses.
#pragma once

#include <memory>
#include <vector>

#include <gloo/context.h>

#include "hvd/runtime/runtime.h"
#include "tensor_queue.h"

namespace hvd::runtime {

OpResult RunAllreduce(const std::shared_ptr<gloo::Context>& context,
                      const TensorEntry& entry);
// Tensor fusion: allreduces that agree on everything but their shape are
// copied into `buffer` (grown as needed, reused across cycles), reduced with
// one Gloo call and copied out. Returns the one status of them all.
bool CanFuse(const Request& a, const Request& b);
common::Status RunFusedAllreduce(const std::shared_ptr<gloo::Context>& context,
                                 const std::vector<TensorEntry>& entries,
                                 std::vector<uint8_t>* buffer);
// `first_dims`: dimension 0 of every rank's tensor, from the negotiation.
OpResult RunAllgather(const std::shared_ptr<gloo::Context>& context,
                      const TensorEntry& entry,
                      const std::vector<int64_t>& first_dims);
OpResult RunBroadcast(const std::shared_ptr<gloo::Context>& context,
                      const TensorEntry& entry);
OpResult RunBarrier(const std::shared_ptr<gloo::Context>& context);

// Multiplies `count` elements in place by factor / divisor. Integers are
// scaled in double precision and rounded toward zero, so Average of integers
// truncates like C's integer division.
void ScaleBuffer(DataType dtype, void* data, size_t count, double factor,
                 int divisor = 1);

size_t ElementCount(const std::vector<int64_t>& shape);

}  // namespace hvd::runtime
