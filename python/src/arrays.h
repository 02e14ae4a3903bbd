// numpy arrays in and out of the runtime: which DataType an array holds, its
// shape, and an array that owns a runtime-allocated result without a copy.
#pragma once

#include <pybind11/numpy.h>

#include <memory>
#include <vector>

#include "hvd/runtime/types.h"

namespace hvd::python {

// The TensorSpec of a C-contiguous array; ValueError for anything else.
runtime::TensorSpec SpecOf(const pybind11::array& array, std::string name,
                           bool writable);

// A flat uint8 array that keeps `data` alive.
pybind11::array BytesArray(std::shared_ptr<std::vector<uint8_t>> data);

}  // namespace hvd::python
