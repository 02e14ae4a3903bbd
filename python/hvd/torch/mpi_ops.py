"""The synchronous single-tensor collectives of horovod.torch.

``allreduce``, ``allgather``, ``broadcast``, ``alltoall`` and
``reducescatter`` return new tensors and are autograd-aware (see
``autograd``); the in-place ``allreduce_`` and ``broadcast_`` write into
their argument and are not. ``join`` and ``barrier`` synchronize ranks.
Every function takes ``process_set=`` (default: every rank). The
asynchronous variants, ``poll`` and ``synchronize`` live in ``async_ops``
and ``scatter_async``, the grouped collectives in ``grouped_ops``; the
calling protocol and the errors are described in ``async_ops``.
"""

from typing import Any, Optional, Tuple, Union

import torch

import hvd as _hvd

from .async_ops import (allreduce_async_, broadcast_async_, resolve_op,
                        synchronize)
from .autograd import (AllgatherFunction, AllreduceFunction,
                       AlltoallFunction, BroadcastFunction,
                       ReducescatterFunction)
from .compression import Compression, Compressor
from .scatter_async import Splits, check_rows, splits_list
from .tensor_bridge import check_tensor

GLOBAL = _hvd.global_process_set


def allreduce(tensor: torch.Tensor, average: Optional[bool] = None,
              name: Optional[str] = None,
              compression: Compressor = Compression.none,
              op: Optional[Any] = None, prescale_factor: float = 1.0,
              postscale_factor: float = 1.0,
              process_set: Any = GLOBAL) -> torch.Tensor:
    """Reduces ``tensor`` over the ranks of ``process_set``.

    Args:
        tensor: a CPU tensor; every rank passes the same shape and dtype.
        average: deprecated; ``True`` means ``op=Average``, ``False`` Sum.
        name: matches this call across ranks (``allreduce.<name>``).
        compression: ``Compression.none`` or ``Compression.fp16``; the
            reduction runs on the compressed tensor.
        op: ``hvd.Sum, Average, Min, Max, Product, Adasum``; default
            Average. Adasum takes floating-point tensors only.
        prescale_factor: multiplies the input before the reduction.
        postscale_factor: multiplies the result after it.
        process_set: the ranks taking part (default: every rank).

    Returns:
        A new tensor of ``tensor``'s shape and dtype. If ``tensor`` requires
        grad, the result's gradient is allreduced with the same op.
    """
    op = resolve_op(op, average, "allreduce")
    check_tensor(tensor, "allreduce", reduction=True)
    compressed, ctx = compression.compress(tensor)
    reduced = AllreduceFunction.apply(compressed, op, name, prescale_factor,
                                      postscale_factor, process_set)
    return compression.decompress(reduced, ctx)


def allreduce_(tensor: torch.Tensor, average: Optional[bool] = None,
               name: Optional[str] = None, op: Optional[Any] = None,
               prescale_factor: float = 1.0, postscale_factor: float = 1.0,
               process_set: Any = GLOBAL, *,
               compression: Compressor = Compression.none) -> torch.Tensor:
    """Like :func:`allreduce`, but in place: returns ``tensor`` itself."""
    return synchronize(allreduce_async_(
        tensor, average, name, op, prescale_factor, postscale_factor,
        process_set, compression=compression))


def allgather(tensor: torch.Tensor, name: Optional[str] = None,
              process_set: Any = GLOBAL) -> torch.Tensor:
    """Concatenates the set's ranks' ``tensor`` along dimension 0.

    The first dimension may differ between ranks. Autograd-aware: the
    gradient of each rank's rows is the average over the set of theirs.
    """
    check_tensor(tensor, "allgather", reduction=False)
    return AllgatherFunction.apply(tensor, name, process_set)


def broadcast(tensor: torch.Tensor, root_rank: int,
              name: Optional[str] = None,
              process_set: Any = GLOBAL) -> torch.Tensor:
    """Returns ``root_rank``'s ``tensor`` on every rank of the set.

    ``root_rank`` is a global rank. Autograd-aware: the root's gradient is
    the average over the set, the other ranks' gradient is zero.
    """
    check_tensor(tensor, "broadcast", reduction=False)
    return BroadcastFunction.apply(tensor, root_rank, name, process_set)


def broadcast_(tensor: torch.Tensor, root_rank: int,
               name: Optional[str] = None,
               process_set: Any = GLOBAL) -> torch.Tensor:
    """Overwrites ``tensor`` with ``root_rank``'s; returns ``tensor``."""
    return synchronize(broadcast_async_(tensor, root_rank, name,
                                        process_set))


def alltoall(tensor: torch.Tensor, splits: Splits = None,
             name: Optional[str] = None, process_set: Any = GLOBAL
             ) -> Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]:
    """Sends ``splits[i]`` rows of ``tensor`` to the set's i-th rank and
    returns what this rank received (see ``alltoall_async``).

    Returns:
        The received rows, concatenated in sender order; when ``splits`` is
        given, a tuple (rows, received_splits) with received_splits in
        ``splits``' dtype if it is a tensor, else int32. Autograd-aware:
        the gradient travels back by alltoall with the received splits.
    """
    check_rows(tensor, "alltoall")
    values = splits_list(splits, "alltoall")
    output, received = AlltoallFunction.apply(tensor, values, name,
                                              process_set)
    if splits is None:
        return output
    if isinstance(splits, torch.Tensor):
        received = received.to(splits.dtype)
    return output, received


def reducescatter(tensor: torch.Tensor, name: Optional[str] = None,
                  compression: Compressor = Compression.none,
                  op: Any = None, process_set: Any = GLOBAL,
                  prescale_factor: float = 1.0,
                  postscale_factor: float = 1.0) -> torch.Tensor:
    """Reduces ``tensor`` over the set (``op`` Average by default, or Sum)
    and returns this rank's block of rows (see ``reducescatter_async``).

    Autograd-aware, as in horovod: the gradient is the allgather of the
    blocks' gradients, times the scale factors, times the set's size for
    Sum (not for Average).
    """
    op = _hvd.Average if op is None else op
    check_rows(tensor, "reducescatter")
    check_tensor(tensor, "reducescatter", reduction=True)
    compressed, ctx = compression.compress(tensor)
    reduced = ReducescatterFunction.apply(compressed, name, op,
                                          prescale_factor, postscale_factor,
                                          process_set)
    return compression.decompress(reduced, ctx)


def join(device: int = -1, process_set: Any = GLOBAL) -> int:
    """Says this rank has no more data to process, and waits for the rest.

    Until every rank of the set has joined, this rank takes part in the
    others' allreduces and reducescatters with zeros and in their
    allgathers with no rows, so ranks may run different numbers of steps.
    ``device`` exists for horovod's signature (CPU only for now).

    Returns:
        The global rank that joined last, the same on every rank.
    """
    return _hvd.join(device, process_set=process_set)


def barrier(process_set: Any = GLOBAL) -> None:
    """Returns once every rank of the set has called barrier()."""
    _hvd.barrier(process_set=process_set)
