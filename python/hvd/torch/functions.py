"""Model and optimizer state made equal on every rank, and Python objects.

``broadcast_parameters`` overwrites a model's tensors in place with the
root's. ``broadcast_optimizer_state`` makes every rank's optimizer state,
including scalar state (``step``) and the param-group options (``lr``,
``momentum``, ``betas``, ...), equal to the root's. ``broadcast_object`` and
``allgather_object`` move picklable objects (the numpy level's).

All of these are collective: every rank of the process set (default:
every rank) calls them, in the same order. Root ranks are global ranks.
"""

from typing import Any, Iterable, List, Optional, Tuple, Union

import torch

import hvd as _hvd
from hvd.exceptions import InvalidArgumentError, InvalidArgumentTypeError

from .adasum_optimizer import _AdasumMixin
from .collectives.broadcast import broadcast_async_
from .collectives.handles import synchronize
from .optimizer import _DistributedMixin

GLOBAL = _hvd.global_process_set


def broadcast_object(obj: Any, root_rank: int = 0,
                     name: Optional[str] = None,
                     process_set: Any = GLOBAL) -> Any:
    """Returns ``root_rank``'s ``obj`` (pickled) on every rank of the set.

    Only the root's ``obj`` is read; the others may pass None.
    """
    return _hvd.broadcast_object(obj, root_rank, name, process_set)


def allgather_object(obj: Any, name: Optional[str] = None,
                     process_set: Any = GLOBAL) -> List[Any]:
    """Returns the list of the set's ranks' ``obj``, in rank order."""
    return _hvd.allgather_object(obj, name, process_set)


ParamsArg = Union[dict, Iterable[Union[torch.Tensor,
                                       Tuple[str, torch.Tensor]]]]


def broadcast_parameters(params: ParamsArg, root_rank: int,
                         process_set: Any = GLOBAL) -> None:
    """Overwrites ``params`` in place with ``root_rank``'s values.

    Args:
        params: ``model.state_dict()`` (or any dict of name to tensor), or
            ``model.named_parameters()`` / ``model.parameters()`` (or a list
            of tensors or (name, tensor) pairs).
        root_rank: the (global) rank whose values every rank gets.
        process_set: the ranks taking part (default: every rank).

    Raises:
        InvalidArgumentError (a ValueError): ``params`` is not one of the
            above.
        InvalidArgumentTypeError (a TypeError): a value is not a tensor.
    """
    if isinstance(params, dict):
        items = sorted(params.items())
    elif isinstance(params, Iterable) and not isinstance(params, (str, bytes)):
        items = [p if isinstance(p, tuple) else (None, p) for p in params]
    else:
        raise InvalidArgumentError(
            f"invalid params of type {type(params).__name__}: pass a "
            "state_dict or a list of (named) parameters")
    for name, tensor in items:
        if not isinstance(tensor, torch.Tensor):
            raise InvalidArgumentTypeError(
                f"broadcast_parameters: {name!r} is a "
                f"{type(tensor).__name__}, not a tensor")
    handles = [broadcast_async_(tensor, root_rank, name=name,
                                process_set=process_set)
               for name, tensor in items]
    for handle in handles:
        synchronize(handle)


class _TensorSpec:
    """Stands in for a tensor in a pickled optimizer state skeleton.

    ``cuda``: the root's tensor is on a GPU, so every rank's must be (the
    ranks agree on host or GPU); each uses its own current device.
    """

    __slots__ = ("shape", "dtype", "cuda")

    def __init__(self, tensor: torch.Tensor):
        self.shape = tuple(tensor.shape)
        self.dtype = tensor.dtype
        self.cuda = tensor.is_cuda

    def __getstate__(self):
        return self.shape, self.dtype, self.cuda

    def __setstate__(self, state):
        self.shape, self.dtype, self.cuda = state


def _split(value: Any, path: str, tensors: List[Tuple[str, torch.Tensor]]):
    """``value`` with every tensor replaced by a spec; tensors collected."""
    if isinstance(value, torch.Tensor):
        tensors.append((path, value))
        return _TensorSpec(value)
    if isinstance(value, dict):
        return {k: _split(v, f"{path}.{k}", tensors) for k, v in value.items()}
    if type(value) in (list, tuple):
        return type(value)(_split(v, f"{path}.{i}", tensors)
                           for i, v in enumerate(value))
    return value


def _join(skeleton: Any, tensors: List[torch.Tensor]) -> Any:
    """Inverse of ``_split``: specs replaced by ``tensors`` in order."""
    it = iter(tensors)

    def fill(value: Any) -> Any:
        if isinstance(value, _TensorSpec):
            return next(it)
        if isinstance(value, dict):
            return {k: fill(v) for k, v in value.items()}
        if type(value) in (list, tuple):
            return type(value)(fill(v) for v in value)
        return value

    return fill(skeleton)


