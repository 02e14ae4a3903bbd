"""hvd: elastic data-parallel training with Horovod's API.

`import hvd` works on numpy arrays and needs nothing else; torch users
`import hvd.torch as hvd`.
"""

from .basics import (cross_rank, cross_size, init, is_initialized,
                     local_rank, local_size, rank, shutdown, size)
from . import elastic
from .exceptions import (HorovodInternalError, HostsUpdatedInterrupt,
                         MismatchError, RemovedFromJobError)
from .objects import allgather_object, broadcast_object
from .ops import (Average, Max, Min, Product, Sum, allgather, allgather_async,
                  allreduce, allreduce_, allreduce_async, allreduce_async_,
                  barrier, broadcast, broadcast_, broadcast_async,
                  broadcast_async_, poll, synchronize)
