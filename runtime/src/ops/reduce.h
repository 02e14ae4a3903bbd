// The reduction allreduce and reducescatter share: prescale, reduce across
// the set on the backend the set allows, postscale (and average).
#pragma once

#include <string>
#include <vector>

#include "ops/executor.h"

namespace hvd::runtime {

// Reduces in place the tensors at `data`, of `counts` elements each, back
// to back, with r's op and factors. Only Adasum looks at the tensors'
// bounds.
common::Status ReduceInPlace(const Backends& backends, const Request& r,
                             void* data, const std::vector<size_t>& counts,
                             const std::string& what);

// Copies every input into `buffer` and reduces it there, telling `phase`
// each step (`activity` names the collective).
common::Status PackAndReduce(const Backends& backends,
                             const std::vector<const TensorEntry*>& entries,
                             std::vector<uint8_t>* buffer, const PhaseFn& phase,
                             const char* activity);

}  // namespace hvd::runtime
