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

Sparse gradients (``torch.nn.Embedding(sparse=True)``) are reduced by
``sparse_allreduce_async`` (allgathers of their indices and values), or,
with ``sparse_as_dense=True``, densified, allreduced and made sparse
again. With ``groups=`` the gradients of each group are reduced by one
grouped allreduce, started when the whole group is ready (see
``optimizer_groups``).

With ``process_set=`` the gradients are averaged over the ranks of that set
only, as in horovod: every rank of the set steps together; a rank outside
the set installs no hooks, communicates nothing and steps on its own
gradients.

Gradients as views of one buffer (``gradients_as_buffer_views=True``, the
default): after the first synchronize() the dense gradients are views of
one flat buffer per dtype and device, so that fused allreduces run in
place; ``gradient_views.py`` says how, and what it means for
``zero_grad()``.
"""

import functools
import os
import warnings
from contextlib import contextmanager
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple

import torch

import hvd as _hvd
from hvd._core import core as _core

from .adasum_optimizer import adasum_optimizer
from .collectives.allreduce import allreduce_async_, grouped_allreduce_async_
from .collectives.arguments import set_ranks
from .collectives.handles import Handle, synchronize
from .collectives.sparse_allreduce import sparse_allreduce_async
from .compression import Compression, Compressor
from .gradient_views import GradientViews
from .optimizer_groups import Group, form_groups, resolve_groups
from .parameter_names import parameter_names


class _Pending:
    """The reductions started for one group of gradients.

    ``finish()`` waits for each of them and writes its result into its
    parameter's gradient; it waits for all even if one fails, then raises
    the first failure, so that no handle keeps its tensors.
    """

    __slots__ = ("_finishers",)

    def __init__(self):
        self._finishers = []

    def add(self, finisher) -> None:
        self._finishers.append(finisher)

    def finish(self) -> None:
        error = None
        for finisher in self._finishers:
            try:
                finisher()
            except Exception as e:  # noqa: BLE001 - re-raised below
                error = error or e
        if error is not None:
            raise error


class _DistributedMixin(torch.optim.Optimizer):
    """The behaviour added to the wrapped optimizer's class (see module doc).

    Not instantiated directly: :func:`DistributedOptimizer` derives a class
    from this mixin and the wrapped optimizer's class.
    """

    def __init__(self, params: Any,
                 named_parameters: Optional[Iterable[Tuple[str, Any]]],
                 compression: Compressor, backward_passes_per_step: int,
                 op: Any, gradient_predivide_factor: float,
                 groups: Any, sparse_as_dense: bool,
                 process_set: Any, gradients_as_buffer_views: bool):
        super().__init__(params)
        self._compression = compression
        self.process_set = process_set
        self.op = op
        self.gradient_predivide_factor = gradient_predivide_factor
        self.backward_passes_per_step = backward_passes_per_step
        self.sparse_as_dense = sparse_as_dense

        all_params = [p for group in self.param_groups
                      for p in group["params"]]
        self._parameter_names: Dict[torch.Tensor, str] = parameter_names(
            all_params, named_parameters)
        self._allreduce_delay: Dict[torch.Tensor, int] = {
            p: backward_passes_per_step for p in all_params}
        # p -> the reduction started for its group; None while p's hook has
        # fired but its reduction has not started (more backward passes or
        # the rest of its group to come).
        self._handles: Dict[torch.Tensor, Optional[_Pending]] = {}
        self._grad_accs = []
        self._requires_update = set()
        self._synchronized = False
        self._should_synchronize = True
        # Explicit groups (see optimizer_groups): each is reduced by one
        # grouped allreduce once all its gradients are ready.
        self._groups = groups
        self._group_list: List[Group] = []
        self._group_of: Dict[torch.Tensor, Group] = {}
        self._group_ready: Dict[Group, int] = {}
        self._grad_views = (GradientViews() if gradients_as_buffer_views
                            else None)
        if self._included() and (_hvd.size() > 1 or
                                 os.environ.get("HOROVOD_ELASTIC") == "1"):
            self._register_hooks()

    def _included(self) -> bool:
        return _hvd.rank() in set_ranks(self.process_set)

    # -- hooks ---------------------------------------------------------------

    def _register_hooks(self) -> None:
        trained = [p for group in self.param_groups for p in group["params"]
                   if p.requires_grad]
        if self._groups is not None:
            trained = self._agreed_order(trained)
        self._group_list = form_groups(trained, self._groups)
        for group in self._group_list:
            self._group_ready[group] = 0
            for p in group:
                self._group_of[p] = group
        for p in trained:
            self._requires_update.add(p)
            # The AccumulateGrad node of p: its hook runs once p.grad
            # holds this backward pass's gradient.
            grad_acc = p.expand_as(p).grad_fn.next_functions[0][0]
            grad_acc.register_hook(self._make_hook(p))
            self._grad_accs.append(grad_acc)

    def _agreed_order(self, params: List[torch.Tensor]
                      ) -> List[torch.Tensor]:
        """``params`` in the order of the set's first rank, so that every
        rank forms the same groups (as horovod, by parameter names)."""
        names = [self._parameter_names[p] for p in params]
        root = min(set_ranks(self.process_set))
        order = _hvd.broadcast_object(names, root_rank=root,
                                      name="DistributedOptimizer.groups",
                                      process_set=self.process_set)
        position = {name: i for i, name in enumerate(order)}
        differ = sorted(set(names) ^ set(order))
        if differ:
            raise ValueError(
                "DistributedOptimizer(groups=...): the parameters that "
                f"require grad differ from rank {root}'s: "
                f"{', '.join(differ[:5])}; every rank must train the same "
                "parameters")
        return sorted(params, key=lambda p: position[
            self._parameter_names[p]])

    def _make_hook(self, p: torch.Tensor):
        def hook(*_unused):
            if self._allreduce_delay[p] <= 0:
                raise AssertionError(
                    "gradients were computed more than "
                    "backward_passes_per_step times before step(); increase "
                    "backward_passes_per_step to accumulate gradients "
                    "locally")
            assert not p.grad.requires_grad
            self._allreduce_delay[p] -= 1
            self._handles.setdefault(p, None)
            if self._allreduce_delay[p] == 0:
                group = self._group_of[p]
                self._group_ready[group] += 1
                if self._group_ready[group] == len(group):
                    self._start(group)
        return hook

    def _start(self, group: Group) -> None:
        pending = self._allreduce_grads_async(group)
        for p in group:
            self._handles[p] = pending

    def _allreduce_grads_async(self, group: Group) -> _Pending:
        """Starts the reduction of the gradients of ``group``: the dense
        ones (and, with sparse_as_dense, the sparse ones densified) by one
        allreduce each, or one grouped allreduce with explicit groups; the
        sparse ones by ``sparse_allreduce_async``."""
        pending = _Pending()
        dense: List[Tuple[torch.Tensor, torch.Tensor]] = []  # (p, tensor)
        for p in group:
            if p.grad is None:
                # Unused on this rank: contribute zeros so the others'
                # allreduce of the same name completes.
                p.grad = torch.zeros_like(p)
            if p.grad.is_sparse and not self.sparse_as_dense:
                handle = sparse_allreduce_async(
                    p.grad, name=self._parameter_names[p], op=self.op,
                    process_set=self.process_set)
                pending.add(_set_grad(p, handle))
            elif p.grad.is_sparse:
                dense.append((p, p.grad.to_dense()))
            else:
                dense.append((p, self._dense_grad(p)))
        if not dense:
            return pending
        if self.op == _hvd.Average:
            # The core divides by size() after the postscale factor.
            prescale = 1.0 / self.gradient_predivide_factor
            postscale = self.gradient_predivide_factor
        else:
            prescale = postscale = 1.0
        compressed = [self._compression.compress(t) for _, t in dense]
        tensors = [c for c, _ in compressed]
        if self._groups is not None:
            handles = grouped_allreduce_async_(
                tensors, name=self._parameter_names[dense[0][0]],
                op=self.op, prescale_factor=prescale,
                postscale_factor=postscale, process_set=self.process_set)
        else:
            handles = [allreduce_async_(
                t, name=self._parameter_names[p], op=self.op,
                prescale_factor=prescale, postscale_factor=postscale,
                process_set=self.process_set)
                for t, (p, _) in zip(tensors, dense)]
        for (p, tensor), (_, ctx), handle in zip(dense, compressed, handles):
            pending.add(self._write_back(p, tensor, handle, ctx))
        return pending

    def _dense_grad(self, p: torch.Tensor) -> torch.Tensor:
        if self._grad_views is None:
            return p.grad
        return self._grad_views.dense_grad(p)

    def _write_back(self, p: torch.Tensor, tensor: torch.Tensor,
                    handle: Handle, ctx: Any):
        """What writes the reduced ``tensor`` into p.grad once ``handle``
        is done (back to sparse when p.grad was densified)."""
        sparse_dim = p.grad.sparse_dim() if p.grad.is_sparse else None

        def finish() -> None:
            result = self._compression.decompress(synchronize(handle), ctx)
            if sparse_dim is not None:
                p.grad = result.to_sparse(sparse_dim)
            elif result is not p.grad:
                p.grad.copy_(result)
        return finish

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
        for group in self._group_list:
            if any(self._handles.get(p) is None for p in group):
                self._start(group)
        try:
            started = {id(h): h for h in self._handles.values()}
            error = None
            for pending in started.values():
                try:
                    pending.finish()
                except Exception as e:  # noqa: BLE001 - re-raised below
                    error = error or e
            if error is not None:
                raise error
        finally:
            # Also after a failure (an elastic reset follows): nothing stays
            # pending and the next backward pass starts counting afresh.
            self._clear_pending()
        if self._grad_views is not None:
            self._grad_views.lay_out()
        self._synchronized = True

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
        result = super().step(closure)
        _core.count_step()  # for the driver's progress reports
        return result

    def zero_grad(self, *args: Any, **kwargs: Any) -> None:
        if self._handles:
            raise AssertionError(
                "optimizer.zero_grad() was called after loss.backward() but "
                "before optimizer.step() or optimizer.synchronize(); this is "
                "refused because the pending allreduces write into the "
                "gradients")
        zero_others = functools.partial(super().zero_grad, *args, **kwargs)
        if self._grad_views is None or not self._grad_views.zero(zero_others):
            return zero_others()
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
        self._synchronized = False
        self._should_synchronize = True
        self._clear_pending()

    def _clear_pending(self) -> None:
        self._handles = {}
        for p in self._allreduce_delay:
            self._allreduce_delay[p] = self.backward_passes_per_step
        for group in self._group_ready:
            self._group_ready[group] = 0


def _set_grad(p: torch.Tensor, handle: Any):
    """What sets p.grad to the sparse result of ``handle`` once done."""
    def finish() -> None:
        p.grad = synchronize(handle)
    return finish


def DistributedOptimizer(optimizer: torch.optim.Optimizer,
                         named_parameters: Optional[
                             Iterable[Tuple[str, Any]]] = None,
                         compression: Compressor = Compression.none,
                         backward_passes_per_step: int = 1,
                         op: Any = None,
                         gradient_predivide_factor: float = 1.0,
                         num_groups: int = 0,
                         groups: Any = None,
                         sparse_as_dense: bool = False,
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
        num_groups: deprecated spelling of an int ``groups`` (ignored when
            ``groups`` is given).
        groups: reduce the gradients in groups, each as one grouped
            allreduce once all its gradients are ready: an int n cuts the
            parameters into n groups of nearly equal size; a list of lists
            of parameters gives the groups, every parameter not listed
            being a group of its own (see ``optimizer_groups``).
        sparse_as_dense: reduce sparse gradients (``Embedding(sparse=True)``)
            as dense tensors by allreduce, instead of allgathering their
            indices and values; the result is made sparse again.
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
            backward_passes_per_step, a predivide factor with op other
            than Average, or bad groups.
    """
    if op is None:
        op = _hvd.Average
    if gradient_predivide_factor != 1.0 and op != _hvd.Average:
        raise ValueError("gradient_predivide_factor is supported with "
                         "op=hvd.Average only")
    if backward_passes_per_step < 1:
        raise ValueError("backward_passes_per_step must be at least 1, got "
                         f"{backward_passes_per_step}")
    groups = resolve_groups(groups, num_groups)
    if op == _hvd.Adasum:
        return adasum_optimizer(optimizer, named_parameters, compression,
                                backward_passes_per_step, process_set)
    base = type(optimizer)
    cls = type(base.__name__, (_DistributedMixin, base),
               {"__module__": _DistributedMixin.__module__})
    wrapped = cls(optimizer.param_groups, named_parameters, compression,
                  backward_passes_per_step, op, gradient_predivide_factor,
                  groups, sparse_as_dense, process_set,
                  gradients_as_buffer_views)
    wrapped.state.update(optimizer.state)
    return wrapped
