"""DistributedOptimizer: a torch optimizer that averages gradients over ranks.

As in horovod.torch, ``DistributedOptimizer(opt, ...)`` returns an instance
of a class made on the fly that derives from both :class:`_DistributedMixin`
and ``type(opt)``, built on ``opt``'s param groups (and state). A hook on
each parameter's gradient accumulator starts an asynchronous in-place
allreduce of ``p.grad`` as soon as the gradient has been accumulated
``backward_passes_per_step`` times, so communication overlaps the rest of
the backward pass; ``step()`` first waits for all of them
(``synchronize()``) and then runs the wrapped optimizer's step.

Calling protocol, per rank:

    loss.backward()            # repeated backward_passes_per_step times
    optimizer.step()           # or: optimizer.synchronize(); clip grads;
                               #     with optimizer.skip_synchronize():
                               #         optimizer.step()
    optimizer.zero_grad()      # refused while allreduces are pending

Every rank must compute gradients for the same parameters. Gradients of
several backward passes are summed locally (scale the loss accordingly),
then averaged over ranks. With a single rank (outside an elastic job) no
hooks are installed and nothing is communicated: the results are those of
the wrapped optimizer.

With ``process_set=`` the gradients are averaged over the ranks of that set
only, as in horovod: every rank of the set steps together; a rank outside
the set installs no hooks, communicates nothing and steps on its own
gradients.

Gradients as views of one buffer (``gradients_as_buffer_views=True``, the
default; torch DDP's ``gradient_as_bucket_view``): after the first
synchronize(), the dense gradients of each dtype and device are moved into
one flat buffer, laid out in the order their allreduces started, and each
``p.grad`` becomes a view of it. Backward passes then accumulate into the
buffer, and a fused allreduce whose tensors lie back to back there is
reduced in place, without copies into and out of the fusion buffer. So that
the views stay, ``zero_grad()`` zeroes the buffers in place whatever
``set_to_none`` says (every gradient the optimizer averages exists after
synchronize() anyway); a ``p.grad`` that user code replaced is copied back
into its view at its next allreduce.
"""

import os
import warnings
from contextlib import contextmanager
from typing import Any, Dict, Iterable, Iterator, Optional, Tuple

import torch

import hvd as _hvd

from .adasum_optimizer import adasum_optimizer
from .async_ops import Handle, allreduce_async_, set_ranks, synchronize
from .compression import Compression, Compressor


