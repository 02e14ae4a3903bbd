"""Asynchronous grouped collectives: a list of tensors as one unit.

A group is negotiated and fused as a whole: it runs when every rank has
submitted all of its tensors, so no other collective is interleaved with
part of it. Each function takes a list of tensors and returns a list of
:class:`Handle` s, one per tensor in order; ``synchronize(list)`` (and
``poll(list)``) take the whole list and give the list of results. Each
handle keeps its own tensor alive until it is synchronized.

Names: a named group's tensors are ``<kind>.<name>.0``, ``.1``, ...
(``grouped_allreduce.<name>.<i>`` and so on); unnamed groups get names from
the core in call order, like the single-tensor ops. The calling protocol,
the dtypes and the errors are those of ``async_ops`` and ``scatter_async``.
"""

from typing import Any, List, Optional, Sequence

import torch

import hvd as _hvd

from .async_ops import Handle, op_name, resolve_op
from .compression import Compression, Compressor
from .scatter_async import check_rows
from .tensor_bridge import Gathered, InPlace, OutOfPlace, check_tensor

Tensors = Sequence[torch.Tensor]


def _as_list(tensors: Tensors, fn: str) -> List[torch.Tensor]:
    if isinstance(tensors, torch.Tensor) or \
            not isinstance(tensors, (list, tuple)):
        raise TypeError(f"hvd.torch.{fn} expects a list or tuple of "
                        f"tensors, got {type(tensors).__name__}")
    return list(tensors)


def _allreduce_group(tensors: Tensors, fn: str, in_place: bool,
                     average: Optional[bool], name: Optional[str],
                     op: Optional[Any], prescale_factor: float,
                     postscale_factor: float, process_set: Any,
                     compression: Compressor) -> List[Handle]:
    op = resolve_op(op, average, fn)
    tensors = _as_list(tensors, fn)
    for t in tensors:
        check_tensor(t, fn, reduction=True)
    compressed = [compression.compress(t) for t in tensors]
    stage = InPlace if in_place else OutOfPlace
    staged = [stage(c, fn, reduction=True) for c, _ in compressed]
    if not staged:
        return []
    cores = _hvd.grouped_allreduce_async_(
        [s.array for s in staged], name=op_name("grouped_allreduce", name),
        op=op, prescale_factor=prescale_factor,
        postscale_factor=postscale_factor, process_set=process_set)

    def post(tensor: torch.Tensor, ctx: Any):
        def finish(out: torch.Tensor) -> torch.Tensor:
            result = compression.decompress(out, ctx)
            if in_place and result is not tensor:
                tensor.detach().copy_(result)
                return tensor
            return result
        return finish

    return [Handle(core, s, post(t, ctx))
            for core, s, t, (_, ctx) in zip(cores, staged, tensors,
                                            compressed)]


def grouped_allreduce_async(tensors: Tensors,
                            average: Optional[bool] = None,
                            name: Optional[str] = None,
                            op: Optional[Any] = None,
                            prescale_factor: float = 1.0,
                            postscale_factor: float = 1.0,
                            process_set: Any = _hvd.global_process_set, *,
                            compression: Compressor = Compression.none
                            ) -> List[Handle]:
    """Starts reducing every tensor of ``tensors`` into a new tensor.

    ``op``, ``prescale_factor``, ``postscale_factor`` and ``compression``
    apply to every tensor, as in ``allreduce_async``; the tensors may differ
    in shape and dtype. The callers' tensors are left unchanged.
    """
    return _allreduce_group(tensors, "grouped_allreduce_async", False,
                            average, name, op, prescale_factor,
                            postscale_factor, process_set, compression)


def grouped_allreduce_async_(tensors: Tensors,
                             average: Optional[bool] = None,
                             name: Optional[str] = None,
                             op: Optional[Any] = None,
                             prescale_factor: float = 1.0,
                             postscale_factor: float = 1.0,
                             process_set: Any = _hvd.global_process_set, *,
                             compression: Compressor = Compression.none
                             ) -> List[Handle]:
    """Like :func:`grouped_allreduce_async`, but in place: each handle's
    result is its input tensor."""
    return _allreduce_group(tensors, "grouped_allreduce_async_", True,
                            average, name, op, prescale_factor,
                            postscale_factor, process_set, compression)


def grouped_allgather_async(tensors: Tensors, name: Optional[str] = None,
                            process_set: Any = _hvd.global_process_set
                            ) -> List[Handle]:
    """Starts an allgather of every tensor (see ``allgather_async``)."""
    tensors = _as_list(tensors, "grouped_allgather_async")
    staged = [Gathered(t, "grouped_allgather_async") for t in tensors]
    if not staged:
        return []
    cores = _hvd.grouped_allgather_async(
        [s.array for s in staged], name=op_name("grouped_allgather", name),
        process_set=process_set)
    return [Handle(core, s) for core, s in zip(cores, staged)]


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
    tensors = _as_list(tensors, fn)
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
