// The Gloo backend: each collective on contiguous host memory over a
// set's Gloo context, through Gloo's algorithms (the gloo::allreduce,
// allgatherv, alltoallv, broadcast and barrier API; never the older
// algorithm classes, which must not share a context with it). One file per
// collective, as ops/shm/ has for the host's shared-memory stage; Gloo's
// exceptions become statuses (gloo_call.h). `what` names the collective in
// errors.
#pragma once

#include <gloo/context.h>

#include <memory>
#include <string>
#include <vector>

#include "hvd/common/status.h"
#include "hvd/runtime/types.h"

namespace hvd::runtime::gloo_ops {

using ContextPtr = std::shared_ptr<gloo::Context>;

// `count` elements at `data`, reduced in place with `op` (not Adasum).
common::Status Allreduce(const ContextPtr& context, DataType dtype, ReduceOp op,
                         void* data, size_t count, const std::string& what);
// Adasum of the tensors at `data`, of `counts` elements each, back to back:
// every rank's tensors to every rank (one allgather), then the same tree on
// each, so every rank ends with bitwise the same result.
common::Status Adasum(const ContextPtr& context, DataType dtype, void* data,
                      const std::vector<size_t>& counts,
                      const std::string& what);
// `bytes_by_rank[r]` from rank r, concatenated in rank order into `output`.
common::Status Allgather(const ContextPtr& context, const void* input,
                         const std::vector<size_t>& bytes_by_rank, void* output,
                         const std::string& what);
common::Status Broadcast(const ContextPtr& context, void* data, size_t bytes,
                         int root, const std::string& what);
// `sent[r]` bytes of `input` to rank r, `received[r]` bytes from rank r
// into `output`, in rank order.
common::Status Alltoall(const ContextPtr& context, const void* input,
                        const std::vector<int64_t>& sent, void* output,
                        const std::vector<int64_t>& received,
                        const std::string& what);
common::Status Barrier(const ContextPtr& context, const std::string& what);

}  // namespace hvd::runtime::gloo_ops
