#include "gloo_ops.h"

#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>

#include <cmath>
#include <cstring>
#include <type_traits>

#include "dtype_dispatch.h"
#include "gloo_call.h"

namespace hvd::runtime {

using common::Status;

namespace {

using ReduceFn = void (*)(void*, const void*, const void*, size_t);

template <typename T>
ReduceFn ReduceFunction(ReduceOp op) {
  switch (op) {
    case ReduceOp::kMin:
      return &gloo::min<T>;
    case ReduceOp::kMax:
      return &gloo::max<T>;
    case ReduceOp::kProduct:
      return &gloo::product<T>;
    case ReduceOp::kSum:
    case ReduceOp::kAverage:
      break;
  }
  return &gloo::sum<T>;
}

template <typename T>
void Scale(T* data, size_t count, double factor, int divisor) {
  if constexpr (std::is_same_v<T, gloo::float16>) {
    const float f = static_cast<float>(factor / divisor);
    for (size_t i = 0; i < count; ++i) {
      data[i] = gloo::cpu_float2half_rn(gloo::cpu_half2float(data[i]) * f);
    }
  } else if constexpr (std::is_floating_point_v<T>) {
    const T f = static_cast<T>(factor / divisor);
    for (size_t i = 0; i < count; ++i) data[i] *= f;
  } else {
    // Dividing last keeps x / size exact before the truncation.
    for (size_t i = 0; i < count; ++i) {
      data[i] = static_cast<T>(
          std::trunc(static_cast<double>(data[i]) * factor / divisor));
    }
  }
}

std::string What(const TensorEntry& entry) {
  return std::string(OpTypeName(entry.request.type)) + " '" +
         entry.request.name + "'";
}

}  // namespace

size_t ElementCount(const std::vector<int64_t>& shape) {
  size_t count = 1;
  for (int64_t dim : shape) count *= static_cast<size_t>(dim);
  return count;
}

void ScaleBuffer(DataType dtype, void* data, size_t count, double factor,
                 int divisor) {
  if (factor == 1.0 && divisor == 1) return;
  WithCppType(dtype, [&](auto type) {
    using T = decltype(type);
    Scale(static_cast<T*>(data), count, factor, divisor);
  });
}

namespace {

// Prescale, reduce across ranks, postscale (and average) `count` elements
// of `data` in place.
Status ReduceInPlace(const std::shared_ptr<gloo::Context>& context,
                     const Request& r, void* data, size_t count,
                     const std::string& what) {
  ScaleBuffer(r.dtype, data, count, r.prescale);
  if (context->size > 1 && count > 0) {
    Status status = GlooCall(what, [&] {
      WithCppType(r.dtype, [&](auto type) {
        using T = decltype(type);
        gloo::AllreduceOptions opts(context);
        opts.setOutput(static_cast<T*>(data), count);
        opts.setReduceFunction(ReduceFunction<T>(r.op));
        gloo::allreduce(opts);
      });
    });
    if (!status.ok()) return status;
  }
  const int divisor = r.op == ReduceOp::kAverage ? context->size : 1;
  ScaleBuffer(r.dtype, data, count, r.postscale, divisor);
  return Status::Ok();
}

}  // namespace

OpResult RunAllreduce(const std::shared_ptr<gloo::Context>& context,
                      const TensorEntry& entry) {
  const Request& r = entry.request;
  const size_t count = ElementCount(r.shape);
  const size_t bytes = count * DataTypeSize(r.dtype);
  if (entry.output != entry.input && bytes > 0) {
    std::memcpy(entry.output, entry.input, bytes);
  }
  OpResult result;
  result.status = ReduceInPlace(context, r, entry.output, count, What(entry));
  return result;
}

bool CanFuse(const Request& a, const Request& b) {
  return a.type == OpType::kAllreduce && b.type == OpType::kAllreduce &&
         a.dtype == b.dtype && a.op == b.op && a.prescale == b.prescale &&
         a.postscale == b.postscale;
}

Status RunFusedAllreduce(const std::shared_ptr<gloo::Context>& context,
                         const std::vector<TensorEntry>& entries,
                         std::vector<uint8_t>* buffer) {
  const Request& first = entries.front().request;
  const size_t element = DataTypeSize(first.dtype);
  size_t total = 0;
  for (const TensorEntry& e : entries) total += ElementCount(e.request.shape);
  if (buffer->size() < total * element) buffer->resize(total * element);
  uint8_t* at = buffer->data();
  for (const TensorEntry& e : entries) {
    const size_t bytes = ElementCount(e.request.shape) * element;
    if (bytes > 0) std::memcpy(at, e.input, bytes);
    at += bytes;
  }
  Status status =
      ReduceInPlace(context, first, buffer->data(), total,
                    "fused allreduce of " + std::to_string(entries.size()) +
                        " tensors from '" + first.name + "'");
  if (!status.ok()) return status;
  at = buffer->data();
  for (const TensorEntry& e : entries) {
    const size_t bytes = ElementCount(e.request.shape) * element;
    if (bytes > 0) std::memcpy(e.output, at, bytes);
    at += bytes;
  }
  return Status::Ok();
}

OpResult RunAllgather(const std::shared_ptr<gloo::Context>& context,
                      const TensorEntry& entry,
                      const std::vector<int64_t>& first_dims) {
  const Request& r = entry.request;
  std::vector<int64_t> row_shape(r.shape.begin() + 1, r.shape.end());
  const size_t row_bytes = ElementCount(row_shape) * DataTypeSize(r.dtype);
  OpResult result;
  int64_t total_rows = 0;
  std::vector<size_t> bytes_by_rank;
  for (int64_t rows : first_dims) {
    total_rows += rows;
    bytes_by_rank.push_back(static_cast<size_t>(rows) * row_bytes);
  }
  result.shape = r.shape;
  result.shape[0] = total_rows;
  result.data = std::make_shared<std::vector<uint8_t>>(total_rows * row_bytes);
  if (result.data->empty()) return result;
  if (context->size == 1) {
    std::memcpy(result.data->data(), entry.input, result.data->size());
    return result;
  }
  result.status = GlooCall(What(entry), [&] {
    gloo::AllgathervOptions opts(context);
    // Gloo wants a non-null input even for an empty contribution.
    static uint8_t nothing;
    const void* input = bytes_by_rank[context->rank] ? entry.input : &nothing;
    opts.setInput(const_cast<uint8_t*>(static_cast<const uint8_t*>(input)),
                  bytes_by_rank[context->rank]);
    opts.setOutput(result.data->data(), bytes_by_rank);
    gloo::allgatherv(opts);
  });
  return result;
}

OpResult RunBroadcast(const std::shared_ptr<gloo::Context>& context,
                      const TensorEntry& entry) {
  const Request& r = entry.request;
  const size_t bytes = ElementCount(r.shape) * DataTypeSize(r.dtype);
  OpResult result;
  if (context->size == 1 || bytes == 0) return result;
  result.status = GlooCall(What(entry), [&] {
    gloo::BroadcastOptions opts(context);
    opts.setOutput(static_cast<uint8_t*>(entry.output), bytes);
    opts.setRoot(r.root);
    gloo::broadcast(opts);
  });
  return result;
}

OpResult RunBarrier(const std::shared_ptr<gloo::Context>& context) {
  OpResult result;
  if (context->size == 1) return result;
  result.status = GlooCall("barrier", [&] {
    gloo::BarrierOptions opts(context);
    gloo::barrier(opts);
  });
  return result;
}

}  // namespace hvd::runtime
