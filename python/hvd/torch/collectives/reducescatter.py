"""Reducescatter of torch tensors: ``reducescatter_async``, ``reducescatter``
and their grouped forms.

The set's reduction of the input (``op`` Average by default, Sum, or
Adasum), of which each rank gets a block of rows of dimension 0; the first
``rows % size`` ranks of the set get one row more. The core allocates the
output, so the input is only read (see ``tensor_bridge.Gathered``).
``reducescatter`` and ``grouped_reducescatter`` are autograd-aware
(``ReducescatterFunction``, ``GroupedReducescatterFunction``): as in
horovod, the gradient is the allgather of the incoming gradient, times the
scale factors, times the set's size for Sum (not for Average). The calling
protocol and the errors are described in ``handles``.
"""

from typing import Any, List, Optional, Tuple

import torch

import hvd as _hvd

from ..compression import Compression, Compressor
from ..tensor_bridge import Gathered, check_tensor
from .allgather import AllgatherFunction, GroupedAllgatherFunction
from .arguments import (Tensors, check_rows, compress_each, op_name, set_ranks,
                        tensor_list)
from .handles import Handle, synchronize

GLOBAL = _hvd.global_process_set


def reducescatter_grad_scale(op: Any, prescale_factor: float,
                             postscale_factor: float,
                             process_set: Any) -> float:
    """The factor horovod applies to the allgathered gradient of a
    reducescatter: the set's size for Sum, 1 for Average, times both
    scale factors. It is ``size`` times d(output)/d(input), the
    convention of allreduce's gradient (a Sum over the set's ranks of the
    incoming gradients, an Average for Average)."""
    scale = prescale_factor * postscale_factor
    if op == _hvd.Sum:
        scale *= len(set_ranks(process_set))
    return scale


def reducescatter_async(tensor: torch.Tensor, name: Optional[str] = None,
                        op: Any = None,
                        process_set: Any = _hvd.global_process_set,
                        prescale_factor: float = 1.0,
                        postscale_factor: float = 1.0, *,
                        compression: Compressor = Compression.none
                        ) -> Handle:
    """Starts reducing ``tensor`` over the set and scattering the result.

    Args:
        tensor: a CPU or CUDA tensor with at least one dimension, of the
            same shape and dtype on every rank (bool is refused, as for
            allreduce).
        name: matches this call across ranks (``reducescatter.<name>``).
        op: ``hvd.Average`` (default), ``hvd.Sum`` or ``hvd.Adasum`` (the
            Adasum of the whole tensor, each rank keeping its block).
        process_set: the ranks taking part (default: every rank).
        prescale_factor: multiplies the input before the reduction.
        postscale_factor: multiplies the result after it.
        compression: applied to the input; the result is decompressed.

    Returns:
        A handle; ``synchronize`` gives this rank's block of dimension 0 of
        the reduction: ``rows // size`` rows, one more on the first
        ``rows % size`` ranks of the set.
    """
    check_rows(tensor, "reducescatter_async")
    check_tensor(tensor, "reducescatter_async", reduction=True)
    compressed, ctx = compression.compress(tensor)
    staged = Gathered(compressed, "reducescatter_async", reduction=True)
    core = _hvd.reducescatter_async(
        staged.array, name=op_name("reducescatter", name),
        op=_hvd.Average if op is None else op,
        prescale_factor=prescale_factor, postscale_factor=postscale_factor,
        process_set=process_set)
    return Handle(core, staged, lambda out: compression.decompress(out, ctx))


def grouped_reducescatter_async(tensors: Tensors,
                                name: Optional[str] = None,
                                op: Any = None,
                                process_set: Any = _hvd.global_process_set,
                                prescale_factor: float = 1.0,
                                postscale_factor: float = 1.0, *,
                                compression: Compressor = Compression.none
                                ) -> List[Handle]:
    """Starts a reducescatter of every tensor (see ``reducescatter_async``);
    ``op`` (Average by default, or Sum) and the factors apply to all."""
    fn = "grouped_reducescatter_async"
    tensors = tensor_list(tensors, fn)
    for t in tensors:
        check_rows(t, fn)
        check_tensor(t, fn, reduction=True)
    compressed = [compression.compress(t) for t in tensors]
    staged = [Gathered(c, fn, reduction=True) for c, _ in compressed]
    if not staged:
        return []
    cores = _hvd.grouped_reducescatter_async(
        [s.array for s in staged],
        name=op_name("grouped_reducescatter", name),
        op=_hvd.Average if op is None else op,
        prescale_factor=prescale_factor, postscale_factor=postscale_factor,
        process_set=process_set)

    def post(ctx: Any):
        return lambda out: compression.decompress(out, ctx)

    return [Handle(core, s, post(ctx))
            for core, s, (_, ctx) in zip(cores, staged, compressed)]


class ReducescatterFunction(torch.autograd.Function):
    """apply(tensor, name, op, prescale_factor, postscale_factor,
    process_set)."""

    @staticmethod
    def forward(ctx: Any, tensor: torch.Tensor, name: Optional[str], op: Any,
                prescale_factor: float, postscale_factor: float,
                process_set: Any) -> torch.Tensor:
        ctx.scale = reducescatter_grad_scale(op, prescale_factor,
                                             postscale_factor, process_set)
        ctx.process_set = process_set
        return synchronize(reducescatter_async(
            tensor, name=name, op=op, process_set=process_set,
            prescale_factor=prescale_factor,
            postscale_factor=postscale_factor))

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> Tuple[Any, ...]:
        grad = AllgatherFunction.apply(grad_output, None, ctx.process_set)
        if ctx.scale != 1.0:
            grad = grad * ctx.scale
        return grad, None, None, None, None, None


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
    return compress_each(compression, tensors, lambda *c: (
        GroupedReducescatterFunction.apply(name, op, prescale_factor,
                                           postscale_factor, process_set,
                                           *c)))
