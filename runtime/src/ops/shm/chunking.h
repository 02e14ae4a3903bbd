// How the segment is cut: a page of control words, then two buffers of one
// slot per local rank; slices of a chunk start on their own cache lines.
#pragma once

#include <algorithm>
#include <cstddef>

namespace hvd::runtime::shm {

constexpr size_t kPage = 4096;
// Slices start on their own cache lines: two ranks writing neighbouring
// slices would otherwise bounce a line between cores.
constexpr size_t kLine = 64;

inline size_t RoundUp(size_t value, size_t to) {
  return (value + to - 1) / to * to;
}

// The slice of an n-element chunk that local rank k reduces.
struct Slice {
  size_t begin;
  size_t count;
};
inline Slice SliceOf(size_t n, size_t element, int k, int local_size) {
  const size_t line = std::max<size_t>(1, kLine / element);
  const size_t per = RoundUp((n + local_size - 1) / local_size, line);
  const size_t begin = std::min(n, per * k);
  return {begin, std::min(n, begin + per) - begin};
}

}  // namespace hvd::runtime::shm
