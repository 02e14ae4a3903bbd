"""The synchronous grouped collectives of horovod.torch and their autograd.

``grouped_allreduce``, ``grouped_allgather`` and ``grouped_reducescatter``
take a list of tensors, run them as one unit (see ``grouped_async``) and
return a list of new tensors; they are autograd-aware, with the gradients
of the single-tensor ops (see ``autograd``), computed as one group again.
``grouped_allreduce_`` reduces in place and is not.
"""

from typing import Any, List, Optional, Tuple

import torch

import hvd as _hvd

from .async_ops import allgather_async, resolve_op, synchronize
from .autograd import reducescatter_grad_scale, set_rank
from .compression import Compression, Compressor
from .grouped_async import (Tensors, grouped_allgather_async,
                            grouped_allreduce_async, grouped_allreduce_async_,
                            grouped_reducescatter_async)
from .scatter_async import check_rows
from .tensor_bridge import check_tensor

GLOBAL = _hvd.global_process_set


class GroupedAllreduceFunction(torch.autograd.Function):
    """apply(op, name, prescale_factor, postscale_factor, process_set,
    *tensors) -> tuple of tensors."""

    @staticmethod
    def forward(ctx: Any, op: Any, name: Optional[str],
                prescale_factor: float, postscale_factor: float,
                process_set: Any, *tensors: torch.Tensor
                ) -> Tuple[torch.Tensor, ...]:
        ctx.args = (op, None, prescale_factor, postscale_factor, process_set)
        return tuple(synchronize(grouped_allreduce_async(
            list(tensors), name=name, op=op,
            prescale_factor=prescale_factor,
            postscale_factor=postscale_factor, process_set=process_set)))

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> Tuple[Any, ...]:
        reduced = GroupedAllreduceFunction.apply(*ctx.args, *grads)
        return (None,) * 5 + tuple(reduced)


class GroupedAllgatherFunction(torch.autograd.Function):
    """apply(name, process_set, *tensors) -> tuple of tensors."""

    @staticmethod
    def forward(ctx: Any, name: Optional[str], process_set: Any,
                *tensors: torch.Tensor) -> Tuple[torch.Tensor, ...]:
        ctx.rows = [t.shape[0] if t.dim() > 0 else 1 for t in tensors]
        ctx.shapes = [t.shape for t in tensors]
        ctx.process_set = process_set
        return tuple(synchronize(grouped_allgather_async(
            list(tensors), name=name, process_set=process_set)))

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> Tuple[Any, ...]:
        averaged = GroupedAllreduceFunction.apply(
            _hvd.Average, None, 1.0, 1.0, ctx.process_set, *grads)
        # rows[j][i]: the rows of tensor i on the set's j-th rank.
        rows = synchronize(allgather_async(
            torch.tensor([ctx.rows], dtype=torch.int64),
            process_set=ctx.process_set))
        offsets = rows[:set_rank(ctx.process_set)].sum(0).tolist()
        return (None, None) + tuple(
            g.narrow(0, offset, n).reshape(shape)
            for g, offset, n, shape in zip(averaged, offsets, ctx.rows,
                                           ctx.shapes))


class GroupedReducescatterFunction(torch.autograd.Function):
    """apply(name, op, prescale_factor, postscale_factor, process_set,
    *tensors) -> tuple of tensors."""

    @staticmethod
    def forward(ctx: Any, name: Optional[str], op: Any,
                prescale_factor: float, postscale_factor: float,
                process_set: Any, *tensors: torch.Tensor
                ) -> Tuple[torch.Tensor, ...]:
        ctx.scale = reducescatter_grad_scale(op, prescale_factor,
                                             postscale_factor, process_set)
        ctx.process_set = process_set
        return tuple(synchronize(grouped_reducescatter_async(
            list(tensors), name=name, op=op, process_set=process_set,
            prescale_factor=prescale_factor,
            postscale_factor=postscale_factor)))

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> Tuple[Any, ...]:
        gathered = GroupedAllgatherFunction.apply(None, ctx.process_set,
                                                  *grads)
        if ctx.scale != 1.0:
            gathered = [g * ctx.scale for g in gathered]
        return (None,) * 5 + tuple(gathered)


def _compressed(compression: Compressor, tensors: List[torch.Tensor],
                reduce: Any) -> List[torch.Tensor]:
    """Compresses every tensor, reduces them all with `reduce(*compressed)`
    and decompresses each result."""
    compressed = [compression.compress(t) for t in tensors]
    reduced = reduce(*[c for c, _ in compressed])
    return [compression.decompress(r, ctx)
            for r, (_, ctx) in zip(reduced, compressed)]


def grouped_allreduce(tensors: Tensors, average: Optional[bool] = None,
                      name: Optional[str] = None,
                      compression: Compressor = Compression.none,
                      op: Optional[Any] = None, prescale_factor: float = 1.0,
                      postscale_factor: float = 1.0,
                      process_set: Any = GLOBAL) -> List[torch.Tensor]:
    """Reduces every tensor of ``tensors`` over the set, as one unit.

    The arguments mean what they mean for ``allreduce`` and apply to every
    tensor. Returns a list of new tensors, in order; each one's gradient is
    the grouped allreduce of the incoming gradients.
    """
    op = resolve_op(op, average, "grouped_allreduce")
    tensors = list(tensors)
    for t in tensors:
        check_tensor(t, "grouped_allreduce", reduction=True)
    if not tensors:
        return []
    return _compressed(compression, tensors, lambda *c: (
        GroupedAllreduceFunction.apply(op, name, prescale_factor,
                                       postscale_factor, process_set, *c)))


def grouped_allreduce_(tensors: Tensors, average: Optional[bool] = None,
                       name: Optional[str] = None, op: Optional[Any] = None,
                       prescale_factor: float = 1.0,
                       postscale_factor: float = 1.0,
                       process_set: Any = GLOBAL, *,
                       compression: Compressor = Compression.none
                       ) -> List[torch.Tensor]:
    """Like :func:`grouped_allreduce`, but in place: returns the list of the
    input tensors, overwritten with the results."""
    return synchronize(grouped_allreduce_async_(
        tensors, average, name, op, prescale_factor, postscale_factor,
        process_set, compression=compression))


def grouped_allgather(tensors: Tensors, name: Optional[str] = None,
                      process_set: Any = GLOBAL) -> List[torch.Tensor]:
    """An allgather of every tensor, as one unit; autograd-aware like
    ``allgather``."""
    tensors = list(tensors)
    for t in tensors:
        check_tensor(t, "grouped_allgather", reduction=False)
    if not tensors:
        return []
    return list(GroupedAllgatherFunction.apply(name, process_set, *tensors))


def grouped_reducescatter(tensors: Tensors, name: Optional[str] = None,
                          compression: Compressor = Compression.none,
                          op: Any = None, process_set: Any = GLOBAL,
                          prescale_factor: float = 1.0,
                          postscale_factor: float = 1.0
                          ) -> List[torch.Tensor]:
    """A reducescatter of every tensor, as one unit (``op`` Average by
    default, or Sum); autograd-aware like ``reducescatter``."""
    op = _hvd.Average if op is None else op
    tensors = list(tensors)
    for t in tensors:
        check_rows(t, "grouped_reducescatter")
        check_tensor(t, "grouped_reducescatter", reduction=True)
    if not tensors:
        return []
    return _compressed(compression, tensors, lambda *c: (
        GroupedReducescatterFunction.apply(name, op, prescale_factor,
                                           postscale_factor, process_set,
                                           *c)))
