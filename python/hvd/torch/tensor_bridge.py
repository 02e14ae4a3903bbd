"""Torch tensors as the numpy arrays the core's collectives work on.

The core (``hvd``) accepts C-contiguous numpy arrays of seven dtypes. This
module checks a tensor, picks the dtype it travels in ("wire dtype") and
builds the array, sharing the tensor's memory whenever that is possible:
``Tensor.numpy()`` of a contiguous CPU tensor is a view, and the array keeps
the tensor alive through its ``base``.

Dtypes without a numpy counterpart the core takes:

* ``bfloat16`` travels as ``float32`` and ``int16`` as ``int32`` (both
  conversions are exact; a reduction is computed in the wider type and
  rounded back once).
* ``bool`` travels as ``uint8`` for broadcast and allgather only; a sum of
  booleans has no meaning, so reductions refuse it.

CUDA tensors stay on their device: every collective hands the core a
``CudaArray`` (the tensor's ``__cuda_array_interface__`` with torch's
current stream, whose work so far hvd's stream waits for) and runs through
NCCL; the result of an allgather, alltoall or reducescatter is device
memory the core allocated, which ``from_core`` wraps without a copy
(docs/gpu.md).

Everything here is called on the caller's thread; nothing is shared.
"""

from typing import Optional, Tuple

import numpy as np
import torch

from hvd.exceptions import InvalidArgumentTypeError

_NATIVE = frozenset({torch.uint8, torch.int8, torch.int32, torch.int64,
                     torch.float16, torch.float32, torch.float64})
_WIDENED = {torch.bfloat16: torch.float32, torch.int16: torch.int32}
_REINTERPRETED = {torch.bool: torch.uint8}


class CudaArray:
    """A contiguous CUDA tensor as the core takes it.

    The interface is the tensor's own, with the stream torch is working on
    now (version 3's ``stream``): hvd's stream waits there, on the device,
    for the work that writes the tensor. ``device`` is the CUDA ordinal.
    """

    def __init__(self, tensor: torch.Tensor):
        self.tensor = tensor  # keeps the memory alive while hvd uses it
        self.device = tensor.device.index
        stream = torch.cuda.current_stream(tensor.device).cuda_stream
        self.__cuda_array_interface__ = dict(
            tensor.__cuda_array_interface__, version=3,
            stream=stream if stream != 0 else 1)


def check_tensor(tensor: torch.Tensor, op: str,
                 reduction: Optional[bool] = None) -> None:
    """Rejects what the core cannot take, before anything is enqueued.

    With ``reduction`` given, the dtype is checked too (see ``wire_dtype``).

    Raises:
        InvalidArgumentTypeError (a TypeError): not a tensor, another
            device, a sparse tensor, or an unsupported dtype.
    """
    if not isinstance(tensor, torch.Tensor):
        raise InvalidArgumentTypeError(
            f"hvd.torch.{op} expects a torch.Tensor, "
            f"got {type(tensor).__name__}")
    device = tensor.device
    if device.type not in ("cpu", "cuda"):
        raise InvalidArgumentTypeError(
            f"hvd.torch.{op}: tensors on device '{device}' are "
            "not supported; only CPU and CUDA tensors are")
    if tensor.layout != torch.strided:
        raise InvalidArgumentTypeError(
            f"hvd.torch.{op}: {tensor.layout} tensors are not "
            "supported; pass a dense tensor (tensor.to_dense())")
    if reduction is not None:
        wire_dtype(tensor.dtype, op, reduction)


def wire_dtype(dtype: torch.dtype, op: str, reduction: bool) -> torch.dtype:
    """The dtype a tensor of ``dtype`` travels in.

    Raises:
        InvalidArgumentTypeError (a TypeError): no supported way to move
            this dtype for this op.
    """
    if dtype in _NATIVE:
        return dtype
    if dtype in _WIDENED:
        return _WIDENED[dtype]
    if dtype in _REINTERPRETED and not reduction:
        return _REINTERPRETED[dtype]
    supported = sorted(str(d).replace("torch.", "")
                       for d in (*_NATIVE, *_WIDENED,
                                 *(() if reduction else _REINTERPRETED)))
    raise InvalidArgumentTypeError(
        f"hvd.torch.{op}: dtype {dtype} is not supported; "
        f"supported: {', '.join(supported)}")


