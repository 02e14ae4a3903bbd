#include <cstring>

#include "ops/executor.h"
#include "ops/fusion_buffer.h"
#include "ops/gloo/gloo_ops.h"
#include "tuning/timeline.h"

namespace hvd::runtime {

using common::Status;

// One allgather for every entry: rank r contributes its rows of each entry
// in turn, so the output holds, per rank, its rows of each entry.
Status RunAllgather(const Backends& backends,
                    const std::vector<const TensorEntry*>& entries,
                    const std::vector<const Response*>& responses,
                    std::vector<uint8_t>* buffer,
                    std::vector<OpResult>* results, const PhaseFn& phase) {
  const auto& context = backends.context;
  const int size = context->size;
  std::vector<size_t> bytes_by_rank(size, 0);
  for (size_t i = 0; i < entries.size(); ++i) {
    const size_t row_bytes = RowBytes(entries[i]->request);
    OpResult result;
    result.shape = entries[i]->request.shape;
    result.shape[0] = 0;
    for (int rank = 0; rank < size; ++rank) {
      bytes_by_rank[rank] += responses[i]->sizes[rank] * row_bytes;
      result.shape[0] += responses[i]->sizes[rank];
    }
    result.data = std::make_shared<std::vector<uint8_t>>(
        static_cast<size_t>(result.shape[0]) * row_bytes);
    results->push_back(std::move(result));
  }
  size_t total = 0;
  for (size_t bytes : bytes_by_rank) total += bytes;
  if (total == 0) return Status::Ok();
  const size_t mine = bytes_by_rank[context->rank];
  Say(phase, kActivityMemcpyInFusionBuffer);
  if (buffer->size() < mine) buffer->resize(mine);
  uint8_t* in = buffer->data();
  for (const TensorEntry* e : entries) {
    const size_t bytes = e->request.shape[0] * RowBytes(e->request);
    if (bytes > 0) std::memcpy(in, e->input, bytes);
    in += bytes;
  }
  std::vector<uint8_t> gathered(total);
  Say(phase, kActivityAllgather);
  Status status;
  if (size == 1) {
    std::memcpy(gathered.data(), buffer->data(), total);
  } else if (backends.host != nullptr && backends.host->allgather_on()) {
    status = backends.host->Allgather(buffer->data(), bytes_by_rank,
                                      gathered.data(), UnitName(entries));
  } else {
    status = gloo_ops::Allgather(context, buffer->data(), bytes_by_rank,
                                 gathered.data(), UnitName(entries));
  }
  if (!status.ok()) return status;
  // Unpack: rank by rank, each entry's rows go after the earlier ranks'.
  Say(phase, kActivityMemcpyOutFusionBuffer);
  std::vector<size_t> filled(entries.size(), 0);
  const uint8_t* at = gathered.data();
  for (int rank = 0; rank < size; ++rank) {
    for (size_t i = 0; i < entries.size(); ++i) {
      const size_t bytes =
          responses[i]->sizes[rank] * RowBytes(entries[i]->request);
      if (bytes > 0) {
        std::memcpy((*results)[i].data->data() + filled[i], at, bytes);
      }
      filled[i] += bytes;
      at += bytes;
    }
  }
  return Status::Ok();
}

}  // namespace hvd::runtime
