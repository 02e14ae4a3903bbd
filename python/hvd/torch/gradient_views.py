"""DistributedOptimizer's gradients as views of one flat buffer per dtype
and device (``gradients_as_buffer_views=True``; torch DDP's
``gradient_as_bucket_view``).

Until the first synchronize() the optimizer records the order in which its
dense gradients' allreduces start; then each dtype's and device's gradients
move into one buffer laid out in that order, and each ``p.grad`` becomes a
view of it. Backward passes accumulate into the buffer, and a fused
allreduce whose tensors lie back to back there is reduced in place, without
copies into and out of the fusion buffer. So that the views stay,
``zero()`` zeroes the buffers in place whatever ``set_to_none`` says, and a
``p.grad`` that user code replaced is copied back into its view at its next
allreduce.
"""

from typing import Callable, Dict, List, Optional, Tuple

import torch


class GradientViews:
    """The buffers and views of one optimizer's gradients."""

    def __init__(self) -> None:
        # Params in the order their allreduces started, until the buffers
        # exist; then None.
        self._order: Optional[List[torch.Tensor]] = []
        self._views: Dict[torch.Tensor, torch.Tensor] = {}
        self._buffers: List[torch.Tensor] = []

    def dense_grad(self, p: torch.Tensor) -> torch.Tensor:
        """p.grad, moved back into its view if user code replaced it;
        recorded for the layout while the buffers do not exist yet."""
        view = self._views.get(p)
        if view is not None and p.grad is not view:
            view.copy_(p.grad)
            p.grad = view
        elif self._order is not None:
            self._order.append(p)
        return p.grad

    def lay_out(self) -> None:
        """After the first synchronize() that reduced dense gradients:
        moves them into one buffer per dtype and device, in the order their
        allreduces started, and makes each p.grad a view of it."""
        if not self._order:
            return
        layouts: Dict[Tuple[torch.dtype, torch.device], list] = {}
        # A failed first step (an elastic reset) leaves params listed twice.
        for p in dict.fromkeys(self._order):
            g = p.grad
            if g is not None and not g.is_sparse and p.is_contiguous():
                layouts.setdefault((g.dtype, g.device), []).append(p)
        for (dtype, device), params in layouts.items():
            total = sum(p.numel() for p in params)
            buffer = torch.empty(total, dtype=dtype, device=device)
            offset = 0
            for p in params:
                view = buffer[offset:offset + p.numel()].view_as(p)
                view.copy_(p.grad)
                p.grad = view
                self._views[p] = view
                offset += p.numel()
            self._buffers.append(buffer)
        self._order = None

    def zero(self, zero_others: Callable[[], None]) -> bool:
        """Zeroes the buffers in place and keeps every view, after
        `zero_others` (the wrapped optimizer's zero_grad) has zeroed the
        gradients outside them. False, with nothing done, before the
        buffers exist."""
        if not self._views:
            return False
        for p in self._views:
            p.grad = None
        zero_others()
        for buffer in self._buffers:
            buffer.zero_()
        for p, view in self._views.items():
            p.grad = view
        return True
