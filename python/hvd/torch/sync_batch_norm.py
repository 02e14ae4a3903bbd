"""``SyncBatchNorm``: batch normalization over the batches of all ranks.

In training mode every rank normalizes its rows with the mean and variance
of the global batch (the concatenation of every rank's rows), and the
running statistics follow the global batch too, so that N ranks with
``b_r`` rows each compute what one ``torch.nn.BatchNorm`` would on all
``sum(b_r)`` rows. Ranks may hold different numbers of rows, zero
included.

Works with plain torch operations, so on CPU tensors (horovod's version
needs CUDA kernels). Statistics and the sums of the backward pass are
accumulated in float64 whatever the input's dtype.

Communication: one allgather per forward (each rank's row count, mean and
sum of squared deviations per channel, combined here with the parallel
variance formula, which unlike a sum of squares does not lose the variance
to cancellation when the mean is large) and one allreduce per backward
(the per-channel sums of the output gradient and of gradient times
normalized input). Each is a synchronous collective, so layers never have
two in flight and every layer can use the same two names.

As in horovod, the gradients of ``weight`` and ``bias`` are this rank's
share only: their sum over the ranks is BatchNorm's gradient on the global
batch, and ``DistributedOptimizer`` reduces them like every other
parameter's. The input gradient already includes every rank's share.
"""

from typing import Any, List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch.autograd.function import once_differentiable
from torch.nn.modules.batchnorm import _BatchNorm

import hvd as _hvd

from .collectives.allgather import allgather_async
from .collectives.allreduce import allreduce_async
from .collectives.handles import synchronize

FORWARD_NAME = "sync_batch_norm.forward"
BACKWARD_NAME = "sync_batch_norm.backward"


def _channel_dims(x: torch.Tensor) -> List[int]:
    """Every dimension but the channels (dimension 1)."""
    return [0] + list(range(2, x.dim()))


