"""What this build of hvd contains: Horovod's build queries, answered
truthfully (`hvdrun --check-build` prints the same facts).

hvd's controller and CPU collectives are Gloo, always; MPI, DDL, CCL and
ROCm are not part of hvd; NCCL and CUDA come with the GPU backend.
"""

from ._core import core

_FACTS = core.build_info()

__version__ = _FACTS["version"]


def gloo_built():
    """True: hvd is built with Gloo."""
    return _FACTS["gloo"]


def gloo_enabled():
    """True: Gloo is the controller whenever hvd runs (hvd has no other)."""
    return _FACTS["gloo"]


def mpi_built():
    """False: hvd has no MPI controller."""
    return _FACTS["mpi"]


def mpi_enabled():
    """False: hvd has no MPI controller."""
    return _FACTS["mpi"]


def mpi_threads_supported():
    """Raises ValueError, as Horovod does when MPI is not enabled."""
    raise ValueError("MPI is not enabled: hvd's controller is Gloo "
                     "(hvd.mpi_enabled() is False)")


def nccl_built():
    """The NCCL version this build uses (e.g. 22807), or 0 when it has none,
    as in Horovod."""
    return _FACTS["nccl_version"]


def cuda_built():
    """Whether this build runs collectives on CUDA tensors (through NCCL)."""
    return _FACTS["cuda"]


def rocm_built():
    """False: hvd has no ROCm backend."""
    return _FACTS["rocm"]


def ddl_built():
    """False: hvd has no DDL backend."""
    return _FACTS["ddl"]


def ccl_built():
    """False: hvd has no oneCCL backend."""
    return _FACTS["ccl"]


__all__ = ["gloo_built", "gloo_enabled", "mpi_built", "mpi_enabled",
           "mpi_threads_supported", "nccl_built", "cuda_built", "rocm_built",
           "ddl_built", "ccl_built"]
