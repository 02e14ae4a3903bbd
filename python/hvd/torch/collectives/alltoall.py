"""Alltoall of torch tensors: ``alltoall_async`` and ``alltoall``.

``splits[i]`` rows of dimension 0 of the input go to the set's i-th rank
(equal parts without ``splits``); the result is the rows received, by
sender, and, when ``splits`` was given, also a tensor of how many rows came
from each rank. The core allocates the output (its size depends on the
other ranks), so the input is only read: it is handed over shared where
possible (see ``tensor_bridge.Gathered``) and kept alive by the
:class:`Handle` until ``synchronize``. ``alltoall`` is autograd-aware
(``AlltoallFunction``): the gradient is the alltoall of the incoming
gradient sent back the way the rows came (splits = the received splits).
The calling protocol and the errors are described in ``handles``.
"""

from typing import Any, List, Optional, Tuple, Union

import numpy as np
import torch

import hvd as _hvd
from hvd.exceptions import InvalidArgumentError, InvalidArgumentTypeError

from ..tensor_bridge import Gathered
from .arguments import check_rows, op_name, set_ranks
from .handles import Handle, synchronize

GLOBAL = _hvd.global_process_set


Splits = Union[None, torch.Tensor, np.ndarray, List[int], Tuple[int, ...]]


def splits_list(splits: Splits, op: str) -> Optional[List[int]]:
    """``splits`` (a list, a 1-D integer tensor or array, or None) as ints.

    Bad splits are a ``ValueError``, as in horovod (whose core refuses
    splits that are not int32 with one); the count and the sum are checked
    by the core, also as ``ValueError``.

    Raises:
        InvalidArgumentError (a ValueError): not integers (a float,
            complex or bool tensor, or a list holding something else than
            ints), not one-dimensional, or a negative count.
        InvalidArgumentTypeError (a TypeError): a tensor on another device
            than the CPU.
    """
    if splits is None:
        return None
    if isinstance(splits, torch.Tensor):
        if splits.dtype.is_floating_point or splits.dtype.is_complex or \
                splits.dtype == torch.bool:
            raise InvalidArgumentError(
                f"hvd.torch.{op}: splits must be integers, "
                f"got a tensor of {splits.dtype}")
        if splits.device.type != "cpu":
            raise InvalidArgumentTypeError(
                f"hvd.torch.{op}: splits must be a CPU tensor "
                f"or a list, got a tensor on {splits.device}")
        if splits.dim() != 1:
            raise InvalidArgumentError(f"hvd.torch.{op}: splits must be "
                                       f"one-dimensional, got shape "
                                       f"{tuple(splits.shape)}")
        values = [int(s) for s in splits.tolist()]
    else:
        if isinstance(splits, np.ndarray) and splits.ndim != 1:
            raise InvalidArgumentError(
                f"hvd.torch.{op}: splits must be "
                f"one-dimensional, got shape {splits.shape}")
        values = []
        for s in splits:
            if isinstance(s, (bool, np.bool_)) or \
                    not isinstance(s, (int, np.integer)):
                raise InvalidArgumentError(
                    f"hvd.torch.{op}: splits must be integers, "
                    f"got {s!r}")
            values.append(int(s))
    if any(s < 0 for s in values):
        raise InvalidArgumentError(
            f"hvd.torch.{op}: splits must not be negative, "
            f"got {values}")
    return values


class _Exchanged:
    """An alltoall's staged input; its result with the received splits."""

    def __init__(self, tensor: torch.Tensor, op: str,
                 splits_dtype: Optional[torch.dtype]):
        self._gathered = Gathered(tensor, op)
        self.array = self._gathered.array
        self._splits_dtype = splits_dtype  # None: no splits were given

    def finish(self, result: Any) -> Any:
        if self._splits_dtype is None:
            return self._gathered.finish(result)
        rows, received = result
        return (self._gathered.finish(rows),
                torch.from_numpy(np.asarray(received)).to(self._splits_dtype))


def alltoall_async(tensor: torch.Tensor, splits: Splits = None,
                   name: Optional[str] = None,
                   process_set: Any = _hvd.global_process_set) -> Handle:
    """Starts sending ``splits[i]`` rows of ``tensor`` to the set's i-th rank.

    Args:
        tensor: a CPU or CUDA tensor with at least one dimension; the
            dimensions after the first must agree on every rank.
        splits: how many rows (of dimension 0, in order) go to each rank of
            the set, in set order; they must add up to ``tensor.shape[0]``
            (zeros allowed). Without it, dimension 0 is cut into equal
            parts, one per rank.
        name: matches this call across ranks (``alltoall.<name>``).
        process_set: the ranks taking part (default: every rank).

    Returns:
        A handle; ``synchronize`` gives the received rows, concatenated in
        sender order, or with ``splits`` given a tuple (rows,
        received_splits), received_splits being of ``splits``' dtype if it
        was a tensor, else ``torch.int32``.
    """
    check_rows(tensor, "alltoall_async")
    values = splits_list(splits, "alltoall_async")
    splits_dtype = None
    if values is not None:
        splits_dtype = splits.dtype if isinstance(splits, torch.Tensor) \
            else torch.int32
    staged = _Exchanged(tensor, "alltoall_async", splits_dtype)
    core = _hvd.alltoall_async(staged.array, splits=values,
                               name=op_name("alltoall", name),
                               process_set=process_set)
    return Handle(core, staged)


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
