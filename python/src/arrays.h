// numpy arrays in and out of the runtime: which DataType an array holds, its
// shape, and an array that owns a runtime-allocated result without a copy;
// and CUDA tensors, seen through __cuda_array_interface__.
#pragma once

#include <pybind11/numpy.h>

#include <memory>
#include <vector>

#include "hvd/runtime/types.h"

namespace hvd::python {

// The TensorSpec of a C-contiguous array; ValueError for anything else.
runtime::TensorSpec SpecOf(const pybind11::array& array, std::string name,
                           bool writable);

// What the ops that take CUDA tensors get: a C-contiguous numpy array, or
// an object with __cuda_array_interface__ (version 2 or 3; its "stream",
// if any, is the producer's) and `device`, the CUDA ordinal (as
// hvd.torch's CudaArray gives them). Its spec and data pointer; ValueError
// for anything else.
struct Buffer {
  runtime::TensorSpec spec;
  void* data = nullptr;
};
Buffer BufferOf(const pybind11::object& object, std::string name,
                bool writable);

// A flat uint8 array that keeps `data` alive.
pybind11::array BytesArray(std::shared_ptr<std::vector<uint8_t>> data);

}  // namespace hvd::python
