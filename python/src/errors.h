// Turns a Status into the Python exception of its kind. The exception
// classes live in the pure-Python package (hvd/exceptions.py), which hands
// them over once at import with set_exception_types().
#pragma once

#include <pybind11/pybind11.h>

#include "hvd/common/status.h"

namespace hvd::python {

void SetExceptionTypes(pybind11::object internal_error,
                       pybind11::object mismatch_error,
                       pybind11::object removed_error,
                       pybind11::object forked_error,
                       pybind11::object invalid_argument_error);

// Raises the exception for a non-ok status (throws error_already_set).
[[noreturn]] void Raise(const common::Status& status);
// Raises RemovedFromJobError: this worker's slot left the job.
[[noreturn]] void RaiseRemoved(const common::Status& status);
// Raises ForkedProcessError: hvd was used in a fork of the process that
// initialized it.
[[noreturn]] void RaiseForked(const common::Status& status);

template <typename T>
T ValueOrRaise(common::Result<T> result) {
  if (!result.ok()) Raise(result.status());
  return std::move(*result);
}

}  // namespace hvd::python
