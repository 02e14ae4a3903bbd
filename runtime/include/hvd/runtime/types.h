// The vocabulary shared by the runtime and its callers: element types,
// reduce operations and collective kinds, and the value types of Runtime's
// calls (TensorSpec, AllreduceArgs, OpResult, ...). The enums' values are
// part of the wire format between ranks (runtime/src/negotiation/message.cc)
// and of the Python binding, so they only ever get new members at the end.
//
// The runtime's private code includes this header, never the front door
// hvd/runtime/runtime.h (scripts/test.sh, "layering").
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hvd/common/status.h"

namespace hvd::runtime {

enum class DataType : uint8_t {
  kUInt8 = 0,
  kInt8 = 1,
  kInt32 = 2,
  kInt64 = 3,
  kFloat16 = 4,
  kFloat32 = 5,
  kFloat64 = 6,
};
inline constexpr int kDataTypeCount = 7;

enum class ReduceOp : uint8_t {
  kSum = 0,
  kAverage = 1,
  kMin = 2,
  kMax = 3,
  kProduct = 4,
  // Adaptive summation (runtime/src/adasum.h); floating-point types only.
  kAdasum = 5,
};
inline constexpr int kReduceOpCount = 6;

enum class OpType : uint8_t {
  kAllreduce = 0,
  kAllgather = 1,
  kBroadcast = 2,
  kBarrier = 3,
  kAlltoall = 4,
  kReducescatter = 5,
  kJoin = 6,
  // Changes to the table of process sets, negotiated on the global set.
  kAddProcessSet = 7,
  kRemoveProcessSet = 8,
};
inline constexpr int kOpTypeCount = 9;

size_t DataTypeSize(DataType type);
const char* DataTypeName(DataType type);  // numpy's names: "float32", ...
const char* ReduceOpName(ReduceOp op);    // "sum", "average", ...
const char* OpTypeName(OpType type);      // "allreduce", ...

using Handle = int64_t;

// What a caller describes about one tensor. `data` is read (and for in-place
// ops written) by the background thread until the handle completes; the
// caller keeps it alive until then.
struct TensorSpec {
  // Unique among this rank's in-flight collectives; empty: a generated name
  // "<op>.noname.<n>", which requires the same call order on every rank.
  std::string name;
  DataType dtype = DataType::kFloat32;
  std::vector<int64_t> shape;
  // The process set the collective runs in (0: every rank); this rank must
  // be a member.
  int32_t process_set = 0;
  // Where the data lives: -1 host memory, else the CUDA device's ordinal
  // (the tensor runs through NCCL, docs/gpu.md).
  int32_t device = -1;
  // A CUDA tensor's producer: the cudaStream_t whose work so far writes it
  // (torch.cuda.current_stream().cuda_stream; null: the legacy default
  // stream). hvd's stream waits for that work on the device.
  void* stream = nullptr;
};

struct AllreduceArgs {
  ReduceOp op = ReduceOp::kAverage;
  double prescale = 1.0;
  double postscale = 1.0;
};

// Device memory the runtime allocated for a CUDA tensor's result; the last
// copy of `memory` frees it.
struct DeviceBytes {
  std::shared_ptr<void> memory;
  size_t bytes = 0;
  int32_t device = -1;
};

// A completed handle's result. `data`/`shape` are set for allgather,
// alltoall and reducescatter, whose output size is known only after
// negotiation; for CUDA tensors `device_data` instead of `data`.
struct OpResult {
  common::Status status;
  std::shared_ptr<std::vector<uint8_t>> data;
  std::vector<int64_t> shape;
  // Alltoall: rows received from each rank of the set. Join: the rank that
  // joined last. Adding a process set: its id.
  std::vector<int64_t> sizes;
  DeviceBytes device_data;
};

// How a process set's negotiation went so far on this rank.
struct NegotiationStats {
  int64_t cycles = 0;
  int64_t coordinator_rounds = 0;  // cycles that went to the coordinator
  int64_t cache_hits = 0;          // responses run from the response cache
  // Time in negotiation, waiting for the other members included.
  double negotiation_seconds = 0;
};

// An elastic generation as the driver formed it (the check-in answer): why,
// and on which hosts ("a:2", rank order).
struct GenerationInfo {
  std::string reason;
  std::vector<std::string> hosts;
};

}  // namespace hvd::runtime
