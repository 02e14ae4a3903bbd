// Gloo's elementwise reductions (gloo/math.h) by ReduceOp, shared by the
// flat Gloo path and the shared-memory stage so both compute bitwise the
// same. Files that take their address compile at -O3 (CMakeLists.txt):
// the template instances are only vectorized there.
#pragma once

#include <gloo/math.h>

#include <cstddef>

#include "hvd/runtime/types.h"

namespace hvd::runtime {

// c[i] = a[i] op b[i] for n elements.
using ReduceFn = void (*)(void* c, const void* a, const void* b, size_t n);

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
    case ReduceOp::kAdasum:  // never reaches a reduction function
      break;
  }
  return &gloo::sum<T>;
}

}  // namespace hvd::runtime
