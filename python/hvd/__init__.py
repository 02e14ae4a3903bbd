"""hvd: elastic data-parallel training with Horovod's API.

`import hvd` works on numpy arrays and needs nothing else; torch users
`import hvd.torch as hvd`.
"""

from .basics import (cross_rank, cross_size, init, is_initialized,
                     local_rank, local_size, negotiation_stats, rank,
                     shutdown, size, start_timeline, stop_timeline)
from . import elastic
from .build import (ccl_built, cuda_built, ddl_built, gloo_built,
                    gloo_enabled, mpi_built, mpi_enabled,
                    mpi_threads_supported, nccl_built, rocm_built)
from .build import __version__
from .exceptions import (ForkedProcessError, HorovodInternalError,
                         HostsUpdatedInterrupt, InvalidArgumentError,
                         InvalidArgumentTypeError, MismatchError,
                         RemovedFromJobError)
from .objects import allgather_object, broadcast_object
from .ops import (Adasum, Average, Max, Min, Product, Sum, allgather, allgather_async,
                  allreduce, allreduce_, allreduce_async, allreduce_async_,
                  alltoall, alltoall_async, barrier, broadcast, broadcast_,
                  broadcast_async, broadcast_async_, grouped_allgather,
                  grouped_allgather_async, grouped_allreduce,
                  grouped_allreduce_, grouped_allreduce_async,
                  grouped_allreduce_async_, grouped_reducescatter,
                  grouped_reducescatter_async, join, poll, reducescatter,
                  reducescatter_async, synchronize)
from .process_sets import (ProcessSet, add_process_set,
                           get_process_set_ids_and_ranks, global_process_set,
                           remove_process_set)