class _DistributedMixin(torch.optim.Optimizer):
    """The behaviour added to the wrapped optimizer's class (see module doc).

    Not instantiated directly: :func:`DistributedOptimizer` derives a class
    from this mixin and the wrapped optimizer's class.
    """

    def __init__(self, params: Any,
                 named_parameters: Optional[Iterable[Tuple[str, Any]]],
                 compression: Compressor, backward_passes_per_step: int,
                 op: Any, gradient_predivide_factor: float,
                 process_set: Any, gradients_as_buffer_views: bool):
        super().__init__(params)
        self._compression = compression
        self.process_set = process_set
        self.op = op
        self.gradient_predivide_factor = gradient_predivide_factor
        self.backward_passes_per_step = backward_passes_per_step

        all_params = [p for group in self.param_groups
                      for p in group["params"]]
        if named_parameters is None:
            named = [(f"noname.{i}", p) for i, p in enumerate(all_params)]
        else:
            named = list(named_parameters)
        if any(not isinstance(item, tuple) or len(item) != 2
               for item in named):
            raise ValueError("named_parameters should be a sequence of "
                             "(name, parameter) tuples, usually produced by "
                             "model.named_parameters()")
        dups = _duplicates(name for name, _ in named)
        if dups:
            raise ValueError("parameter names in named_parameters must be "
                             f"unique; found duplicates: {', '.join(dups)}")
        named_ids = {id(p) for _, p in named}
        unnamed = [p for p in all_params if id(p) not in named_ids]
        if unnamed:
            raise ValueError(
                "named_parameters was given, but it does not name "
                f"{len(unnamed)} of the optimizer's parameters (shapes: "
                f"{', '.join(str(tuple(p.shape)) for p in unnamed)})")

        self._parameter_names: Dict[torch.Tensor, str] = {
            p: name for name, p in named}
        self._allreduce_delay: Dict[torch.Tensor, int] = {
            p: backward_passes_per_step for p in all_params}
        self._handles: Dict[torch.Tensor, Tuple[Optional[Handle], Any]] = {}
        self._grad_accs = []
        self._requires_update = set()
        self._synchronized = False
        self._should_synchronize = True
        # Params in the order their allreduces started, until the buffers
        # exist; then p -> its view.
        self._grad_order = [] if gradients_as_buffer_views else None
        self._grad_views: Dict[torch.Tensor, torch.Tensor] = {}
        self._grad_buffers = []
        if self._included() and (_hvd.size() > 1 or
                                 os.environ.get("HOROVOD_ELASTIC") == "1"):
            self._register_hooks()

    def _included(self) -> bool:
        return _hvd.rank() in set_ranks(self.process_set)

    # -- hooks ---------------------------------------------------------------

    def _register_hooks(self) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                if not p.requires_grad:
                    continue
                self._requires_update.add(p)
                # The AccumulateGrad node of p: its hook runs once p.grad
                # holds this backward pass's gradient.
                grad_acc = p.expand_as(p).grad_fn.next_functions[0][0]
                grad_acc.register_hook(self._make_hook(p))
                self._grad_accs.append(grad_acc)

    def _make_hook(self, p: torch.Tensor):
        def hook(*_unused):
            if p in self._handles and self._handles[p][0] is not None:
                raise AssertionError(
                    "gradients were computed more than "
                    "backward_passes_per_step times before step(); increase "
                    "backward_passes_per_step to accumulate gradients "
                    "locally")
            assert not p.grad.requires_grad
            self._allreduce_delay[p] -= 1
            handle, ctx = None, None
            if self._allreduce_delay[p] == 0:
                handle, ctx = self._allreduce_grad_async(p)
            self._handles[p] = (handle, ctx)
        return hook

    def _allreduce_grad_async(self, p: torch.Tensor) -> Tuple[Handle, Any]:
        if p.grad is None:
            # Unused on this rank: contribute zeros so the others' allreduce
            # of the same name completes.
            p.grad = torch.zeros_like(p)
        if p.grad.is_sparse:
            raise TypeError(
                f"parameter {self._parameter_names[p]!r} has a sparse "
                "gradient; DistributedOptimizer supports dense gradients "
                "only")
        view = self._grad_views.get(p)
        if view is not None and p.grad is not view:
            view.copy_(p.grad)
            p.grad = view
        elif self._grad_order is not None:
            self._grad_order.append(p)
        if self.op == _hvd.Average:
            # The core divides by size() after the postscale factor.
            prescale = 1.0 / self.gradient_predivide_factor
            postscale = self.gradient_predivide_factor
        else:
            prescale = postscale = 1.0
        compressed, ctx = self._compression.compress(p.grad)
        handle = allreduce_async_(compressed, name=self._parameter_names[p],
                                  op=self.op, prescale_factor=prescale,
                                  postscale_factor=postscale,
                                  process_set=self.process_set)
        return handle, ctx

    # -- public API ----------------------------------------------------------

    def synchronize(self) -> None:
        """Waits for every gradient's allreduce and writes the results.

        Starts the allreduce of any gradient whose hook has not fired yet
        (fewer backward passes than expected, or unused parameters). A rank
        outside the optimizer's process set has nothing to wait for.
        """
        if not self._grad_accs:  # no hooks: one rank, or outside the set
            self._synchronized = True
            return
        for p in self._requires_update - set(self._handles):
            self._handles[p] = self._allreduce_grad_async(p)
        for p, (handle, ctx) in list(self._handles.items()):
            if handle is None:
                self._handles[p] = self._allreduce_grad_async(p)
        try:
            for p, (handle, ctx) in self._handles.items():
                result = self._compression.decompress(synchronize(handle),
                                                      ctx)
                if result is not p.grad:
                    p.grad.copy_(result)
        finally:
            # Also after a failure (an elastic reset follows): nothing stays
            # pending and the next backward pass starts counting afresh.
            self._handles.clear()
            for q in self._allreduce_delay:
                self._allreduce_delay[q] = self.backward_passes_per_step
        if self._grad_order:
            self._make_grad_views(self._grad_order)
            self._grad_order = None
        self._synchronized = True

    def _make_grad_views(self, order) -> None:
        """Moves the gradients of `order` into one buffer per dtype and
        device, in that order, and makes each p.grad a view of it."""
        layouts: Dict[Tuple[torch.dtype, torch.device], list] = {}
        # A failed first step (an elastic reset) leaves names listed twice.
        for p in dict.fromkeys(order):
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
                self._grad_views[p] = view
                offset += p.numel()
            self._grad_buffers.append(buffer)

    @contextmanager
    def skip_synchronize(self) -> Iterator[None]:
        """Makes step() skip synchronize(), after an explicit synchronize()."""
        self._should_synchronize = False
        try:
            yield
        finally:
            self._should_synchronize = True

    def step(self, closure: Optional[Any] = None) -> Any:
        if self._should_synchronize:
            if self._synchronized:
                warnings.warn("optimizer.step() called without "
                              "optimizer.skip_synchronize() after "
                              "optimizer.synchronize(); the gradients are "
                              "allreduced twice")
            self.synchronize()
        self._synchronized = False
        return super().step(closure)

    def zero_grad(self, *args: Any, **kwargs: Any) -> None:
        if self._handles:
            raise AssertionError(
                "optimizer.zero_grad() was called after loss.backward() but "
                "before optimizer.step() or optimizer.synchronize(); this is "
                "refused because the pending allreduces write into the "
                "gradients")
        if not self._grad_views:
            return super().zero_grad(*args, **kwargs)
        for p in self._grad_views:
            p.grad = None
        super().zero_grad(*args, **kwargs)  # the gradients outside buffers
        for buffer in self._grad_buffers:
            buffer.zero_()
        for p, view in self._grad_views.items():
            p.grad = view
        return None

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        self._reset_pending()
        super().load_state_dict(state_dict)

    def set_backward_passes_per_step(self, passes: int) -> None:
        """Changes how many backward passes are accumulated per step."""
        self.backward_passes_per_step = passes
        for p in self._allreduce_delay:
            self._allreduce_delay[p] = passes

    def _reset_pending(self) -> None:
        self._handles = {}
        self._synchronized = False
        self._should_synchronize = True
        for p in self._allreduce_delay:
            self._allreduce_delay[p] = self.backward_passes_per_step


