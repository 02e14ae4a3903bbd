// Calls a generic callable with a value of the C++ type behind a DataType,
// so typed code (reductions, scaling) is written once as a template.
#pragma once

#include <gloo/types.h>

#include <cstdint>

#include "hvd/runtime/types.h"

namespace hvd::runtime {

template <typename F>
decltype(auto) WithCppType(DataType dtype, F&& f) {
  switch (dtype) {
    case DataType::kUInt8:
      return f(uint8_t{});
    case DataType::kInt8:
      return f(int8_t{});
    case DataType::kInt32:
      return f(int32_t{});
    case DataType::kInt64:
      return f(int64_t{});
    case DataType::kFloat16:
      return f(gloo::float16{});
    case DataType::kFloat32:
      return f(float{});
    case DataType::kFloat64:
      break;
  }
  return f(double{});
}

}  // namespace hvd::runtime
