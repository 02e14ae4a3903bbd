"""Asynchronous alltoall and reducescatter on torch tensors.

Both split dimension 0 of their input among the ranks of the process set,
and the core allocates the output (its size depends on the other ranks),
so the input is only read: it is handed over shared where possible (see
``tensor_bridge.Gathered``) and kept alive by the :class:`Handle` until
``synchronize``. The calling protocol and the errors are those of
``async_ops``.

* ``alltoall_async(tensor, splits)``: ``splits[i]`` rows go to the set's
  i-th rank (equal parts without ``splits``); ``synchronize`` returns the
  rows received, by sender, and, when ``splits`` was given, also a tensor
  of how many rows came from each rank.
* ``reducescatter_async(tensor, op=Average)``: the set's reduction of
  ``tensor`` (Average or Sum), of which each rank gets a block of rows;
  the first ``rows % size`` ranks get one row more.
"""

from typing import Any, List, Optional, Tuple, Union

import numpy as np
import torch

import hvd as _hvd

from .async_ops import Handle, op_name
from .compression import Compression, Compressor
from .tensor_bridge import Gathered, check_tensor

Splits = Union[None, torch.Tensor, np.ndarray, List[int], Tuple[int, ...]]


def splits_list(splits: Splits, op: str) -> Optional[List[int]]:
    """``splits`` (a list, a 1-D integer tensor or array, or None) as ints.

    Bad splits are a ``ValueError``, as in horovod (whose core refuses
    splits that are not int32 with one); the count and the sum are checked
    by the core, also as ``ValueError``.

    Raises:
        ValueError: not integers (a float, complex or bool tensor, or a
            list holding something else than ints), not one-dimensional,
            or a negative count.
        TypeError: a tensor on another device than the CPU.
    """
    if splits is None:
        return None
    if isinstance(splits, torch.Tensor):
        if splits.dtype.is_floating_point or splits.dtype.is_complex or \
                splits.dtype == torch.bool:
            raise ValueError(f"hvd.torch.{op}: splits must be integers, "
                             f"got a tensor of {splits.dtype}")
        if splits.device.type != "cpu":
            raise TypeError(f"hvd.torch.{op}: splits must be a CPU tensor "
                            f"or a list, got a tensor on {splits.device}")
        if splits.dim() != 1:
            raise ValueError(f"hvd.torch.{op}: splits must be "
                             f"one-dimensional, got shape "
                             f"{tuple(splits.shape)}")
        values = [int(s) for s in splits.tolist()]
    else:
        if isinstance(splits, np.ndarray) and splits.ndim != 1:
            raise ValueError(f"hvd.torch.{op}: splits must be "
                             f"one-dimensional, got shape {splits.shape}")
        values = []
        for s in splits:
            if isinstance(s, (bool, np.bool_)) or \
                    not isinstance(s, (int, np.integer)):
                raise ValueError(f"hvd.torch.{op}: splits must be integers, "
                                 f"got {s!r}")
            values.append(int(s))
    if any(s < 0 for s in values):
        raise ValueError(f"hvd.torch.{op}: splits must not be negative, "
                         f"got {values}")
    return values


def check_rows(tensor: torch.Tensor, op: str) -> None:
    check_tensor(tensor, op)
    if tensor.dim() == 0:
        raise ValueError(f"hvd.torch.{op} splits dimension 0 among the "
                         "ranks; a 0-dim tensor has none (reshape it to "
                         "(1,) or more rows)")


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
        tensor: a CPU tensor with at least one dimension; the dimensions
            after the first must agree on every rank.
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


def reducescatter_async(tensor: torch.Tensor, name: Optional[str] = None,
                        op: Any = None,
                        process_set: Any = _hvd.global_process_set,
                        prescale_factor: float = 1.0,
                        postscale_factor: float = 1.0, *,
                        compression: Compressor = Compression.none
                        ) -> Handle:
    """Starts reducing ``tensor`` over the set and scattering the result.

    Args:
        tensor: a CPU tensor with at least one dimension, of the same shape
            and dtype on every rank (bool is refused, as for allreduce).
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