def _to_wire(tensor: torch.Tensor,
             wire: torch.dtype) -> Tuple[torch.Tensor, bool]:
    """A contiguous detached tensor of ``wire`` dtype and whether it is a copy.

    It is a view of ``tensor`` (no copy) when the tensor is contiguous and of
    the wire dtype or reinterpretable as it. A 0-dim tensor travels as a
    1-element vector, so allgather has a dimension 0 to concatenate.
    """
    t = tensor.detach()
    if t.dim() == 0:
        t = t.reshape(1)
    if t.is_contiguous():
        if t.dtype == wire:
            return t, False
        if t.dtype in _REINTERPRETED:
            return t.view(wire), False  # same element size
    return torch.empty(t.shape, dtype=wire, device=t.device).copy_(t), True


def _core_array(t: torch.Tensor):
    """What the core gets for a wire tensor: a numpy view or a CudaArray."""
    return CudaArray(t) if t.is_cuda else t.numpy()


def _from_wire(t: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """``t`` (wire dtype) in ``like``'s dtype and shape."""
    if like.dtype in _REINTERPRETED:
        t = t.view(like.dtype)
    elif t.dtype != like.dtype:
        t = t.to(like.dtype)
    return t.view(like.shape) if like.dim() == 0 else t


class InPlace:
    """The array an in-place op writes into, and how it reaches the tensor.

    When the tensor is contiguous and of a wire dtype, the array is the
    tensor's own memory and ``finish`` has nothing to copy. Otherwise the op
    runs on a contiguous copy that ``finish`` writes back into the tensor
    (converting the dtype back if it was widened).
    """

    def __init__(self, tensor: torch.Tensor, op: str, reduction: bool):
        check_tensor(tensor, op)
        self.tensor = tensor
        self.buffer, self._copied = _to_wire(
            tensor, wire_dtype(tensor.dtype, op, reduction))
        self.array = _core_array(self.buffer)

    def finish(self, _result: np.ndarray) -> torch.Tensor:
        """Makes the result visible in the user's tensor and returns it."""
        if self._copied:
            # detach(): the write bypasses autograd, like any in-place
            # collective, and is allowed on a leaf that requires grad.
            self.tensor.detach().copy_(self.buffer.view(self.tensor.shape))
        return self.tensor


class OutOfPlace:
    """A fresh contiguous copy of the tensor for an op that returns a result.

    The op runs in place on the copy; ``finish`` hands the copy back in the
    input's shape and dtype, so the caller's tensor is never modified.
    """

    def __init__(self, tensor: torch.Tensor, op: str, reduction: bool):
        check_tensor(tensor, op)
        self.tensor = tensor
        self.buffer, copied = _to_wire(
            tensor, wire_dtype(tensor.dtype, op, reduction))
        if not copied:
            self.buffer = self.buffer.clone()
        self.array = _core_array(self.buffer)

    def finish(self, _result: np.ndarray) -> torch.Tensor:
        return _from_wire(self.buffer, self.tensor)


class Gathered:
    """Input of an op whose output the core allocates (allgather, alltoall,
    reducescatter): read-only, shared when possible; and its result.

    A 0-dim tensor travels as a 1-element vector, so an allgather of scalars
    has shape ``(size,)``.
    """

    def __init__(self, tensor: torch.Tensor, op: str,
                 reduction: bool = False):
        check_tensor(tensor, op)
        self.tensor = tensor
        self.buffer, _ = _to_wire(
            tensor, wire_dtype(tensor.dtype, op, reduction))
        self.array = _core_array(self.buffer)

    def finish(self, result: np.ndarray) -> torch.Tensor:
        return from_core(result, self.tensor.dtype)


def from_core(result, dtype: torch.dtype) -> torch.Tensor:
    """A tensor of ``dtype`` over an array the core allocated (wire dtype):
    a numpy array, or a CUDA one (``hvd.ops.CudaResult``)."""
    if hasattr(result, "__cuda_array_interface__"):
        out = torch.as_tensor(result,
                              device=torch.device("cuda", result.device))
    else:
        out = torch.from_numpy(result)
    if dtype in _REINTERPRETED:
        return out.view(dtype)
    return out.to(dtype)