def broadcast_optimizer_state(optimizer: torch.optim.Optimizer,
                              root_rank: int, model: Any = None,
                              process_set: Any = GLOBAL) -> None:
    """Makes every rank's optimizer state equal to ``root_rank``'s.

    Covers the per-parameter state (tensors such as momentum buffers and
    scalars such as ``step``) and the options of every param group
    (``lr``, ``momentum``, ``betas``, ...). The root's ``state_dict()`` is
    split into its tensors, broadcast in place, and a picklable skeleton of
    everything else, broadcast as one object; the other ranks load the
    result with ``load_state_dict``.

    As in horovod, every rank whose optimizer has no state yet (it has not
    stepped) first creates it by a local step on zero gradients (see
    ``_create_state``), so that every rank starts from the same state (for
    Adam: zero moments and ``step`` 1). As in horovod, that step leaves a
    zero gradient on each parameter that requires grad and had none; unlike
    horovod's, it leaves the parameters' values and their existing
    gradients as they were.

    Args:
        optimizer: a torch optimizer or a ``DistributedOptimizer``.
        root_rank: the (global) rank whose state every rank gets.
        model: accepted for horovod's signature; not needed, since the
            parameters are restored after the zero-gradient step whether or
            not the model is given.
        process_set: the ranks taking part (default: every rank).

    Raises:
        ValueError: the optimizers have a different number of param groups
            or parameters (from ``load_state_dict``).
    """
    if isinstance(model, _hvd.ProcessSet):  # hvd's earlier positional order
        model, process_set = None, model
    is_root = _hvd.rank() == root_rank
    if not optimizer.state_dict()["state"]:
        _create_state(optimizer)
    tensors: List[Tuple[str, torch.Tensor]] = []
    skeleton = _split(optimizer.state_dict(), "", tensors)
    received = broadcast_object(skeleton if is_root else None, root_rank,
                                name="optimizer_state.skeleton",
                                process_set=process_set)
    if not is_root:
        skeleton = received
        tensors = []
        _collect_specs(skeleton, "", tensors)
    handles = [broadcast_async_(t, root_rank, name=f"optimizer_state{path}",
                                process_set=process_set)
               for path, t in tensors]
    for handle in handles:
        synchronize(handle)
    if not is_root:
        optimizer.load_state_dict(_join(skeleton, [t for _, t in tensors]))


def _create_state(optimizer: torch.optim.Optimizer) -> None:
    """Creates ``optimizer``'s state by one local step on zero gradients
    (sparse zeros for SparseAdam), as horovod does, then puts back every
    parameter's value and every gradient that existed before; where there
    was none, the zero gradient stays, as horovod leaves it (its tests
    broadcast it next). Parameters that do not require grad keep ``grad is
    None``.

    Runs on every rank whose optimizer has no state, so the step must not
    be a collective (see ``_local_step``). Optimizers whose step needs a
    closure (L-BFGS) are left without state.
    """
    if isinstance(optimizer, torch.optim.LBFGS):
        return
    params = [p for group in optimizer.param_groups for p in group["params"]
              if p.requires_grad]
    saved = [(p, p.detach().clone(), p.grad) for p in params]
    try:
        for p in params:
            zero = torch.zeros_like(p)
            p.grad = zero.to_sparse() if isinstance(
                optimizer, torch.optim.SparseAdam) else zero
        _local_step(optimizer)
    finally:
        with torch.no_grad():
            for p, value, grad in saved:
                p.copy_(value)
                if grad is not None:
                    p.grad = grad


def _local_step(optimizer: torch.optim.Optimizer) -> None:
    """One step of ``optimizer`` on this rank alone. A DistributedOptimizer
    of either flavour steps as the optimizer class it wraps: its own step
    is a collective (allreduces, or Adasum's combination of the updates),
    which would leave the ranks that do not create state here waiting in
    another collective."""
    for wrapper in (_DistributedMixin, _AdasumMixin):
        if isinstance(optimizer, wrapper):
            super(wrapper, optimizer).step()
            return
    optimizer.step()


def _collect_specs(value: Any, path: str,
                   out: List[Tuple[str, torch.Tensor]]) -> None:
    """Fresh tensors for the specs in ``value``, in ``_split``'s order."""
    if isinstance(value, _TensorSpec):
        device = (torch.device("cuda", torch.cuda.current_device())
                  if value.cuda else torch.device("cpu"))
        out.append((path, torch.empty(value.shape, dtype=value.dtype,
                                      device=device)))
    elif isinstance(value, dict):
        for k, v in value.items():
            _collect_specs(v, f"{path}.{k}", out)
    elif type(value) in (list, tuple):
        for i, v in enumerate(value):
            _collect_specs(v, f"{path}.{i}", out)
