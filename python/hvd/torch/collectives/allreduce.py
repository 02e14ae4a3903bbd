"""Allreduce of torch tensors, in all its forms.

* ``allreduce_async`` starts a reduction into a new tensor,
  ``allreduce_async_`` into the argument itself; ``grouped_allreduce_async``
  and ``grouped_allreduce_async_`` do the same for a list of tensors run as
  one unit.
* ``allreduce`` and ``grouped_allreduce`` wait for the result and are
  autograd-aware (``AllreduceFunction``, ``GroupedAllreduceFunction``): the
  gradient is the allreduce of the incoming gradient with the same op and
  scale factors. ``allreduce_`` and ``grouped_allreduce_`` reduce in place
  and are not autograd-aware.

``op`` is one of ``hvd.Sum, Average, Min, Max, Product, Adasum`` (default
Average); ``average`` is horovod's deprecated flag. The calling protocol and
the errors are described in ``handles``.
"""

import warnings
from typing import Any, List, Optional, Tuple

import torch

import hvd as _hvd
from hvd.exceptions import InvalidArgumentError

from ..compression import Compression, Compressor
from ..tensor_bridge import InPlace, OutOfPlace, check_tensor
from .arguments import Tensors, compress_each, op_name, tensor_list
from .handles import Handle, synchronize

GLOBAL = _hvd.global_process_set


def resolve_op(op: Optional[Any], average: Optional[bool], fn: str) -> Any:
    """The reduce op from horovod's ``op`` and deprecated ``average`` flag.

    Raises:
        InvalidArgumentError (a ValueError): both were given.
    """
    if op is not None and average is not None:
        raise InvalidArgumentError(
            f"hvd.torch.{fn}: the op and average arguments are "
            "mutually exclusive; pass op only")
    if average is not None:
        warnings.warn("the average argument is deprecated; use "
                      "op=hvd.Average or op=hvd.Sum", DeprecationWarning,
                      stacklevel=3)
        return _hvd.Average if average else _hvd.Sum
    return _hvd.Average if op is None else op


def allreduce_async(tensor: torch.Tensor, average: Optional[bool] = None,
                    name: Optional[str] = None, op: Optional[Any] = None,
                    prescale_factor: float = 1.0,
                    postscale_factor: float = 1.0,
                    process_set: Any = _hvd.global_process_set, *,
                    compression: Compressor = Compression.none) -> Handle:
    """Starts a reduction of ``tensor`` over all ranks into a new tensor.

    ``op`` is one of ``hvd.Sum, Average, Min, Max, Product, Adasum``
    (default Average); the input is multiplied by ``prescale_factor`` before the
    reduction and the result by ``postscale_factor`` after it. The caller's
    tensor is left unchanged.
    """
    op = resolve_op(op, average, "allreduce_async")
    check_tensor(tensor, "allreduce_async", reduction=True)
    compressed, ctx = compression.compress(tensor)
    staged = OutOfPlace(compressed, "allreduce_async", reduction=True)
    core = _hvd.allreduce_async_(staged.array,
                                 name=op_name("allreduce", name), op=op,
                                 prescale_factor=prescale_factor,
                                 postscale_factor=postscale_factor,
                                 process_set=process_set)
    return Handle(core, staged, lambda out: compression.decompress(out, ctx))


def allreduce_async_(tensor: torch.Tensor, average: Optional[bool] = None,
                     name: Optional[str] = None, op: Optional[Any] = None,
                     prescale_factor: float = 1.0,
                     postscale_factor: float = 1.0,
                     process_set: Any = _hvd.global_process_set, *,
                     compression: Compressor = Compression.none) -> Handle:
    """Like :func:`allreduce_async`, but writes the result into ``tensor``."""
    op = resolve_op(op, average, "allreduce_async_")
    check_tensor(tensor, "allreduce_async_", reduction=True)
    compressed, ctx = compression.compress(tensor)
    staged = InPlace(compressed, "allreduce_async_", reduction=True)
    core = _hvd.allreduce_async_(staged.array,
                                 name=op_name("allreduce", name), op=op,
                                 prescale_factor=prescale_factor,
                                 postscale_factor=postscale_factor,
                                 process_set=process_set)

    def post(out: torch.Tensor) -> torch.Tensor:
        result = compression.decompress(out, ctx)
        if result is not tensor:
            tensor.detach().copy_(result)
        return tensor

    return Handle(core, staged, post)


def _allreduce_group(tensors: Tensors, fn: str, in_place: bool,
                     average: Optional[bool], name: Optional[str],
                     op: Optional[Any], prescale_factor: float,
                     postscale_factor: float, process_set: Any,
                     compression: Compressor) -> List[Handle]:
    op = resolve_op(op, average, fn)
    tensors = tensor_list(tensors, fn)
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


def allreduce(tensor: torch.Tensor, average: Optional[bool] = None,
              name: Optional[str] = None,
              compression: Compressor = Compression.none,
              op: Optional[Any] = None, prescale_factor: float = 1.0,
              postscale_factor: float = 1.0,
              process_set: Any = GLOBAL) -> torch.Tensor:
    """Reduces ``tensor`` over the ranks of ``process_set``.

    Args:
        tensor: a CPU or CUDA tensor; every rank passes the same shape
            and dtype.
        average: deprecated; ``True`` means ``op=Average``, ``False`` Sum.
        name: matches this call across ranks (``allreduce.<name>``).
        compression: ``Compression.none`` or ``Compression.fp16``; the
            reduction runs on the compressed tensor.
        op: ``hvd.Sum, Average, Min, Max, Product, Adasum``; default
            Average. Adasum takes floating-point tensors only.
        prescale_factor: multiplies the input before the reduction.
        postscale_factor: multiplies the result after it.
        process_set: the ranks taking part (default: every rank).

    Returns:
        A new tensor of ``tensor``'s shape and dtype. If ``tensor`` requires
        grad, the result's gradient is allreduced with the same op.
    """
    op = resolve_op(op, average, "allreduce")
    check_tensor(tensor, "allreduce", reduction=True)
    compressed, ctx = compression.compress(tensor)
    reduced = AllreduceFunction.apply(compressed, op, name, prescale_factor,
                                      postscale_factor, process_set)
    return compression.decompress(reduced, ctx)


def allreduce_(tensor: torch.Tensor, average: Optional[bool] = None,
               name: Optional[str] = None, op: Optional[Any] = None,
               prescale_factor: float = 1.0, postscale_factor: float = 1.0,
               process_set: Any = GLOBAL, *,
               compression: Compressor = Compression.none) -> torch.Tensor:
    """Like :func:`allreduce`, but in place: returns ``tensor`` itself."""
    return synchronize(allreduce_async_(
        tensor, average, name, op, prescale_factor, postscale_factor,
        process_set, compression=compression))


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
    return compress_each(compression, tensors, lambda *c: (
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
