#include "ops/nccl/executors.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "ops/fusion_buffer.h"
#include "tuning/timeline.h"

namespace hvd::runtime::nccl {

using common::Result;
using common::Status;

namespace {

bool FloatingPoint(DataType dtype) {
  return dtype == DataType::kFloat16 || dtype == DataType::kFloat32 ||
         dtype == DataType::kFloat64;
}

// Copies every entry's input to its place in the buffer at `at`
// (into_buffer), or its place back to its output, on hvd's stream.
Status CopyEntries(Lane& lane, const std::vector<const TensorEntry*>& entries,
                   uint8_t* at, size_t element, bool into_buffer) {
  for (const TensorEntry* e : entries) {
    const size_t bytes = ElementCount(e->request.shape) * element;
    Status status = into_buffer ? lane.Copy(at, e->input, bytes)
                                : lane.Copy(e->output, at, bytes);
    if (!status.ok()) return status;
    at += bytes;
  }
  return Status::Ok();
}

// The hierarchical allreduce of a unit, packed into the device buffer
// (padded to a whole number of blocks, one per local rank): a reduce-scatter
// among the host's ranks leaves each its block reduced over the host; an
// allreduce across hosts among equal local ranks reduces it over the job;
// an allgather among the host's ranks gives every rank every block. Each
// step in place, on hvd's stream; the host waits once, under the cross
// communicator's watchdog (where a remote peer's death shows).
Status HierarchicalAllreduce(Lane& lane, Hierarchy& hierarchy,
                             const std::vector<const TensorEntry*>& entries,
                             Reduction reduction, const PhaseFn& phase) {
  const Request& r = entries.front()->request;
  const std::string what = UnitName(entries);
  const size_t element = DataTypeSize(r.dtype);
  size_t count = 0;
  for (size_t c : Counts(entries)) count += c;
  const int local_size = hierarchy.local->size();
  const size_t block = (count + local_size - 1) / local_size;
  Result<uint8_t*> buffer = lane.FusionBuffer(block * local_size * element);
  if (!buffer.ok()) return buffer.status().WithContext(what);
  uint8_t* mine = *buffer + hierarchy.local->rank() * block * element;
  Api& api = lane.api();
  Status status = lane.WaitForInputs(entries);
  if (!status.ok()) return status;
  Say(phase, kActivityMemcpyInFusionBuffer);
  status = CopyEntries(lane, entries, *buffer, element, true);
  if (status.ok() && block > 0) {
    Say(phase, kActivityNcclReducescatter);
    status = hierarchy.local->Launch(what, [&](Comm comm) {
      return api.ReduceScatter(*buffer, mine, block, r.dtype, reduction, comm,
                               lane.stream());
    });
  }
  if (status.ok() && block > 0) {
    // The scale was applied once, on the host's stage.
    Say(phase, kActivityNcclAllreduce);
    status = hierarchy.cross->Launch(what, [&](Comm comm) {
      return api.AllReduce(mine, mine, block, r.dtype, {reduction.op, 1.0},
                           comm, lane.stream());
    });
  }
  if (status.ok() && block > 0) {
    Say(phase, kActivityNcclAllgather);
    status = hierarchy.local->Launch(what, [&](Comm comm) {
      return api.AllGather(mine, *buffer, block, r.dtype, comm, lane.stream());
    });
  }
  if (status.ok()) {
    Say(phase, kActivityMemcpyOutFusionBuffer);
    status = CopyEntries(lane, entries, *buffer, element, false);
  }
  if (status.ok()) status = lane.Finish(what, hierarchy.cross.get());
  return status;
}

}  // namespace

Result<Reduction> NcclReduction(const Request& r, int size) {
  const std::string what = std::string(OpTypeName(r.type)) + " '" + r.name +
                           "' of a CUDA tensor with op " + ReduceOpName(r.op);
  if (r.op == ReduceOp::kAdasum) {
    return Status::InvalidArgument(
        what +
        ": hvd runs Adasum on CPU tensors only; move the tensor to "
        "the CPU or use op Average");
  }
  const double factor = r.prescale * r.postscale;
  const bool sums = r.op == ReduceOp::kSum || r.op == ReduceOp::kAverage;
  if (factor == 1.0) return Reduction{r.op, 1.0};
  if (!sums) {
    return Status::InvalidArgument(
        what +
        ": NCCL scales only sums; pass prescale_factor and "
        "postscale_factor 1, or scale the result yourself");
  }
  // Integers take a whole factor on a sum only (an average's 1/size is
  // not one), whatever the set's size, so the request checks can refuse
  // the rest at enqueue.
  if (!FloatingPoint(r.dtype) &&
      (r.op == ReduceOp::kAverage || factor != std::trunc(factor))) {
    return Status::InvalidArgument(
        what + " on " + DataTypeName(r.dtype) + ": NCCL scales integer " +
        "sums by whole numbers only (the scale here is " +
        std::to_string(factor) + "); use a floating-point tensor");
  }
  return Reduction{ReduceOp::kSum,
                   r.op == ReduceOp::kAverage ? factor / size : factor};
}

Status RunNcclAllreduce(const Backends& backends,
                        const std::vector<const TensorEntry*>& entries,
                        const std::vector<const Response*>& /*responses*/,
                        std::vector<uint8_t>* /*buffer*/,
                        std::vector<OpResult>* results, const PhaseFn& phase) {
  Lane& lane = *backends.lane;
  const Request& r = entries.front()->request;
  const std::string what = UnitName(entries);
  Result<Reduction> reduction = NcclReduction(r, lane.communicator().size());
  if (!reduction.ok()) return reduction.status();
  // An integer average truncates once on the flat path; the hierarchy
  // would truncate at each stage.
  if (backends.gpu_hierarchy != nullptr &&
      !(reduction->op == ReduceOp::kAverage && !FloatingPoint(r.dtype))) {
    Status status = HierarchicalAllreduce(lane, *backends.gpu_hierarchy,
                                          entries, *reduction, phase);
    if (status.ok()) results->resize(entries.size());
    return status;
  }
  const size_t element = DataTypeSize(r.dtype);
  size_t count = 0;
  for (size_t c : Counts(entries)) count += c;

  Status status = lane.WaitForInputs(entries);
  const void* send = entries.front()->input;
  void* recv = entries.front()->output;
  if (status.ok() && entries.size() > 1) {
    Result<uint8_t*> buffer = lane.FusionBuffer(count * element);
    if (!buffer.ok()) return buffer.status().WithContext(what);
    Say(phase, kActivityMemcpyInFusionBuffer);
    status = CopyEntries(lane, entries, *buffer, element, true);
    send = recv = *buffer;
  }
  if (status.ok() && count > 0) {
    Say(phase, kActivityNcclAllreduce);
    status = lane.communicator().Launch(what, [&](Comm comm) {
      return lane.api().AllReduce(send, recv, count, r.dtype, *reduction, comm,
                                  lane.stream());
    });
  }
  if (status.ok() && entries.size() > 1) {
    Say(phase, kActivityMemcpyOutFusionBuffer);
    status =
        CopyEntries(lane, entries, static_cast<uint8_t*>(recv), element, false);
  }
  if (status.ok()) status = lane.Finish(what);
  if (status.ok()) results->resize(entries.size());
  return status;
}

Status RunNcclAllgather(const Backends& backends,
                        const std::vector<const TensorEntry*>& entries,
                        const std::vector<const Response*>& responses,
                        std::vector<uint8_t>* /*buffer*/,
                        std::vector<OpResult>* results, const PhaseFn& phase) {
  Lane& lane = *backends.lane;
  const int size = lane.communicator().size();
  const int me = lane.communicator().rank();
  std::vector<OpResult> made(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    OpResult& result = made[i];
    result.shape = entries[i]->request.shape;
    result.shape[0] = 0;
    for (int rank = 0; rank < size; ++rank) {
      result.shape[0] += responses[i]->sizes[rank];
    }
    Result<DeviceBytes> output = lane.AllocateResult(
        static_cast<size_t>(result.shape[0]) * RowBytes(entries[i]->request));
    if (!output.ok()) return output.status().WithContext(UnitName(entries));
    result.device_data = std::move(*output);
  }
  Status status = lane.WaitForInputs(entries);
  if (!status.ok()) return status;
  Say(phase, kActivityNcclAllgather);
  status = lane.communicator().Launch(UnitName(entries), [&](Comm comm) {
    Api& api = lane.api();
    Status launched = api.GroupStart();
    for (size_t i = 0; launched.ok() && i < entries.size(); ++i) {
      const Request& r = entries[i]->request;
      const size_t row_elements = RowBytes(r) / DataTypeSize(r.dtype);
      auto* out = static_cast<uint8_t*>(made[i].device_data.memory.get());
      const std::vector<int64_t>& sizes = responses[i]->sizes;
      if (std::all_of(sizes.begin(), sizes.end(),
                      [&](int64_t n) { return n == sizes[0]; })) {
        if (sizes[0] > 0) {
          launched =
              api.AllGather(entries[i]->input, out, sizes[0] * row_elements,
                            r.dtype, comm, lane.stream());
        }
        continue;
      }
      for (int rank = 0; launched.ok() && rank < size; ++rank) {
        const size_t rows = static_cast<size_t>(responses[i]->sizes[rank]);
        if (rows > 0) {
          launched = api.Broadcast(rank == me ? entries[i]->input : out, out,
                                   rows * row_elements, r.dtype, rank, comm,
                                   lane.stream());
        }
        out += rows * RowBytes(r);
      }
    }
    Status ended = api.GroupEnd();  // closes the group even after a failure
    return launched.ok() ? ended : launched;
  });
  if (status.ok()) status = lane.Finish(UnitName(entries));
  if (status.ok()) *results = std::move(made);
  return status;
}

Status RunNcclReducescatter(const Backends& backends,
                            const std::vector<const TensorEntry*>& entries,
                            const std::vector<const Response*>& /*responses*/,
                            std::vector<uint8_t>* /*buffer*/,
                            std::vector<OpResult>* results,
                            const PhaseFn& phase) {
  Lane& lane = *backends.lane;
  const int size = lane.communicator().size();
  const int me = lane.communicator().rank();
  const std::string what = UnitName(entries);
  Result<Reduction> reduction = NcclReduction(entries.front()->request, size);
  if (!reduction.ok()) return reduction.status();
  std::vector<OpResult> made(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    const Request& r = entries[i]->request;
    made[i].shape = r.shape;
    made[i].shape[0] = ReducescatterRows(r.shape[0], size)[me];
    Result<DeviceBytes> output = lane.AllocateResult(
        static_cast<size_t>(made[i].shape[0]) * RowBytes(r));
    if (!output.ok()) return output.status().WithContext(what);
    made[i].device_data = std::move(*output);
  }
  Status status = lane.WaitForInputs(entries);
  if (!status.ok()) return status;
  Say(phase, kActivityNcclReducescatter);
  status = lane.communicator().Launch(what, [&](Comm comm) {
    Api& api = lane.api();
    Status launched = api.GroupStart();
    for (size_t i = 0; launched.ok() && i < entries.size(); ++i) {
      const Request& r = entries[i]->request;
      const size_t row_elements = RowBytes(r) / DataTypeSize(r.dtype);
      const std::vector<int64_t> rows = ReducescatterRows(r.shape[0], size);
      void* out = made[i].device_data.memory.get();
      if (rows.front() == rows.back()) {  // every rank's block is as long
        if (rows[0] > 0) {
          launched =
              api.ReduceScatter(entries[i]->input, out, rows[0] * row_elements,
                                r.dtype, *reduction, comm, lane.stream());
        }
        continue;
      }
      // NCCL's reduce-scatter takes equal blocks only: reduce each rank's
      // block to it.
      const auto* in = static_cast<const uint8_t*>(entries[i]->input);
      for (int root = 0; launched.ok() && root < size; ++root) {
        if (rows[root] > 0) {
          launched = api.Reduce(in, root == me ? out : nullptr,
                                rows[root] * row_elements, r.dtype, *reduction,
                                root, comm, lane.stream());
        }
        in += rows[root] * RowBytes(r);
      }
    }
    Status ended = api.GroupEnd();  // closes the group even after a failure
    return launched.ok() ? ended : launched;
  });
  if (status.ok()) status = lane.Finish(what);
  if (status.ok()) *results = std::move(made);
  return status;
}

OpResult RunNcclAlltoall(const Backends& backends, const Response& response,
                         const TensorEntry& entry) {
  Lane& lane = *backends.lane;
  const int size = lane.communicator().size();
  const int me = lane.communicator().rank();
  const std::vector<int64_t>& matrix = response.sizes;
  const Request& r = entry.request;
  const size_t row_bytes = RowBytes(r);
  const size_t row_elements = row_bytes / DataTypeSize(r.dtype);
  const std::string what = What(entry);
  OpResult result;
  result.shape = r.shape;
  result.shape[0] = 0;
  for (int rank = 0; rank < size; ++rank) {
    result.sizes.push_back(matrix[rank * size + me]);
    result.shape[0] += result.sizes.back();
  }
  Result<DeviceBytes> output =
      lane.AllocateResult(static_cast<size_t>(result.shape[0]) * row_bytes);
  if (!output.ok()) {
    result.status = output.status().WithContext(what);
    return result;
  }
  result.device_data = std::move(*output);
  result.status = lane.WaitForInputs({&entry});
  if (!result.status.ok()) return result;
  result.status = lane.communicator().Launch(what, [&](Comm comm) {
    Api& api = lane.api();
    const auto* in = static_cast<const uint8_t*>(entry.input);
    auto* out = static_cast<uint8_t*>(result.device_data.memory.get());
    Status launched = api.GroupStart();
    for (int peer = 0; launched.ok() && peer < size; ++peer) {
      const auto rows_out = static_cast<size_t>(matrix[me * size + peer]);
      const auto rows_in = static_cast<size_t>(matrix[peer * size + me]);
      // Both sides read the same matrix, so both skip an empty message.
      if (rows_out > 0) {
        launched = api.Send(in, rows_out * row_elements, r.dtype, peer, comm,
                            lane.stream());
      }
      if (launched.ok() && rows_in > 0) {
        launched = api.Recv(out, rows_in * row_elements, r.dtype, peer, comm,
                            lane.stream());
      }
      in += rows_out * row_bytes;
      out += rows_in * row_bytes;
    }
    Status ended = api.GroupEnd();
    return launched.ok() ? ended : launched;
  });
  if (result.status.ok()) result.status = lane.Finish(what);
  return result;
}

OpResult RunNcclBroadcast(const Backends& backends,
                          const Response& /*response*/,
                          const TensorEntry& entry) {
  Lane& lane = *backends.lane;
  const Request& r = entry.request;
  const size_t count = ElementCount(r.shape);
  const std::string what = What(entry);
  OpResult result;
  result.status = lane.WaitForInputs({&entry});
  if (result.status.ok() && count > 0) {
    const void* send = entry.input != nullptr ? entry.input : entry.output;
    result.status = lane.communicator().Launch(what, [&](Comm comm) {
      return lane.api().Broadcast(send, entry.output, count, r.dtype, r.root,
                                  comm, lane.stream());
    });
  }
  if (result.status.ok()) result.status = lane.Finish(what);
  return result;
}

}  // namespace hvd::runtime::nccl
