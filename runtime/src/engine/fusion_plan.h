// Tensor fusion: which of a cycle's responses run together, packed into one
// buffer and moved with one collective. Every rank plans from the same
// response list, so every rank fuses the same way.
#pragma once

#include <cstddef>
#include <vector>

#include "hvd/runtime/config.h"
#include "negotiation/message.h"

namespace hvd::runtime {

struct FusionOptions {
  // Fused units grow up to this many bytes (HOROVOD_FUSION_THRESHOLD); 0:
  // only the tensors of one grouped op run together.
  size_t threshold = static_cast<size_t>(kDefaultFusionThreshold);
  // Grouped ops' tensors may join other ready tensors (false with
  // HOROVOD_DISABLE_GROUP_FUSION=1). A group always runs as one unit.
  bool group_fusion = true;
};

// Allreduce, reducescatter and allgather responses of the same data type
// (and reduce operation and scale factors) fuse; a group's tensors always
// run together whatever their size. Returns units of response indices in
// execution order (each unit ascending); every index appears once.
std::vector<std::vector<size_t>> PlanFusion(
    const std::vector<Response>& responses, const FusionOptions& options);

// The bytes a response moves through the fusion buffer.
size_t FusionBytes(const Response& response);

}  // namespace hvd::runtime
