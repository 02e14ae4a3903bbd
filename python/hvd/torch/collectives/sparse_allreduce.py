"""sparse_allreduce_async: a sparse COO tensor reduced by two allgathers
(its indices and its values), as horovod's sparse allreduce. Its own
module, as it is built on allgather, whose gradient is an allreduce."""

from typing import Any, Optional

import torch

import hvd as _hvd
from hvd.exceptions import InvalidArgumentError, InvalidArgumentTypeError

from .allgather import allgather_async
from .arguments import set_ranks
from .handles import SparseHandle


def sparse_allreduce_async(tensor: torch.Tensor, name: Optional[str],
                           op: Any,
                           process_set: Any = _hvd.global_process_set
                           ) -> SparseHandle:
    """Starts reducing a sparse COO ``tensor`` over the set's ranks.

    Every rank's indices and values are allgathered (``<name>.indices``,
    ``<name>.values``); the result has the same shape, all ranks' entries
    (not coalesced: an index several ranks hold appears once per rank, and
    torch adds them up when it coalesces), with values divided by the
    set's size for ``op=hvd.Average``. Only Average and Sum are sums.

    Returns:
        A :class:`SparseHandle`; ``synchronize(handle)`` (or, as in
        horovod, ``handle()``) gives the sparse result.

    Raises:
        InvalidArgumentTypeError (a TypeError): ``tensor`` is not a sparse
            COO tensor.
        InvalidArgumentError (a ValueError): ``op`` is neither Average nor
            Sum.
    """
    if not isinstance(tensor, torch.Tensor) or tensor.layout != \
            torch.sparse_coo:
        raise InvalidArgumentTypeError(
            "hvd.torch.sparse_allreduce_async expects a sparse "
            "COO tensor (torch.sparse_coo), got "
            f"{getattr(tensor, 'layout', type(tensor).__name__)}")
    if op not in (_hvd.Average, _hvd.Sum):
        raise InvalidArgumentError("hvd.torch.sparse_allreduce_async supports "
                                   "op=hvd.Average and op=hvd.Sum only")
    # Allgather concatenates dimension 0: indices go as (nnz, sparse_dim).
    indices = tensor._indices().t().contiguous()
    values = tensor._values().contiguous()
    suffix = (lambda part: None) if name is None else \
        (lambda part: f"{name}.{part}")
    indices_handle = allgather_async(indices, name=suffix("indices"),
                                     process_set=process_set)
    values_handle = allgather_async(values, name=suffix("values"),
                                    process_set=process_set)
    divisor = len(set_ranks(process_set)) if op == _hvd.Average else 1
    return SparseHandle(indices_handle, values_handle, tensor, divisor)
