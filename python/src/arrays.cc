#include "arrays.h"

#include <string>

#include "errors.h"

namespace hvd::python {

namespace py = pybind11;
using common::Status;
using runtime::DataType;

namespace {

common::Result<DataType> DataTypeOf(const py::dtype& dtype) {
  const char kind = dtype.kind();
  const auto size = dtype.itemsize();
  if (kind == 'u' && size == 1) return DataType::kUInt8;
  if (kind == 'i' && size == 1) return DataType::kInt8;
  if (kind == 'i' && size == 4) return DataType::kInt32;
  if (kind == 'i' && size == 8) return DataType::kInt64;
  if (kind == 'f' && size == 2) return DataType::kFloat16;
  if (kind == 'f' && size == 4) return DataType::kFloat32;
  if (kind == 'f' && size == 8) return DataType::kFloat64;
  return Status::InvalidArgument(
      "unsupported dtype " +
      py::str(static_cast<const py::handle&>(dtype)).cast<std::string>() +
      "; hvd supports uint8, int8, int32, int64, float16, float32, float64");
}

}  // namespace

runtime::TensorSpec SpecOf(const py::array& array, std::string name,
                           bool writable) {
  if (!(array.flags() & py::array::c_style)) {
    Raise(Status::InvalidArgument("'" + name +
                                  "': the array must be C-contiguous"));
  }
  if (writable && !array.writeable()) {
    Raise(Status::InvalidArgument("'" + name + "': the array is read-only"));
  }
  runtime::TensorSpec spec;
  spec.name = std::move(name);
  spec.dtype = ValueOrRaise(DataTypeOf(array.dtype()));
  for (py::ssize_t i = 0; i < array.ndim(); ++i) {
    spec.shape.push_back(array.shape(i));
  }
  return spec;
}

py::array BytesArray(std::shared_ptr<std::vector<uint8_t>> data) {
  auto* owner = new std::shared_ptr<std::vector<uint8_t>>(std::move(data));
  py::capsule keep(owner, [](void* p) {
    delete static_cast<std::shared_ptr<std::vector<uint8_t>>*>(p);
  });
  auto& bytes = **owner;
  return py::array_t<uint8_t>({static_cast<py::ssize_t>(bytes.size())},
                              bytes.data(), keep);
}

}  // namespace hvd::python
