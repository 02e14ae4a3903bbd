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

namespace {

// __cuda_array_interface__'s stream: None, 1 (or torch's 0) the legacy
// default stream, 2 the per-thread default, else a cudaStream_t.
void* StreamOf(const py::dict& interface) {
  if (!interface.contains("stream")) return nullptr;
  py::object stream = interface["stream"];
  if (stream.is_none()) return nullptr;
  const auto value = stream.cast<uintptr_t>();
  return value <= 1 ? nullptr : reinterpret_cast<void*>(value);
}

Buffer DeviceBufferOf(const py::object& object, std::string name,
                      bool writable) {
  auto invalid = [&](const std::string& why) {
    Raise(Status::InvalidArgument("'" + name + "': " + why));
  };
  py::dict interface = object.attr("__cuda_array_interface__");
  if (interface.contains("strides") && !interface["strides"].is_none()) {
    invalid("the CUDA array must be C-contiguous (tensor.contiguous())");
  }
  auto data = interface["data"].cast<std::pair<uintptr_t, bool>>();
  if (writable && data.second) invalid("the CUDA array is read-only");
  if (!py::hasattr(object, "device")) {
    invalid("a CUDA array needs a `device` attribute naming its CUDA device");
  }
  Buffer buffer;
  buffer.spec.name = std::move(name);
  buffer.spec.dtype = ValueOrRaise(
      DataTypeOf(py::dtype(interface["typestr"].cast<std::string>())));
  for (auto dim : interface["shape"].cast<py::tuple>()) {
    buffer.spec.shape.push_back(dim.cast<int64_t>());
  }
  buffer.spec.device = object.attr("device").cast<int32_t>();
  buffer.spec.stream = StreamOf(interface);
  buffer.data = reinterpret_cast<void*>(data.first);
  return buffer;
}

}  // namespace

Buffer BufferOf(const py::object& object, std::string name, bool writable) {
  if (py::hasattr(object, "__cuda_array_interface__")) {
    return DeviceBufferOf(object, std::move(name), writable);
  }
  if (!py::isinstance<py::array>(object)) {
    Raise(Status::InvalidArgument("'" + name +
                                  "': expected a numpy array or a CUDA "
                                  "array"));
  }
  auto array = py::reinterpret_borrow<py::array>(object);
  Buffer buffer;
  buffer.spec = SpecOf(array, std::move(name), writable);
  buffer.data = const_cast<void*>(array.data());  // SpecOf checked writable
  return buffer;
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
