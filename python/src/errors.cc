#include "errors.h"

namespace hvd::python {

namespace py = pybind11;
using common::Code;

namespace {

// Owned references kept for the life of the process; never released, so
// no destructor runs after the interpreter is gone.
PyObject* g_internal_error = nullptr;
PyObject* g_mismatch_error = nullptr;
PyObject* g_removed_error = nullptr;
PyObject* g_forked_error = nullptr;
PyObject* g_invalid_argument_error = nullptr;

PyObject* ExceptionFor(Code code) {
  switch (code) {
    case Code::kTransport:
    case Code::kTimeout:
    case Code::kAborted:
      // Recoverable by an elastic reset (docs/errors.md).
      if (g_internal_error) return g_internal_error;
      break;
    case Code::kMismatch:
      if (g_mismatch_error) return g_mismatch_error;
      return PyExc_ValueError;
    case Code::kInvalidArgument:
    case Code::kNotFound:
      // A ValueError, and the RuntimeError Horovod raises for a refusal.
      if (g_invalid_argument_error) return g_invalid_argument_error;
      return PyExc_ValueError;
    default:
      break;
  }
  return PyExc_RuntimeError;
}

}  // namespace

void SetExceptionTypes(py::object internal_error, py::object mismatch_error,
                       py::object removed_error, py::object forked_error,
                       py::object invalid_argument_error) {
  g_internal_error = internal_error.release().ptr();
  g_mismatch_error = mismatch_error.release().ptr();
  g_removed_error = removed_error.release().ptr();
  g_forked_error = forked_error.release().ptr();
  g_invalid_argument_error = invalid_argument_error.release().ptr();
}

void RaiseRemoved(const common::Status& status) {
  PyErr_SetString(g_removed_error ? g_removed_error : PyExc_RuntimeError,
                  status.message().c_str());
  throw py::error_already_set();
}

void RaiseForked(const common::Status& status) {
  PyErr_SetString(g_forked_error ? g_forked_error : PyExc_RuntimeError,
                  status.message().c_str());
  throw py::error_already_set();
}

void Raise(const common::Status& status) {
  PyErr_SetString(ExceptionFor(status.code()), status.message().c_str());
  throw py::error_already_set();
}

}  // namespace hvd::python
