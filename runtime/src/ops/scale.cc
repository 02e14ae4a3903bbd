#include <cmath>
#include <type_traits>

#include "ops/dtype_dispatch.h"
#include "ops/executor.h"

namespace hvd::runtime {

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

}  // namespace hvd::runtime
