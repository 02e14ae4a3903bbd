// What the fused executors share: names for errors, element counts and the
// packing of a unit's inputs into one buffer.
#pragma once

#include <string>
#include <vector>

#include "ops/executor.h"

namespace hvd::runtime {

// "allreduce 'grad.3'": the entry as errors name it.
std::string What(const TensorEntry& entry);
// The entry, or "fused allreduce of N tensors from 'first'".
std::string UnitName(const std::vector<const TensorEntry*>& entries);
// Bytes of one row: the shape after dimension 0.
size_t RowBytes(const Request& r);
// Every entry's element count, in the unit's order.
std::vector<size_t> Counts(const std::vector<const TensorEntry*>& entries);
// Copies every entry's input into `buffer`, one after another.
void Pack(const std::vector<const TensorEntry*>& entries,
          std::vector<uint8_t>* buffer);
inline void Say(const PhaseFn& phase, const char* activity) {
  if (phase) phase(activity);
}

}  // namespace hvd::runtime
