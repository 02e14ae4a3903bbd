// Adasum's pair rule and tree on vectors small enough to work out by hand
// (every expected value below is exact in binary floating point).
#include "ops/adasum.h"

#include <gloo/types.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace hvd::runtime {
namespace {

std::vector<double> Pair(std::vector<double> a, const std::vector<double>& b) {
  AdasumPair(DataType::kFloat64, a.data(), b.data(), a.size());
  return a;
}

// Blocks of rank-major doubles, combined by the tree; block 0 comes back.
std::vector<double> Tree(const std::vector<std::vector<double>>& ranks,
                         const std::vector<size_t>& counts) {
  std::vector<double> blocks;
  for (const auto& block : ranks) {
    blocks.insert(blocks.end(), block.begin(), block.end());
  }
  AdasumTree(DataType::kFloat64, blocks.data(), static_cast<int>(ranks.size()),
             counts);
  return {blocks.begin(), blocks.begin() + ranks.front().size()};
}

using V = std::vector<double>;

TEST(AdasumPairTest, OrthogonalVectorsAdd) {
  EXPECT_EQ(Pair({1, 0}, {0, 2}), (V{1, 2}));
}

TEST(AdasumPairTest, EqualVectorsAverage) {
  EXPECT_EQ(Pair({3, 4}, {3, 4}), (V{3, 4}));
}

TEST(AdasumPairTest, OppositeVectorsCancel) {
  // a.b = -1, |a|^2 = |b|^2 = 1: both factors 1.5.
  EXPECT_EQ(Pair({1, 0}, {-1, 0}), (V{0, 0}));
}

TEST(AdasumPairTest, GeneralCaseByHand) {
  // a.b = 1, |a|^2 = 1, |b|^2 = 2: 0.5 a + 0.75 b.
  EXPECT_EQ(Pair({1, 0}, {1, 1}), (V{1.25, 0.75}));
  EXPECT_EQ(Pair({1, 1}, {1, 0}), (V{1.25, 0.75}));
}

TEST(AdasumPairTest, ZeroVectorLeavesTheOtherWithoutNaN) {
  EXPECT_EQ(Pair({0, 0}, {2, 3}), (V{2, 3}));
  EXPECT_EQ(Pair({2, 3}, {0, 0}), (V{2, 3}));
  EXPECT_EQ(Pair({0, 0}, {0, 0}), (V{0, 0}));
  const AdasumFactors f = AdasumPairFactors(0.0, 0.0, 0.0);
  EXPECT_EQ(f.a, 1.0);
  EXPECT_EQ(f.b, 1.0);
}

TEST(AdasumPairTest, TinyNonZeroNormsStillUseTheRule) {
  // Equal tiny vectors average; they are not mistaken for zero and summed.
  EXPECT_EQ(Pair({1e-30, 0}, {1e-30, 0}), (V{1e-30, 0}));
}

TEST(AdasumPairTest, FloatAndHalf) {
  std::vector<float> a = {1, 0};
  std::vector<float> b = {1, 1};
  AdasumPair(DataType::kFloat32, a.data(), b.data(), 2);
  EXPECT_EQ(a, (std::vector<float>{1.25f, 0.75f}));

  std::vector<gloo::float16> h = {gloo::cpu_float2half_rn(1.0f),
                                  gloo::cpu_float2half_rn(0.0f)};
  std::vector<gloo::float16> k = {gloo::cpu_float2half_rn(1.0f),
                                  gloo::cpu_float2half_rn(1.0f)};
  AdasumPair(DataType::kFloat16, h.data(), k.data(), 2);
  EXPECT_EQ(gloo::cpu_half2float(h[0]), 1.25f);
  EXPECT_EQ(gloo::cpu_half2float(h[1]), 0.75f);
}

TEST(AdasumSupportsTest, FloatingPointOnly) {
  EXPECT_TRUE(AdasumSupports(DataType::kFloat16));
  EXPECT_TRUE(AdasumSupports(DataType::kFloat32));
  EXPECT_TRUE(AdasumSupports(DataType::kFloat64));
  for (DataType t : {DataType::kUInt8, DataType::kInt8, DataType::kInt32,
                     DataType::kInt64}) {
    EXPECT_FALSE(AdasumSupports(t)) << DataTypeName(t);
  }
}

TEST(AdasumTreeTest, OneRankIsUnchanged) {
  EXPECT_EQ(Tree({{1, 2, 3}}, {3}), (V{1, 2, 3}));
}

TEST(AdasumTreeTest, FourRanksPairNeighboursFirst) {
  // (0 1) and (2 3) are orthogonal pairs: (1, 1) each; those are equal and
  // average to (1, 1). A plain sum would give (2, 2).
  EXPECT_EQ(Tree({{1, 0}, {0, 1}, {1, 0}, {0, 1}}, {2}), (V{1, 1}));
  // This input tells the pairings apart: (0 1) = (1, 0), (2 3) = (-1, 1),
  // then 1.5 (1, 0) + 1.25 (-1, 1). Pairing 0 with 2 first would give
  // (1, 1) and (0, 0), so (1, 1).
  EXPECT_EQ(Tree({{1, 0}, {1, 0}, {0, 1}, {-1, 0}}, {2}), (V{0.25, 1.25}));
}

TEST(AdasumTreeTest, ThreeRanksPassTheLastOneUp) {
  // ((0 1) 2): (0 1) = (1, 0), orthogonal to (0, 1): (1, 1). The other
  // shape, (0 (1 2)), would give (1.25, 0.75).
  EXPECT_EQ(Tree({{1, 0}, {1, 0}, {0, 1}}, {2}), (V{1, 1}));
}

TEST(AdasumTreeTest, FiveRanks) {
  // (((0 1) (2 3)) 4): (0 1) = (2, 0), (2 3) = (2, 0), their pair (2, 0),
  // then orthogonal to (0, 3): (2, 3).
  EXPECT_EQ(Tree({{2, 0}, {2, 0}, {2, 0}, {2, 0}, {0, 3}}, {2}), (V{2, 3}));
}

TEST(AdasumTreeTest, ZeroContributionOfAJoinedRankChangesNothing) {
  EXPECT_EQ(Tree({{1, 0}, {0, 0}, {0, 1}}, {2}), (V{1, 1}));
  EXPECT_EQ(Tree({{1, 0}, {1, 1}, {0, 0}, {0, 0}}, {2}), (V{1.25, 0.75}));
}

TEST(AdasumTreeTest, EachFusedTensorHasItsOwnDotProducts) {
  // Tensor A (2 elements) is equal on both ranks: its average (2, 0).
  // Tensor B (1 element) is opposite: factors 1.5, so 0. Over the whole
  // buffer, (2, 0, 5) and (2, 0, -5) would give a first element of
  // 4 (1 + 21/58) instead.
  EXPECT_EQ(Tree({{2, 0, 5}, {2, 0, -5}}, {2, 1}), (V{2, 0, 0}));
}

TEST(AdasumTreeTest, EmptyTensorsInAUnit) {
  EXPECT_EQ(Tree({{1, 0}, {0, 2}}, {0, 2, 0}), (V{1, 2}));
}

}  // namespace
}  // namespace hvd::runtime
