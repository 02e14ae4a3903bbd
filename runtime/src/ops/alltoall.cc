#include <cstring>

#include "ops/executor.h"
#include "ops/fusion_buffer.h"
#include "ops/gloo/gloo_ops.h"

namespace hvd::runtime {

OpResult RunAlltoall(const Backends& backends, const Response& response,
                     const TensorEntry& entry) {
  const auto& context = backends.context;
  const std::vector<int64_t>& matrix = response.sizes;
  const Request& r = entry.request;
  const int size = context->size;
  const size_t row_bytes = RowBytes(r);
  std::vector<int64_t> sent(size), received(size);
  int64_t rows_in = 0;
  for (int rank = 0; rank < size; ++rank) {
    sent[rank] = matrix[context->rank * size + rank] * row_bytes;
    received[rank] = matrix[rank * size + context->rank] * row_bytes;
    rows_in += matrix[rank * size + context->rank];
  }
  OpResult result;
  result.shape = r.shape;
  result.shape[0] = rows_in;
  for (int rank = 0; rank < size; ++rank) {
    result.sizes.push_back(matrix[rank * size + context->rank]);
  }
  result.data = std::make_shared<std::vector<uint8_t>>(rows_in * row_bytes);
  if (size == 1) {
    if (!result.data->empty()) {
      std::memcpy(result.data->data(), entry.input, result.data->size());
    }
    return result;
  }
  result.status =
      gloo_ops::Alltoall(context, entry.input, sent,
                         result.data->empty() ? nullptr : result.data->data(),
                         received, What(entry));
  return result;
}

}  // namespace hvd::runtime
