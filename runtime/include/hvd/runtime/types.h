// The vocabulary shared by the runtime and its callers: element types,
// reduce operations and collective kinds. Values are part of the wire format
// between ranks (runtime/src/message.cc) and of the Python binding, so they
// only ever get new members at the end.
#pragma once

#include <cstddef>
#include <cstdint>

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

}  // namespace hvd::runtime
