"""Allgather of torch tensors: ``allgather_async``, ``allgather`` and their
grouped forms.

Every rank's tensor is concatenated along dimension 0, in the set's order;
the first dimension may differ between ranks, the others must agree.
``allgather`` and ``grouped_allgather`` are autograd-aware
(``AllgatherFunction``, ``GroupedAllgatherFunction``): the gradient is the
incoming gradient averaged over the set, narrowed to this rank's rows of
the concatenation. The calling protocol and the errors are described in
``handles``.
"""

from typing import Any, List, Optional, Tuple

import torch

import hvd as _hvd

from ..tensor_bridge import Gathered, check_tensor
from .allreduce import AllreduceFunction, GroupedAllreduceFunction
from .arguments import Tensors, op_name, set_ranks, tensor_list
from .handles import Handle, synchronize

GLOBAL = _hvd.global_process_set


def set_rank(process_set: Any) -> int:
    """This process's index in ``process_set``."""
    return set_ranks(process_set).index(_hvd.rank())


def allgather_async(tensor: torch.Tensor, name: Optional[str] = None,
                    process_set: Any = _hvd.global_process_set) -> Handle:
    """Starts concatenating every rank's ``tensor`` along dimension 0.

    The first dimension may differ between ranks; the others must agree.
    """
    staged = Gathered(tensor, "allgather_async")
    core = _hvd.allgather_async(staged.array,
                                name=op_name("allgather", name),
                                process_set=process_set)
    return Handle(core, staged)


def grouped_allgather_async(tensors: Tensors, name: Optional[str] = None,
                            process_set: Any = _hvd.global_process_set
                            ) -> List[Handle]:
    """Starts an allgather of every tensor (see ``allgather_async``)."""
    tensors = tensor_list(tensors, "grouped_allgather_async")
    staged = [Gathered(t, "grouped_allgather_async") for t in tensors]
    if not staged:
        return []
    cores = _hvd.grouped_allgather_async(
        [s.array for s in staged], name=op_name("grouped_allgather", name),
        process_set=process_set)
    return [Handle(core, s) for core, s in zip(cores, staged)]


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


def allgather(tensor: torch.Tensor, name: Optional[str] = None,
              process_set: Any = GLOBAL) -> torch.Tensor:
    """Concatenates the set's ranks' ``tensor`` along dimension 0.

    The first dimension may differ between ranks. Autograd-aware: the
    gradient of each rank's rows is the average over the set of theirs.
    """
    check_tensor(tensor, "allgather", reduction=False)
    return AllgatherFunction.apply(tensor, name, process_set)


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
