"""hvd for PyTorch: ``import hvd.torch as hvd``, the horovod.torch API.

A pure-Python layer over the numpy-level ``hvd`` package: torch tensors are
handed to the core as numpy arrays that share their memory (CPU tensors;
CUDA collectives come with the NCCL backend). Modules:

* ``collectives``: one module per collective, holding its asynchronous,
  synchronous (autograd-aware) and grouped forms and its autograd
  Functions: ``allreduce`` (with ``sparse_allreduce_async``),
  ``allgather``, ``broadcast``, ``alltoall``, ``reducescatter``;
  ``barrier`` (``join``, ``barrier``); ``handles`` (``Handle``, ``poll``,
  ``synchronize``, and the calling protocol of every collective: names,
  groups, process sets, errors, autograd); ``arguments`` (the argument
  helpers they share).
* ``mpi_ops``: re-exports the names of Horovod's ``horovod.torch.mpi_ops``,
  for code that imports them from there.
* ``compression``: ``Compression.none``, ``Compression.fp16``.
* ``functions``: ``broadcast_parameters``, ``broadcast_optimizer_state``,
  ``broadcast_object``, ``allgather_object``.
* ``optimizer``: ``DistributedOptimizer``.
* ``sync_batch_norm``: ``SyncBatchNorm``.
* from ``hvd``: ``start_timeline``, ``stop_timeline`` and the build queries
  (``gloo_built``, ``nccl_built``, ``mpi_enabled``, ...).
* process sets (from ``hvd``): ``ProcessSet``, ``global_process_set``,
  ``add_process_set``, ``remove_process_set``,
  ``get_process_set_ids_and_ranks``; ``init(process_sets=...)``. Every
  collective takes ``process_set=``.

Typical use::

    import hvd.torch as hvd
    hvd.init()
    opt = torch.optim.SGD(model.parameters(), lr=0.01 * hvd.size())
    opt = hvd.DistributedOptimizer(opt, model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(opt, root_rank=0)
"""

from hvd import (Adasum, Average, ForkedProcessError, HorovodInternalError,
                 HostsUpdatedInterrupt, InvalidArgumentError,
                 InvalidArgumentTypeError, Max, Min, MismatchError, Product,
                 ProcessSet, Sum,
                 add_process_set, cross_rank, cross_size,
                 get_process_set_ids_and_ranks, global_process_set, init,
                 is_initialized, local_rank, local_size, rank,
                 remove_process_set, shutdown, size, start_timeline,
                 stop_timeline)
from hvd.build import (__version__, ccl_built, cuda_built, ddl_built, gloo_built,
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
from .collectives.handles import Handle, poll, synchronize
from .collectives.reducescatter import (grouped_reducescatter,
                                        grouped_reducescatter_async,
                                        reducescatter, reducescatter_async)
from .collectives.sparse_allreduce import sparse_allreduce_async
from .compression import Compression
from .functions import (allgather_object, broadcast_object,
                        broadcast_optimizer_state, broadcast_parameters)
from .optimizer import DistributedOptimizer
from .sync_batch_norm import SyncBatchNorm
from . import elastic

__all__ = [
    "init", "shutdown", "is_initialized", "rank", "size", "local_rank",
    "local_size", "cross_rank", "cross_size", "barrier", "join",
    "ProcessSet", "global_process_set", "add_process_set",
    "remove_process_set", "get_process_set_ids_and_ranks",
    "Sum", "Average", "Min", "Max", "Product", "Adasum",
    "HorovodInternalError", "HostsUpdatedInterrupt", "MismatchError",
    "ForkedProcessError", "InvalidArgumentError", "InvalidArgumentTypeError",
    "Handle", "poll", "synchronize",
    "allreduce", "allreduce_", "allreduce_async", "allreduce_async_",
    "allgather", "allgather_async",
    "broadcast", "broadcast_", "broadcast_async", "broadcast_async_",
    "sparse_allreduce_async",
    "alltoall", "alltoall_async", "reducescatter", "reducescatter_async",
    "grouped_allreduce", "grouped_allreduce_", "grouped_allreduce_async",
    "grouped_allreduce_async_", "grouped_allgather",
    "grouped_allgather_async", "grouped_reducescatter",
    "grouped_reducescatter_async",
    "Compression", "DistributedOptimizer", "SyncBatchNorm",
    "broadcast_parameters", "broadcast_optimizer_state",
    "broadcast_object", "allgather_object",
    "start_timeline", "stop_timeline",
    "gloo_built", "gloo_enabled", "mpi_built", "mpi_enabled",
    "mpi_threads_supported", "nccl_built", "cuda_built", "rocm_built",
    "ddl_built", "ccl_built",
]
