#include "hvd/runtime/types.h"

#include "negotiation/op_info.h"

namespace hvd::runtime {

size_t DataTypeSize(DataType type) {
  switch (type) {
    case DataType::kUInt8:
    case DataType::kInt8:
      return 1;
    case DataType::kFloat16:
      return 2;
    case DataType::kInt32:
    case DataType::kFloat32:
      return 4;
    case DataType::kInt64:
    case DataType::kFloat64:
      return 8;
  }
  return 0;
}

const char* DataTypeName(DataType type) {
  switch (type) {
    case DataType::kUInt8:
      return "uint8";
    case DataType::kInt8:
      return "int8";
    case DataType::kInt32:
      return "int32";
    case DataType::kInt64:
      return "int64";
    case DataType::kFloat16:
      return "float16";
    case DataType::kFloat32:
      return "float32";
    case DataType::kFloat64:
      return "float64";
  }
  return "unknown";
}

const char* ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kAverage:
      return "average";
    case ReduceOp::kMin:
      return "min";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kProduct:
      return "product";
    case ReduceOp::kAdasum:
      return "adasum";
  }
  return "unknown";
}

const char* OpTypeName(OpType type) {
  if (static_cast<int>(type) >= kOpTypeCount) return "unknown";
  return OpInfoOf(type).name;
}

}  // namespace hvd::runtime
