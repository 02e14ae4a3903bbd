"""Broadcast of torch tensors: ``broadcast_async``, ``broadcast_async_``,
``broadcast`` and ``broadcast_``.

``root_rank``'s tensor is sent to every rank of the set; ``root_rank`` is a
global rank, a member of the set. ``broadcast`` is autograd-aware
(``BroadcastFunction``): the gradient is the incoming gradient averaged over
the set on the root, zero elsewhere; the in-place forms are not.
``broadcast_parameters`` and ``broadcast_optimizer_state`` are in
``functions``. The calling protocol and the errors are described in
``handles``.
"""

from typing import Any, Optional, Tuple

import torch

import hvd as _hvd

from ..tensor_bridge import InPlace, OutOfPlace, check_tensor
from .allreduce import AllreduceFunction
from .arguments import op_name
from .handles import Handle, synchronize

GLOBAL = _hvd.global_process_set


def broadcast_async(tensor: torch.Tensor, root_rank: int,
                    name: Optional[str] = None,
                    process_set: Any = _hvd.global_process_set) -> Handle:
    """Starts sending ``root_rank``'s tensor to every rank, as a new tensor.

    ``root_rank`` is a global rank (a member of ``process_set``).
    """
    staged = OutOfPlace(tensor, "broadcast_async", reduction=False)
    core = _hvd.broadcast_async_(staged.array, root_rank,
                                 name=op_name("broadcast", name),
                                 process_set=process_set)
    return Handle(core, staged)


def broadcast_async_(tensor: torch.Tensor, root_rank: int,
                     name: Optional[str] = None,
                     process_set: Any = _hvd.global_process_set) -> Handle:
    """Like :func:`broadcast_async`, but writes the result into ``tensor``."""
    staged = InPlace(tensor, "broadcast_async_", reduction=False)
    core = _hvd.broadcast_async_(staged.array, root_rank,
                                 name=op_name("broadcast", name),
                                 process_set=process_set)
    return Handle(core, staged)


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
