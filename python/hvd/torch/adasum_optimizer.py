"""DistributedOptimizer(op=hvd.Adasum): Adasum of the parameter updates.

Adasum combines vectors by their directions (see docs/design.md), so it is
given the whole update each rank would make, not the gradient: in
``step()`` every rank

    1. copies its parameters (equal on every rank, as after
       ``broadcast_parameters``),
    2. runs the wrapped optimizer's step on its own gradients, with its own
       state (momentum and the like stay local, as in horovod),
    3. takes the difference, the local update, of every parameter,
    4. replaces it by the Adasum of every rank's update (one allreduce per
       parameter with ``op=hvd.Adasum``, named ``adasum.<name>``; the
       runtime fuses them, each keeping its own dot products), and
    5. sets each parameter to its copy plus that combined update.

Adasum gives bitwise the same result on every rank, so the parameters stay
equal. Gradients of several backward passes add up in ``p.grad`` before
``step()`` as torch does; ``backward_passes_per_step`` is kept for horovod's
signature only. With ``process_set=``, ranks outside the set step on their
own; with one rank (in the set) nothing is communicated and ``step()`` is
the wrapped optimizer's.

Unlike horovod, which steps each parameter inside its gradient hook to
overlap the allreduces with the backward pass, all the work happens in
``step()``: simpler, and the same numbers, at the price of that overlap.
"""

from contextlib import contextmanager
from typing import Any, Iterable, Iterator, Optional, Tuple

import torch

import hvd as _hvd
from hvd._core import core as _core

from .collectives.allreduce import allreduce_async_
from .collectives.arguments import set_ranks
from .collectives.handles import synchronize
from .compression import Compressor
from .parameter_names import parameter_names


class _AdasumMixin(torch.optim.Optimizer):
    """The behaviour added to the wrapped optimizer's class (module doc)."""

    def __init__(self, params: Any,
                 named_parameters: Optional[Iterable[Tuple[str, Any]]],
                 compression: Compressor, backward_passes_per_step: int,
                 process_set: Any):
        super().__init__(params)
        self._compression = compression
        self.backward_passes_per_step = backward_passes_per_step
        self.process_set = process_set
        self._parameter_names = parameter_names(
            [p for group in self.param_groups for p in group["params"]],
            named_parameters)

    def _combines(self) -> bool:
        ranks = set_ranks(self.process_set)
        return _hvd.rank() in ranks and len(ranks) > 1

    def step(self, closure: Optional[Any] = None) -> Any:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        if not self._combines():
            super().step()
            _core.count_step()  # for the driver's progress reports
            return loss
        params = [p for group in self.param_groups for p in group["params"]
                  if p.requires_grad]
        with torch.no_grad():
            starts = [p.detach().clone() for p in params]
            super().step()
            pending = []
            for p, start in zip(params, starts):
                # A parameter without a gradient here has not moved: its
                # zero update leaves the other ranks' updates as they are.
                compressed, ctx = self._compression.compress(p - start)
                handle = allreduce_async_(
                    compressed, name=f"adasum.{self._parameter_names[p]}",
                    op=_hvd.Adasum, process_set=self.process_set)
                pending.append((handle, ctx))
            for p, start, (handle, ctx) in zip(params, starts, pending):
                delta = self._compression.decompress(synchronize(handle), ctx)
                p.copy_(start.add_(delta))
        _core.count_step()
        return loss

    def synchronize(self) -> None:
        """Nothing to wait for: step() does all the communication."""

    @contextmanager
    def skip_synchronize(self) -> Iterator[None]:
        raise AssertionError("skipping synchronization is not supported with "
                             "op=hvd.Adasum: step() combines the updates "
                             "itself")
        yield  # pragma: no cover (makes this a generator)

    def set_backward_passes_per_step(self, passes: int) -> None:
        self.backward_passes_per_step = passes


def adasum_optimizer(optimizer: torch.optim.Optimizer,
                     named_parameters: Optional[Iterable[Tuple[str, Any]]],
                     compression: Compressor, backward_passes_per_step: int,
                     process_set: Any) -> torch.optim.Optimizer:
    """``optimizer`` wrapped as described in the module doc: an instance of
    a subclass of ``type(optimizer)`` that takes over its param groups and
    state."""
    base = type(optimizer)
    cls = type(base.__name__, (_AdasumMixin, base),
               {"__module__": _AdasumMixin.__module__})
    wrapped = cls(optimizer.param_groups, named_parameters, compression,
                  backward_passes_per_step, process_set)
    wrapped.state.update(optimizer.state)
    return wrapped
