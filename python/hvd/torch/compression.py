"""Gradient compression applied around an allreduce, as in horovod.torch.

A compressor turns a tensor into the tensor that is reduced plus a context,
and turns the reduced tensor back using that context::

    compressed, ctx = Compression.fp16.compress(tensor)
    reduced = allreduce(compressed)
    result = Compression.fp16.decompress(reduced, ctx)
"""

from typing import Any, Tuple

import torch


class Compressor:
    """Interface: compress before the collective, decompress after it."""

    @staticmethod
    def compress(tensor: torch.Tensor) -> Tuple[torch.Tensor, Any]:
        """Returns the tensor to send and the context ``decompress`` needs."""
        raise NotImplementedError

    @staticmethod
    def decompress(tensor: torch.Tensor, ctx: Any) -> torch.Tensor:
        """Returns the tensor in its original form, from ``compress``'s ctx."""
        raise NotImplementedError


class NoneCompressor(Compressor):
    """Sends the tensor unchanged."""

    @staticmethod
    def compress(tensor: torch.Tensor) -> Tuple[torch.Tensor, Any]:
        return tensor, None

    @staticmethod
    def decompress(tensor: torch.Tensor, ctx: Any) -> torch.Tensor:
        return tensor


class FP16Compressor(Compressor):
    """Sends floating-point tensors as float16; other dtypes unchanged.

    The context is the original dtype, restored by ``decompress``.
    """

    @staticmethod
    def compress(tensor: torch.Tensor) -> Tuple[torch.Tensor, Any]:
        dtype = tensor.dtype
        if dtype.is_floating_point and dtype != torch.float16:
            return tensor.to(torch.float16), dtype
        return tensor, dtype

    @staticmethod
    def decompress(tensor: torch.Tensor, ctx: Any) -> torch.Tensor:
        if ctx is not None and tensor.dtype != ctx:
            return tensor.to(ctx)
        return tensor


class Compression:
    """The compressors: ``Compression.none`` and ``Compression.fp16``."""

    none = NoneCompressor
    fp16 = FP16Compressor
