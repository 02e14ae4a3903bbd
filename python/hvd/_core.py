"""Loads the compiled runtime (_hvd_core) and hands it the exception types."""

import os

try:
    import _hvd_core as core
except ImportError as e:  # pragma: no cover - only without a build
    raise ImportError(
        "hvd's compiled runtime (_hvd_core) is missing or broken: run "
        "scripts/setup.sh in the hvd checkout, which builds it and puts it on "
        f"this Python's path ({e})") from e

from .exceptions import (ForkedProcessError, HorovodInternalError,
                         InvalidArgumentError, MismatchError,
                         RemovedFromJobError)

core.set_exception_types(HorovodInternalError, MismatchError,
                         RemovedFromJobError, ForkedProcessError,
                         InvalidArgumentError)

# The worker's own keys stay with the runtime, out of the environment that
# the user's code and the programs it starts see (HVD_KEEP_WORKER_KEY=1
# keeps them there; docs/security.md).
for _taken in core.take_worker_keys():
    os.environ.pop(_taken, None)
