#include "gloo_ops.h"

#include <gloo/allgather.h>
#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>

#include <cmath>
#include <cstring>
#include <type_traits>

#include "adasum.h"
#include "dtype_dispatch.h"
#include "gloo_call.h"
#include "reduce_function.h"
#include "timeline.h"

namespace hvd::runtime {

using common::Status;

namespace {

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

// Adasum over the set: every rank's tensors to every rank (one allgather),
// then the same tree in the same order on each, so every rank ends with
// bitwise the same result. That moves and holds size() times the data of
// a reduction; docs/design.md weighs it against Horovod's algorithm.
Status AdasumInPlace(const std::shared_ptr<gloo::Context>& context,
                     DataType dtype, void* data,
                     const std::vector<size_t>& counts, size_t count,
                     const std::string& what) {
  const size_t bytes = count * DataTypeSize(dtype);
  std::vector<uint8_t> gathered(bytes * context->size);
  Status status = GlooCall(what, [&] {
    gloo::AllgatherOptions opts(context);
    opts.setInput(static_cast<uint8_t*>(data), bytes);
    opts.setOutput(gathered.data(), gathered.size());
    gloo::allgather(opts);
  });
  if (!status.ok()) return status;
  AdasumTree(dtype, gathered.data(), context->size, counts);
  std::memcpy(data, gathered.data(), bytes);
  return Status::Ok();
}

// Prescale, reduce across ranks, postscale (and average) in place the
// tensors at `data`, of `counts` elements each, back to back. Only Adasum
// looks at the tensors' bounds.
Status ReduceInPlace(const std::shared_ptr<gloo::Context>& context,
                     shm::HostGroup* host, const Request& r, void* data,
                     const std::vector<size_t>& counts,
                     const std::string& what) {
  size_t count = 0;
  for (size_t c : counts) count += c;
  ScaleBuffer(r.dtype, data, count, r.prescale);
  if (context->size > 1 && count > 0 && r.op == ReduceOp::kAdasum) {
    Status status = AdasumInPlace(context, r.dtype, data, counts, count, what);
    if (!status.ok()) return status;
  } else if (host != nullptr && host->allreduce_on() && count > 0) {
    Status status = host->Allreduce(r.dtype, r.op, data, count, what);
    if (!status.ok()) return status;
  } else if (context->size > 1 && count > 0) {
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

namespace {

size_t RowBytes(const Request& r) {
  std::vector<int64_t> row(r.shape.begin() + 1, r.shape.end());
  return ElementCount(row) * DataTypeSize(r.dtype);
}

// Every entry's element count, in the unit's order.
std::vector<size_t> Counts(const std::vector<const TensorEntry*>& entries) {
  std::vector<size_t> counts;
  for (const TensorEntry* e : entries) {
    counts.push_back(ElementCount(e->request.shape));
  }
  return counts;
}

// Copies every entry's input into `buffer`, one after another.
void Pack(const std::vector<const TensorEntry*>& entries,
          std::vector<uint8_t>* buffer) {
  const size_t element = DataTypeSize(entries.front()->request.dtype);
  size_t total = 0;
  for (const TensorEntry* e : entries) total += ElementCount(e->request.shape);
  if (buffer->size() < total * element) buffer->resize(total * element);
  uint8_t* at = buffer->data();
  for (const TensorEntry* e : entries) {
    const size_t bytes = ElementCount(e->request.shape) * element;
    if (bytes > 0) std::memcpy(at, e->input, bytes);
    at += bytes;
  }
}

std::string UnitName(const std::vector<const TensorEntry*>& entries) {
  const TensorEntry& first = *entries.front();
  if (entries.size() == 1) return What(first);
  return "fused " + std::string(OpTypeName(first.request.type)) + " of " +
         std::to_string(entries.size()) + " tensors from '" +
         first.request.name + "'";
}

void Say(const PhaseFn& phase, const char* activity) {
  if (phase) phase(activity);
}

// Copies every input into `buffer` and reduces it there, telling `phase`
// each step (`activity` names the collective).
Status PackAndReduce(const std::shared_ptr<gloo::Context>& context,
                     shm::HostGroup* host,
                     const std::vector<const TensorEntry*>& entries,
                     std::vector<uint8_t>* buffer, const PhaseFn& phase,
                     const char* activity) {
  Say(phase, kActivityMemcpyInFusionBuffer);
  Pack(entries, buffer);
  Say(phase, activity);
  Status status =
      ReduceInPlace(context, host, entries.front()->request, buffer->data(),
                    Counts(entries), UnitName(entries));
  if (status.ok()) Say(phase, kActivityMemcpyOutFusionBuffer);
  return status;
}

// The start of the entries' outputs when they lie back to back in the
// unit's order, each input either its own output or outside them all, as
// gradients that are views of one flat buffer do (see optimizer.py); else
// null. The layout of a unit is its response order on every rank, so one
// rank may take this path while another packs a fusion buffer.
uint8_t* AdjacentOutputs(const std::vector<const TensorEntry*>& entries,
                         size_t element) {
  uint8_t* start = nullptr;
  uint8_t* end = nullptr;
  for (const TensorEntry* e : entries) {
    const size_t bytes = ElementCount(e->request.shape) * element;
    if (bytes == 0) continue;
    auto* out = static_cast<uint8_t*>(e->output);
    if (start != nullptr && out != end) return nullptr;
    if (start == nullptr) start = out;
    end = out + bytes;
  }
  for (const TensorEntry* e : entries) {
    const auto* in = static_cast<const uint8_t*>(e->input);
    if (in != e->output &&
        in + ElementCount(e->request.shape) * element > start && in < end) {
      return nullptr;
    }
  }
  return start;
}

Status Allreduce(const std::shared_ptr<gloo::Context>& context,
                 shm::HostGroup* host,
                 const std::vector<const TensorEntry*>& entries,
                 std::vector<uint8_t>* buffer, const PhaseFn& phase) {
  const TensorEntry& first = *entries.front();
  const Request& r = first.request;
  const size_t element = DataTypeSize(r.dtype);
  if (uint8_t* outputs = AdjacentOutputs(entries, element)) {
    Say(phase, kActivityAllreduce);
    for (const TensorEntry* e : entries) {
      const size_t bytes = ElementCount(e->request.shape) * element;
      if (e->output != e->input && bytes > 0) {
        std::memcpy(e->output, e->input, bytes);
      }
    }
    return ReduceInPlace(context, host, r, outputs, Counts(entries),
                         UnitName(entries));
  }
  Status status =
      PackAndReduce(context, host, entries, buffer, phase, kActivityAllreduce);
  if (!status.ok()) return status;
  const uint8_t* at = buffer->data();
  for (const TensorEntry* e : entries) {
    const size_t bytes = ElementCount(e->request.shape) * element;
    if (bytes > 0) std::memcpy(e->output, at, bytes);
    at += bytes;
  }
  return Status::Ok();
}

// Reduces the whole of every input (Debian's Gloo has no reduce-scatter in
// its current API) and keeps this rank's block of each.
Status Reducescatter(const std::shared_ptr<gloo::Context>& context,
                     shm::HostGroup* host,
                     const std::vector<const TensorEntry*>& entries,
                     std::vector<uint8_t>* buffer,
                     std::vector<OpResult>* results, const PhaseFn& phase) {
  Status status = PackAndReduce(context, host, entries, buffer, phase,
                                kActivityReducescatter);
  if (!status.ok()) return status;
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

// One allgatherv for every entry: rank r contributes its rows of each
// entry in turn, so the output holds, per rank, its rows of each entry.
Status Allgather(const std::shared_ptr<gloo::Context>& context,
                 shm::HostGroup* host,
                 const std::vector<const TensorEntry*>& entries,
                 const std::vector<const Response*>& responses,
                 std::vector<uint8_t>* buffer, std::vector<OpResult>* results,
                 const PhaseFn& phase) {
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
  if (size == 1) {
    std::memcpy(gathered.data(), buffer->data(), total);
  } else if (host != nullptr && host->allgather_on()) {
    Status status = host->Allgather(buffer->data(), bytes_by_rank,
                                    gathered.data(), UnitName(entries));
    if (!status.ok()) return status;
  } else {
    Status status = GlooCall(UnitName(entries), [&] {
      gloo::AllgathervOptions opts(context);
      // Gloo wants a non-null input even for an empty contribution.
      static uint8_t nothing;
      opts.setInput(mine ? buffer->data() : &nothing, mine);
      opts.setOutput(gathered.data(), bytes_by_rank);
      gloo::allgatherv(opts);
    });
    if (!status.ok()) return status;
  }
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

}  // namespace

std::vector<int64_t> ReducescatterRows(int64_t rows, int size) {
  std::vector<int64_t> out(size, rows / size);
  for (int64_t rank = 0; rank < rows % size; ++rank) ++out[rank];
  return out;
}

Status RunFusable(const std::shared_ptr<gloo::Context>& context,
                  shm::HostGroup* host,
                  const std::vector<const TensorEntry*>& entries,
                  const std::vector<const Response*>& responses,
                  std::vector<uint8_t>* buffer, std::vector<OpResult>* results,
                  const PhaseFn& phase) {
  results->clear();
  switch (entries.front()->request.type) {
    case OpType::kAllreduce: {
      Status status = Allreduce(context, host, entries, buffer, phase);
      if (status.ok()) results->resize(entries.size());
      return status;
    }
    case OpType::kReducescatter:
      return Reducescatter(context, host, entries, buffer, results, phase);
    case OpType::kAllgather:
      return Allgather(context, host, entries, responses, buffer, results,
                       phase);
    default:
      return Status::Internal(UnitName(entries) + " is not fusable");
  }
}

OpResult RunBroadcast(const std::shared_ptr<gloo::Context>& context,
                      shm::HostGroup* host, const TensorEntry& entry) {
  const Request& r = entry.request;
  const size_t bytes = ElementCount(r.shape) * DataTypeSize(r.dtype);
  OpResult result;
  if (context->size == 1 || bytes == 0) return result;
  if (host != nullptr) {
    result.status = host->Broadcast(entry.output, bytes, r.root, What(entry));
    return result;
  }
  result.status = GlooCall(What(entry), [&] {
    gloo::BroadcastOptions opts(context);
    opts.setOutput(static_cast<uint8_t*>(entry.output), bytes);
    opts.setRoot(r.root);
    gloo::broadcast(opts);
  });
  return result;
}

OpResult RunAlltoall(const std::shared_ptr<gloo::Context>& context,
                     const TensorEntry& entry,
                     const std::vector<int64_t>& matrix) {
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
  result.status = GlooCall(What(entry), [&] {
    // Bytes as elements: one alltoallv for every data type.
    static uint8_t nothing;
    gloo::AlltoallvOptions opts(context);
    const void* input = entry.input ? entry.input : &nothing;
    opts.setInput(const_cast<uint8_t*>(static_cast<const uint8_t*>(input)),
                  sent);
    opts.setOutput(result.data->empty() ? &nothing : result.data->data(),
                   received);
    gloo::alltoallv(opts);
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