def _duplicates(names: Iterable[str]) -> list:
    seen, dups = set(), []
    for name in names:
        if name in seen and name not in dups:
            dups.append(name)
        seen.add(name)
    return dups


def DistributedOptimizer(optimizer: torch.optim.Optimizer,
                         named_parameters: Optional[
                             Iterable[Tuple[str, Any]]] = None,
                         compression: Compressor = Compression.none,
                         backward_passes_per_step: int = 1,
                         op: Any = None,
                         gradient_predivide_factor: float = 1.0,
                         process_set: Any = _hvd.global_process_set,
                         gradients_as_buffer_views: bool = True
                         ) -> torch.optim.Optimizer:
    """Wraps ``optimizer`` so that gradients are allreduced before each step.

    Args:
        optimizer: the torch optimizer to wrap; its param groups and state
            are taken over (keep using the returned object).
        named_parameters: ``model.named_parameters()``; names the allreduce
            of each gradient ``allreduce.<name>``. Without it, parameters
            are named by position.
        compression: ``Compression.none`` or ``Compression.fp16``.
        backward_passes_per_step: backward passes whose gradients are
            summed locally before they are allreduced.
        op: ``hvd.Average`` (default) or ``hvd.Sum`` (or Min/Max/Product);
            ``hvd.Adasum`` combines the updates instead (adasum_optimizer.py).
        gradient_predivide_factor: with Average, gradients are multiplied by
            ``1 / f`` before the sum and by ``f / size()`` after it.
        process_set: average over the ranks of this ``hvd.ProcessSet`` only
            (default: every rank). Ranks outside it do not communicate.
        gradients_as_buffer_views: after the first step, keep the
            gradients as views of one flat buffer so that fused allreduces
            need no copies (see the module doc). False keeps torch's own
            gradient tensors.

    Returns:
        An instance of a subclass of ``type(optimizer)``.

    Raises:
        ValueError: bad named_parameters, a non-positive
            backward_passes_per_step, or a predivide factor with op other
            than Average.
    """
    if op is None:
        op = _hvd.Average
    if gradient_predivide_factor != 1.0 and op != _hvd.Average:
        raise ValueError("gradient_predivide_factor is supported with "
                         "op=hvd.Average only")
    if backward_passes_per_step < 1:
        raise ValueError("backward_passes_per_step must be at least 1, got "
                         f"{backward_passes_per_step}")
    if op == _hvd.Adasum:
        return adasum_optimizer(optimizer, named_parameters, compression,
                                backward_passes_per_step, process_set)
    base = type(optimizer)
    cls = type(base.__name__, (_DistributedMixin, base),
               {"__module__": _DistributedMixin.__module__})
    wrapped = cls(optimizer.param_groups, named_parameters, compression,
                  backward_passes_per_step, op, gradient_predivide_factor,
                  process_set, gradients_as_buffer_views)
    wrapped.state.update(optimizer.state)
    return wrapped
