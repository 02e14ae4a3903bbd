"""The synchronous tensor collectives of horovod.torch.

``allreduce``, ``allgather`` and ``broadcast`` return new tensors and are
autograd-aware (see ``autograd``); the in-place ``allreduce_`` and
``broadcast_`` write into their argument and are not. The asynchronous
variants, ``poll`` and ``synchronize`` live in ``async_ops``. The calling
protocol and the errors are described there.
"""

from typing import Any, Optional

import torch

from .async_ops import (allreduce_async_, broadcast_async_, resolve_op,
                        synchronize)
from .autograd import AllgatherFunction, AllreduceFunction, BroadcastFunction
from .compression import Compression, Compressor
from .tensor_bridge import check_tensor


def allreduce(tensor: torch.Tensor, average: Optional[bool] = None,
              name: Optional[str] = None,
              compression: Compressor = Compression.none,
              op: Optional[Any] = None, prescale_factor: float = 1.0,
              postscale_factor: float = 1.0) -> torch.Tensor:
    """Reduces ``tensor`` over all ranks and returns the result.

    Args:
        tensor: a CPU tensor; every rank passes the same shape and dtype.
        average: deprecated; ``True`` means ``op=Average``, ``False`` Sum.
        name: matches this call across ranks (``allreduce.<name>``).
        compression: ``Compression.none`` or ``Compression.fp16``; the
            reduction runs on the compressed tensor.
        op: ``hvd.Sum, Average, Min, Max, Product``; default Average.
        prescale_factor: multiplies the input before the reduction.
        postscale_factor: multiplies the result after it.

    Returns:
        A new tensor of ``tensor``'s shape and dtype. If ``tensor`` requires
        grad, the result's gradient is allreduced with the same op.
    """
    op = resolve_op(op, average, "allreduce")
    check_tensor(tensor, "allreduce", reduction=True)
    compressed, ctx = compression.compress(tensor)
    reduced = AllreduceFunction.apply(compressed, op, name, prescale_factor,
                                      postscale_factor)
    return compression.decompress(reduced, ctx)


def allreduce_(tensor: torch.Tensor, average: Optional[bool] = None,
               name: Optional[str] = None, op: Optional[Any] = None,
               prescale_factor: float = 1.0, postscale_factor: float = 1.0,
               *, compression: Compressor = Compression.none) -> torch.Tensor:
    """Like :func:`allreduce`, but in place: returns ``tensor`` itself."""
    return synchronize(allreduce_async_(
        tensor, average, name, op, prescale_factor, postscale_factor,
        compression=compression))


def allgather(tensor: torch.Tensor,
              name: Optional[str] = None) -> torch.Tensor:
    """Concatenates every rank's ``tensor`` along dimension 0.

    The first dimension may differ between ranks. Autograd-aware: the
    gradient of each rank's rows is the average over ranks of theirs.
    """
    check_tensor(tensor, "allgather", reduction=False)
    return AllgatherFunction.apply(tensor, name)


def broadcast(tensor: torch.Tensor, root_rank: int,
              name: Optional[str] = None) -> torch.Tensor:
    """Returns ``root_rank``'s ``tensor`` on every rank, as a new tensor.

    Autograd-aware: the root's gradient is the average over ranks, the
    other ranks' gradient is zero.
    """
    check_tensor(tensor, "broadcast", reduction=False)
    return BroadcastFunction.apply(tensor, root_rank, name)


def broadcast_(tensor: torch.Tensor, root_rank: int,
               name: Optional[str] = None) -> torch.Tensor:
    """Overwrites ``tensor`` with ``root_rank``'s; returns ``tensor``."""
    return synchronize(broadcast_async_(tensor, root_rank, name))
