// Adasum, the adaptive summation of Maleki et al. ("Scaling Distributed
// Training with Adaptive Summation", MLSys 2021), as a pure computation on
// host memory: the network part (every rank gets every rank's tensors) is
// ops/gloo/allreduce.cc. Two vectors a and b combine to
//   (1 - a.b / (2 |a|^2)) a + (1 - a.b / (2 |b|^2)) b,
// the sum when they are orthogonal, their average when they are equal.
// Many vectors combine pairwise up a binary tree. Only floating-point data
// types qualify (see AdasumSupports).
#pragma once

#include <cstddef>
#include <vector>

#include "hvd/runtime/types.h"

namespace hvd::runtime {

// float16, float32 and float64: a coefficient times an integer tensor has
// no meaning the integer type could hold.
bool AdasumSupports(DataType dtype);

// The factors of a and b in the pair rule, from a.b, |a|^2 and |b|^2. A zero
// norm gives its vector the factor 1 (it is zero anyway), so a zero vector
// combined with v gives v, and nothing divides by zero.
struct AdasumFactors {
  double a = 1.0;
  double b = 1.0;
};
AdasumFactors AdasumPairFactors(double dot, double a_norm_sq, double b_norm_sq);

// a <- the pair rule of a and b, `count` elements of `dtype` each. Dot
// product and norms are accumulated in double; each result element is
// computed in double and rounded once to `dtype`.
void AdasumPair(DataType dtype, void* a, const void* b, size_t count);

// `blocks` holds `ranks` blocks one after another, block r being rank r's
// contribution: the tensors of `tensor_counts` (elements each) back to
// back. Combines the blocks tensor by tensor (each tensor's dot products
// its own) up a binary tree, leaving the result in block 0: neighbours
// first (0 with 1, 2 with 3, ...), then pairs of those, and so on; where a
// level has an odd number of nodes the last one moves up unchanged, so 3
// ranks give ((0 1) 2). The order is fixed, so equal input gives bitwise
// equal output on every rank. Later blocks are overwritten.
void AdasumTree(DataType dtype, void* blocks, int ranks,
                const std::vector<size_t>& tensor_counts);

}  // namespace hvd::runtime