def _as_channels(v: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Per-channel vector `v` shaped to broadcast against `x`."""
    return v.view([1, -1] + [1] * (x.dim() - 2))


def local_moments(x: torch.Tensor) -> torch.Tensor:
    """This rank's statistics as one float64 row [count, mean(C), m2(C)]:
    count values per channel, their mean and the sum of their squared
    deviations from it (zeros for an empty batch)."""
    channels = x.size(1)
    count = x.numel() // channels
    x64 = x.detach().to(torch.float64)
    if count == 0:
        mean = torch.zeros(channels, dtype=torch.float64, device=x.device)
        m2 = torch.zeros_like(mean)
    else:
        dims = _channel_dims(x)
        mean = x64.mean(dims)
        m2 = (x64 - _as_channels(mean, x)).square().sum(dims)
    row = torch.cat([torch.tensor([float(count)], dtype=torch.float64,
                                  device=x.device), mean, m2])
    return row.cpu().unsqueeze(0)


def combine_moments(rows: torch.Tensor
                    ) -> Tuple[float, torch.Tensor, torch.Tensor]:
    """Global (count, mean, biased variance) from the ranks' rows of
    :func:`local_moments` (one per rank, shape (ranks, 2C+1)).

    Chan et al.'s pairwise update, applied to all ranks at once: the global
    sum of squared deviations is each rank's own plus its count times the
    squared distance of its mean from the global mean. The variance is nan
    when the count is 0.
    """
    channels = (rows.size(1) - 1) // 2
    counts = rows[:, 0]
    means = rows[:, 1:1 + channels]
    m2s = rows[:, 1 + channels:]
    total = float(counts.sum())
    if total == 0:
        nan = torch.full((channels,), float("nan"), dtype=torch.float64)
        return 0.0, nan, nan.clone()
    weights = counts.unsqueeze(1)
    mean = (weights * means).sum(0) / total
    m2 = m2s.sum(0) + (weights * (means - mean).square()).sum(0)
    return total, mean, m2 / total


def update_running_stats(running_mean: torch.Tensor,
                         running_var: torch.Tensor, mean: torch.Tensor,
                         var: torch.Tensor, count: float,
                         factor: float) -> None:
    """BatchNorm's update with the batch's mean and unbiased variance:
    ``running = (1 - factor) * running + factor * batch``."""
    unbiased = var * (count / (count - 1))
    running_mean.copy_((1 - factor) * running_mean.to(torch.float64)
                       + factor * mean.to(running_mean.device))
    running_var.copy_((1 - factor) * running_var.to(torch.float64)
                      + factor * unbiased.to(running_var.device))


class SyncBatchNormFunction(torch.autograd.Function):
    """Normalizes with the global batch's statistics; the backward pass
    reduces the per-channel gradient sums over the set."""

    @staticmethod
    def forward(ctx, input: torch.Tensor, weight: Optional[torch.Tensor],
                bias: Optional[torch.Tensor],
                running_mean: Optional[torch.Tensor],
                running_var: Optional[torch.Tensor], eps: float,
                factor: Optional[float], process_set: Any) -> torch.Tensor:
        rows = synchronize(allgather_async(local_moments(input),
                                           name=FORWARD_NAME,
                                           process_set=process_set))
        count, mean, var = combine_moments(rows)
        if count <= 1:
            # Every rank saw the same count, so every rank raises here.
            raise ValueError(
                "SyncBatchNorm: expected more than 1 value per channel in "
                f"the global batch when training, got {int(count)} (input "
                f"size on this rank {list(input.size())}); give the ranks "
                "more rows, or call .eval()")
        mean = mean.to(input.device)
        invstd = (var.to(input.device) + eps).rsqrt()
        if running_mean is not None and factor is not None:
            update_running_stats(running_mean, running_var, mean, var, count,
                                 factor)
        x_hat = ((input.to(torch.float64) - _as_channels(mean, input))
                 * _as_channels(invstd, input))
        out = x_hat
        if weight is not None:
            out = out * _as_channels(weight.to(torch.float64), input)
        if bias is not None:
            out = out + _as_channels(bias.to(torch.float64), input)
        ctx.save_for_backward(input, weight, mean, invstd)
        ctx.count = count
        ctx.process_set = process_set
        return out.to(input.dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output: torch.Tensor):
        input, weight, mean, invstd = ctx.saved_tensors
        need_input, need_weight, need_bias = ctx.needs_input_grad[:3]
        dims = _channel_dims(input)
        dy = grad_output.to(torch.float64)
        x_hat = ((input.to(torch.float64) - _as_channels(mean, input))
                 * _as_channels(invstd, input))
        sum_dy = dy.sum(dims)
        sum_dy_xhat = (dy * x_hat).sum(dims)
        grad_input = grad_weight = grad_bias = None
        if need_weight:
            grad_weight = sum_dy_xhat.to(weight.dtype)
        if need_bias:
            grad_bias = sum_dy.to(weight.dtype)
        if need_input:
            sums = torch.cat([sum_dy, sum_dy_xhat]).cpu()
            sums = synchronize(allreduce_async(sums, name=BACKWARD_NAME,
                                               op=_hvd.Sum,
                                               process_set=ctx.process_set))
            sums = sums.to(input.device) / ctx.count
            channels = mean.numel()
            mean_dy, mean_dy_xhat = sums[:channels], sums[channels:]
            scale = invstd
            if weight is not None:
                scale = scale * weight.to(torch.float64)
            grad_input = (_as_channels(scale, input)
                          * (dy - _as_channels(mean_dy, input)
                             - x_hat * _as_channels(mean_dy_xhat, input)))
            grad_input = grad_input.to(input.dtype)
        return grad_input, grad_weight, grad_bias, None, None, None, None, None


class SyncBatchNorm(_BatchNorm):
    """BatchNorm over the concatenation of the ranks' batches.

    Arguments as ``torch.nn.BatchNorm*d`` (and horovod's SyncBatchNorm):
    ``num_features`` (C of inputs shaped (N, C, ...)), ``eps``, ``momentum``
    (None: cumulative average), ``affine``, ``track_running_stats``; plus
    ``process_set``, the ranks whose batches are combined (default every
    rank), which every rank of that set must pass and only they may call.

    Every rank of the set must call forward (and backward) the same number
    of times and in the same order as the other layers, also with an empty
    batch. Batch statistics are synchronized whenever they are used: in
    training mode, and in eval mode without tracked running statistics (as
    horovod does). In eval mode with running statistics, and when the set
    has a single rank, it is a plain BatchNorm.
    """

    def __init__(self, num_features: int, eps: float = 1e-5,
                 momentum: Optional[float] = 0.1, affine: bool = True,
                 track_running_stats: bool = True,
                 process_set: Any = _hvd.global_process_set) -> None:
        super().__init__(num_features, eps, momentum, affine,
                         track_running_stats)
        self.process_set = process_set

    def _check_input_dim(self, input: torch.Tensor) -> None:
        if input.dim() < 2:
            raise ValueError("SyncBatchNorm: expected an input of at least 2 "
                             f"dimensions (N, C, ...), got {input.dim()}-D")

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        self._check_input_dim(input)
        if input.size(1) != self.num_features:
            # RuntimeError: what torch's BatchNorm raises for this.
            raise RuntimeError(
                f"SyncBatchNorm: expected {self.num_features} channels "
                f"(dimension 1), got input of size {list(input.size())}")
        factor = None
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
            factor = (1.0 / float(self.num_batches_tracked)
                      if self.momentum is None else self.momentum)
        use_batch_stats = self.training or self.running_mean is None
        if not use_batch_stats or self._set_size() == 1:
            return F.batch_norm(
                input, self.running_mean, self.running_var, self.weight,
                self.bias, use_batch_stats,
                0.0 if factor is None else factor, self.eps)
        if not self.process_set.included():
            raise ValueError(
                f"SyncBatchNorm: rank {_hvd.rank()} is not in "
                f"{self.process_set!r}; only its ranks may call this layer")
        return SyncBatchNormFunction.apply(
            input, self.weight, self.bias,
            self.running_mean if self.training else None,
            self.running_var if self.training else None, self.eps, factor,
            self.process_set)

    def _set_size(self) -> int:
        return len(self.process_set.ranks)
