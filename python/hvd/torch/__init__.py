"""hvd for PyTorch: ``import hvd.torch as hvd``, the horovod.torch API.

A pure-Python layer over the numpy-level ``hvd`` package: torch tensors are
handed to the core as numpy arrays that share their memory (CPU tensors;
CUDA collectives come with the NCCL backend). Modules:

* ``async_ops``: ``*_async`` collectives, ``poll``, ``synchronize``.
* ``mpi_ops``: synchronous and autograd-aware collectives.
* ``compression``: ``Compression.none``, ``Compression.fp16``.
* ``functions``: ``broadcast_parameters``, ``broadcast_optimizer_state``,
  ``broadcast_object``, ``allgather_object``.
* ``optimizer``: ``DistributedOptimizer``.

Typical use::

    import hvd.torch as hvd
    hvd.init()
    opt = torch.optim.SGD(model.parameters(), lr=0.01 * hvd.size())
    opt = hvd.DistributedOptimizer(opt, model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(opt, root_rank=0)
"""

from hvd import (Average, HorovodInternalError, HostsUpdatedInterrupt, Max,
                 Min, MismatchError, Product, Sum, barrier, cross_rank,
                 cross_size, init, is_initialized, local_rank, local_size,
                 rank, shutdown, size)

from .async_ops import (Handle, allgather_async, allreduce_async,
                        allreduce_async_, broadcast_async, broadcast_async_,
                        poll, synchronize)
from .compression import Compression
from .functions import (allgather_object, broadcast_object,
                        broadcast_optimizer_state, broadcast_parameters)
from .mpi_ops import allgather, allreduce, allreduce_, broadcast, broadcast_
from .optimizer import DistributedOptimizer
from . import elastic

__all__ = [
    "init", "shutdown", "is_initialized", "rank", "size", "local_rank",
    "local_size", "cross_rank", "cross_size", "barrier",
    "Sum", "Average", "Min", "Max", "Product",
    "HorovodInternalError", "HostsUpdatedInterrupt", "MismatchError",
    "Handle", "poll", "synchronize",
    "allreduce", "allreduce_", "allreduce_async", "allreduce_async_",
    "allgather", "allgather_async",
    "broadcast", "broadcast_", "broadcast_async", "broadcast_async_",
    "Compression", "DistributedOptimizer",
    "broadcast_parameters", "broadcast_optimizer_state",
    "broadcast_object", "allgather_object",
]
