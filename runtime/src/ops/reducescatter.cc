#include <cstring>

#include "ops/executor.h"
#include "ops/fusion_buffer.h"
#include "ops/reduce.h"
#include "tuning/timeline.h"

namespace hvd::runtime {

using common::Status;

std::vector<int64_t> ReducescatterRows(int64_t rows, int size) {
  std::vector<int64_t> out(size, rows / size);
  for (int64_t rank = 0; rank < rows % size; ++rank) ++out[rank];
  return out;
}

Status RunReducescatter(const Backends& backends,
                        const std::vector<const TensorEntry*>& entries,
                        const std::vector<const Response*>& /*responses*/,
                        std::vector<uint8_t>* buffer,
                        std::vector<OpResult>* results, const PhaseFn& phase) {
  Status status =
      PackAndReduce(backends, entries, buffer, phase, kActivityReducescatter);
  if (!status.ok()) return status;
  const auto& context = backends.context;
  const uint8_t* at = buffer->data();
  for (const TensorEntry* e : entries) {
    const Request& q = e->request;
    const size_t row_bytes = RowBytes(q);
    const std::vector<int64_t> rows =
        ReducescatterRows(q.shape[0], context->size);
    int64_t before = 0;
    for (int rank = 0; rank < context->rank; ++rank) before += rows[rank];
    OpResult result;
    result.shape = q.shape;
    result.shape[0] = rows[context->rank];
    result.data = std::make_shared<std::vector<uint8_t>>(
        static_cast<size_t>(rows[context->rank]) * row_bytes);
    if (!result.data->empty()) {
      std::memcpy(result.data->data(), at + before * row_bytes,
                  result.data->size());
    }
    at += q.shape[0] * row_bytes;
    results->push_back(std::move(result));
  }
  return Status::Ok();
}

}  // namespace hvd::runtime
