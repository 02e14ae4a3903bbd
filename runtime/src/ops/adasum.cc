#include "ops/adasum.h"

#include <cstdint>
#include <type_traits>

#include "ops/dtype_dispatch.h"

namespace hvd::runtime {

namespace {

template <typename T>
double ToDouble(T x) {
  if constexpr (std::is_same_v<T, gloo::float16>) {
    return static_cast<double>(gloo::cpu_half2float(x));
  } else {
    return static_cast<double>(x);
  }
}

template <typename T>
T FromDouble(double x) {
  if constexpr (std::is_same_v<T, gloo::float16>) {
    return gloo::cpu_float2half_rn(static_cast<float>(x));
  } else {
    return static_cast<T>(x);
  }
}

template <typename T>
void Pair(T* a, const T* b, size_t count) {
  double dot = 0.0;
  double a_norm_sq = 0.0;
  double b_norm_sq = 0.0;
  for (size_t i = 0; i < count; ++i) {
    const double x = ToDouble(a[i]);
    const double y = ToDouble(b[i]);
    dot += x * y;
    a_norm_sq += x * x;
    b_norm_sq += y * y;
  }
  const AdasumFactors f = AdasumPairFactors(dot, a_norm_sq, b_norm_sq);
  for (size_t i = 0; i < count; ++i) {
    a[i] = FromDouble<T>(f.a * ToDouble(a[i]) + f.b * ToDouble(b[i]));
  }
}

}  // namespace

bool AdasumSupports(DataType dtype) {
  return dtype == DataType::kFloat16 || dtype == DataType::kFloat32 ||
         dtype == DataType::kFloat64;
}

AdasumFactors AdasumPairFactors(double dot, double a_norm_sq,
                                double b_norm_sq) {
  AdasumFactors f;
  if (a_norm_sq > 0.0) f.a = 1.0 - dot / (2.0 * a_norm_sq);
  if (b_norm_sq > 0.0) f.b = 1.0 - dot / (2.0 * b_norm_sq);
  return f;
}

void AdasumPair(DataType dtype, void* a, const void* b, size_t count) {
  WithCppType(dtype, [&](auto type) {
    using T = decltype(type);
    if constexpr (std::is_same_v<T, gloo::float16> ||
                  std::is_floating_point_v<T>) {
      Pair(static_cast<T*>(a), static_cast<const T*>(b), count);
    }
  });
}

void AdasumTree(DataType dtype, void* blocks, int ranks,
                const std::vector<size_t>& tensor_counts) {
  const size_t element = DataTypeSize(dtype);
  size_t block_elements = 0;
  for (size_t count : tensor_counts) block_elements += count;
  auto* base = static_cast<uint8_t*>(blocks);
  auto block = [&](int rank) { return base + rank * block_elements * element; };
  // At distance `step`, node `left` (the tree of ranks left..left+step-1)
  // takes in node left+step; a last node without a partner waits a level.
  for (int step = 1; step < ranks; step *= 2) {
    for (int left = 0; left + step < ranks; left += 2 * step) {
      uint8_t* a = block(left);
      const uint8_t* b = block(left + step);
      for (size_t count : tensor_counts) {
        AdasumPair(dtype, a, b, count);
        a += count * element;
        b += count * element;
      }
    }
  }
}

}  // namespace hvd::runtime
