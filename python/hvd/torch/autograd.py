"""Autograd Functions for the synchronous collectives, as in horovod.torch.

The gradient of a collective is taken of the sum over the set's ranks of
their losses (what data-parallel training differentiates):

* allreduce: the allreduce of the incoming gradient with the same op and
  scale factors.
* allgather: the incoming gradient averaged over the set, narrowed to this
  rank's rows of the concatenation.
* broadcast: the incoming gradient averaged over the set on the root, zero
  elsewhere.
* alltoall: the alltoall of the incoming gradient sent back the way the
  rows came (splits = the received splits).
* reducescatter: the allgather of the incoming gradient, times the scale
  factors, times the set's size for Sum (not for Average), as horovod.

Every Function works within the process set of its forward call. The
backward collectives are unnamed, so their names come from the core in
call order: every rank of the set must run the same backward graph, which
data-parallel training does. Backward calls the Functions again, so
higher-order gradients work too. Grouped Functions are in ``grouped_ops``.
"""

from typing import Any, List, Optional, Tuple

import torch

import hvd as _hvd

from .async_ops import (allgather_async, allreduce_async, broadcast_async,
                        set_ranks, synchronize)
from .scatter_async import alltoall_async, reducescatter_async


def set_rank(process_set: Any) -> int:
    """This process's index in ``process_set``."""
    return set_ranks(process_set).index(_hvd.rank())


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


class AllreduceFunction(torch.autograd.Function):
    """apply(tensor, op, name, prescale_factor, postscale_factor,
    process_set)."""

    @staticmethod
    def forward(ctx: Any, tensor: torch.Tensor, op: Any, name: Optional[str],
                prescale_factor: float, postscale_factor: float,
                process_set: Any) -> torch.Tensor:
        ctx.op = op
        ctx.prescale_factor = prescale_factor
        ctx.postscale_factor = postscale_factor
        ctx.process_set = process_set
        return synchronize(allreduce_async(
            tensor, name=name, op=op, prescale_factor=prescale_factor,
            postscale_factor=postscale_factor, process_set=process_set))

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> Tuple[Any, ...]:
        grad = AllreduceFunction.apply(grad_output, ctx.op, None,
                                       ctx.prescale_factor,
                                       ctx.postscale_factor, ctx.process_set)
        return grad, None, None, None, None, None


class AllgatherFunction(torch.autograd.Function):
    """apply(tensor, name, process_set)."""

    @staticmethod
    def forward(ctx: Any, tensor: torch.Tensor, name: Optional[str],
                process_set: Any) -> torch.Tensor:
        ctx.rows = tensor.shape[0] if tensor.dim() > 0 else 1
        ctx.shape = tensor.shape
        ctx.process_set = process_set
        return synchronize(allgather_async(tensor, name=name,
                                           process_set=process_set))

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> Tuple[Any, ...]:
        grad = AllreduceFunction.apply(grad_output, _hvd.Average, None,
                                       1.0, 1.0, ctx.process_set)
        rows = synchronize(allgather_async(
            torch.tensor([ctx.rows], dtype=torch.int64),
            process_set=ctx.process_set))
        offset = int(rows[:set_rank(ctx.process_set)].sum())
        return (grad.narrow(0, offset, ctx.rows).reshape(ctx.shape),
                None, None)


class BroadcastFunction(torch.autograd.Function):
    """apply(tensor, root_rank, name, process_set)."""

    @staticmethod
    def forward(ctx: Any, tensor: torch.Tensor, root_rank: int,
                name: Optional[str], process_set: Any) -> torch.Tensor:
        ctx.root_rank = root_rank
        ctx.process_set = process_set
        return synchronize(broadcast_async(tensor, root_rank, name=name,
                                           process_set=process_set))

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> Tuple[Any, ...]:
        grad = AllreduceFunction.apply(grad_output, _hvd.Average, None,
                                       1.0, 1.0, ctx.process_set)
        if _hvd.rank() != ctx.root_rank:
            grad = grad * 0
        return grad, None, None, None


class AlltoallFunction(torch.autograd.Function):
    """apply(tensor, splits, name, process_set) -> (output, received_splits).

    ``splits`` is a list of ints or None (equal parts); received_splits is
    not differentiable.
    """

    @staticmethod
    def forward(ctx: Any, tensor: torch.Tensor, splits: Optional[List[int]],
                name: Optional[str],
                process_set: Any) -> Tuple[torch.Tensor, torch.Tensor]:
        if splits is None:
            # Equal parts, spelled out so that the core reports what each
            # rank received: backward sends the gradient back that way.
            # A dimension 0 that does not divide is left to the core's
            # error message.
            parts = len(set_ranks(process_set))
            if tensor.dim() > 0 and tensor.shape[0] % parts == 0:
                splits = [tensor.shape[0] // parts] * parts
        result = synchronize(alltoall_async(tensor, splits, name=name,
                                            process_set=process_set))
        output, received = result if isinstance(result, tuple) else \
            (result, torch.zeros(0, dtype=torch.int32))
        ctx.process_set = process_set
        ctx.received = received.tolist()
        ctx.mark_non_differentiable(received)
        return output, received

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor,
                 _grad_splits: Any) -> Tuple[Any, ...]:
        grad, _ = AlltoallFunction.apply(grad_output.contiguous(),
                                         ctx.received, None, ctx.process_set)
        return grad, None, None, None


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
