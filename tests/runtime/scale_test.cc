#include <gtest/gtest.h>

#include <gloo/types.h>

#include <cstdint>
#include <vector>

#include "ops/executor.h"

namespace hvd::runtime {
namespace {

TEST(ScaleBufferTest, IntegerAverageTruncatesTowardZero) {
  std::vector<int32_t> values = {7, -7, 6, 2, -2};
  ScaleBuffer(DataType::kInt32, values.data(), values.size(), 1.0, 3);
  EXPECT_EQ(values, (std::vector<int32_t>{2, -2, 2, 0, 0}));
}

TEST(ScaleBufferTest, ExactForEveryMultipleOfTheDivisor) {
  // x * (1/size) would round some of these below the integer.
  for (int size = 1; size <= 64; ++size) {
    std::vector<int64_t> values;
    for (int64_t k = -100; k <= 100; ++k) values.push_back(k * size);
    ScaleBuffer(DataType::kInt64, values.data(), values.size(), 1.0, size);
    for (size_t i = 0; i < values.size(); ++i) {
      ASSERT_EQ(values[i], static_cast<int64_t>(i) - 100) << "size " << size;
    }
  }
}

TEST(ScaleBufferTest, FloatsAndHalves) {
  std::vector<double> d = {1.0, -3.0};
  ScaleBuffer(DataType::kFloat64, d.data(), d.size(), 0.5);
  EXPECT_EQ(d, (std::vector<double>{0.5, -1.5}));
  std::vector<gloo::float16> h = {gloo::cpu_float2half_rn(3.0f)};
  ScaleBuffer(DataType::kFloat16, h.data(), h.size(), 2.0, 4);
  EXPECT_EQ(gloo::cpu_half2float(h[0]), 1.5f);
}

}  // namespace
}  // namespace hvd::runtime
