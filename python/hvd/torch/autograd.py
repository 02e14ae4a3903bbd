"""Autograd Functions for the synchronous collectives, as in horovod.torch.

* allreduce: the gradient is the allreduce of the incoming gradient with
  the same op and scale factors.
* allgather: the gradient is the incoming gradient averaged over ranks,
  narrowed to this rank's rows of the concatenation.
* broadcast: the gradient is the incoming gradient averaged over ranks on
  the root and zero elsewhere.

The backward collectives are unnamed, so their names come from the core in
call order: every rank must run the same backward graph, which data-parallel
training does. Backward calls the Functions again, so higher-order
gradients work too.
"""

from typing import Any, Optional, Tuple

import torch

import hvd as _hvd

from .async_ops import (allgather_async, allreduce_async, broadcast_async,
                        synchronize)


class AllreduceFunction(torch.autograd.Function):
    """apply(tensor, op, name, prescale_factor, postscale_factor)."""

    @staticmethod
    def forward(ctx: Any, tensor: torch.Tensor, op: Any, name: Optional[str],
                prescale_factor: float,
                postscale_factor: float) -> torch.Tensor:
        ctx.op = op
        ctx.prescale_factor = prescale_factor
        ctx.postscale_factor = postscale_factor
        return synchronize(allreduce_async(
            tensor, name=name, op=op, prescale_factor=prescale_factor,
            postscale_factor=postscale_factor))

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> Tuple[Any, ...]:
        grad = AllreduceFunction.apply(grad_output, ctx.op, None,
                                       ctx.prescale_factor,
                                       ctx.postscale_factor)
        return grad, None, None, None, None


class AllgatherFunction(torch.autograd.Function):
    """apply(tensor, name)."""

    @staticmethod
    def forward(ctx: Any, tensor: torch.Tensor,
                name: Optional[str]) -> torch.Tensor:
        ctx.rows = tensor.shape[0] if tensor.dim() > 0 else 1
        ctx.shape = tensor.shape
        return synchronize(allgather_async(tensor, name=name))

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> Tuple[Any, ...]:
        grad = AllreduceFunction.apply(grad_output, _hvd.Average, None,
                                       1.0, 1.0)
        rows = synchronize(allgather_async(
            torch.tensor([ctx.rows], dtype=torch.int64)))
        offset = int(rows[:_hvd.rank()].sum())
        return grad.narrow(0, offset, ctx.rows).reshape(ctx.shape), None


class BroadcastFunction(torch.autograd.Function):
    """apply(tensor, root_rank, name)."""

    @staticmethod
    def forward(ctx: Any, tensor: torch.Tensor, root_rank: int,
                name: Optional[str]) -> torch.Tensor:
        ctx.root_rank = root_rank
        return synchronize(broadcast_async(tensor, root_rank, name=name))

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> Tuple[Any, ...]:
        grad = AllreduceFunction.apply(grad_output, _hvd.Average, None,
                                       1.0, 1.0)
        if _hvd.rank() != ctx.root_rank:
            grad = grad * 0
        return grad, None, None
