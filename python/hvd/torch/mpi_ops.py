"""Compatibility module: the names of Horovod's ``horovod.torch.mpi_ops``.

Code written for Horovod imports collectives from there, e.g.
``from horovod.torch.mpi_ops import allreduce_async``; with hvd that is
``from hvd.torch.mpi_ops import allreduce_async``. This module defines
nothing: it re-exports, from where they live, the names Horovod's module
has (its public functions, the basics, the reduce ops, the process-set
names, ``Compression`` and ``HorovodInternalError``). hvd keeps one module
per collective in ``hvd.torch.collectives`` (``allreduce``, ``allgather``,
``broadcast``, ``alltoall``, ``reducescatter``, ``barrier``, with ``poll``
and ``synchronize`` in ``handles``); new code imports from ``hvd.torch``.

Not re-exported: Horovod's autograd classes (``HorovodAllreduce``, ...),
whose ``apply`` arguments differ from hvd's Functions, and its private
helpers (``_allreduce_async``, ``handle_average_backwards_compatibility``,
``mpi_lib``, ...).
"""

from hvd import (Adasum, Average, HorovodInternalError, Max, Min, Product,
                 ProcessSet, Sum, add_process_set, cross_rank, cross_size,
                 global_process_set, init, is_initialized, local_rank,
                 local_size, rank, remove_process_set, shutdown, size,
                 start_timeline, stop_timeline)
from hvd.build import (ccl_built, cuda_built, ddl_built, gloo_built,
                       gloo_enabled, mpi_built, mpi_enabled,
                       mpi_threads_supported, nccl_built, rocm_built)

from .collectives.allgather import (allgather, allgather_async,
                                    grouped_allgather, grouped_allgather_async)
from .collectives.allreduce import (allreduce, allreduce_, allreduce_async,
                                    allreduce_async_, grouped_allreduce,
                                    grouped_allreduce_,
                                    grouped_allreduce_async,
                                    grouped_allreduce_async_)
from .collectives.alltoall import alltoall, alltoall_async
from .collectives.barrier import barrier, join
from .collectives.broadcast import (broadcast, broadcast_, broadcast_async,
                                    broadcast_async_)
from .collectives.handles import poll, synchronize
from .collectives.reducescatter import (grouped_reducescatter,
                                        grouped_reducescatter_async,
                                        reducescatter, reducescatter_async)
from .collectives.sparse_allreduce import sparse_allreduce_async
from .compression import Compression

__all__ = [
    "init", "shutdown", "is_initialized", "start_timeline", "stop_timeline",
    "size", "local_size", "cross_size", "rank", "local_rank", "cross_rank",
    "mpi_threads_supported", "mpi_enabled", "mpi_built", "gloo_enabled",
    "gloo_built", "nccl_built", "ddl_built", "ccl_built", "cuda_built",
    "rocm_built",
    "Average", "Sum", "Adasum", "Min", "Max", "Product",
    "ProcessSet", "global_process_set", "add_process_set",
    "remove_process_set", "HorovodInternalError", "Compression",
    "allreduce", "allreduce_", "allreduce_async", "allreduce_async_",
    "grouped_allreduce", "grouped_allreduce_", "grouped_allreduce_async",
    "grouped_allreduce_async_", "sparse_allreduce_async",
    "allgather", "allgather_async", "grouped_allgather",
    "grouped_allgather_async",
    "broadcast", "broadcast_", "broadcast_async", "broadcast_async_",
    "alltoall", "alltoall_async",
    "reducescatter", "reducescatter_async", "grouped_reducescatter",
    "grouped_reducescatter_async",
    "join", "barrier", "poll", "synchronize",
]
