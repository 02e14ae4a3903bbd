"""TorchState: the model, optimizer, samplers and counters an elastic torch
job commits, restores after a failure and syncs from rank 0.

Each keyword argument whose value has a handler (see the registry below) is
kept through that handler; every other one is an ObjectState attribute
(deep-copied on save, broadcast as a pickle on sync)::

    state = hvd.elastic.TorchState(model=model, optimizer=optimizer,
                                   sampler=sampler, scheduler=scheduler,
                                   epoch=0, batch=0)

Handlers, first match wins:

* ``torch.nn.Module``: ``state_dict()`` copied to CPU on save,
  ``load_state_dict`` on restore, ``broadcast_parameters`` on sync.
* ``torch.optim.Optimizer``: the same, ``broadcast_optimizer_state`` on
  sync.
* ``ElasticSampler``: its ``state_dict()`` (epoch, processed indices);
  ``commit()`` first merges the indices every rank processed since the
  last commit, so that the committed progress is the job's, not one
  rank's; sync merges and broadcasts rank 0's epoch; after every reset,
  restore and sync the sampler works out what is left for the current
  world; the share is cut when the loader is next iterated.
* anything else with ``state_dict()`` and ``load_state_dict()`` (an LR
  scheduler, a GradScaler): its ``state_dict()`` deep-copied on save,
  loaded on restore, rank 0's broadcast as a pickle on sync.

Differences from horovod.torch.elastic.TorchState, on purpose:

* ``sync()`` ends with ``save()``: a restore after a sync goes back to the
  synced state, not to the rank's own last commit. Attributes are
  broadcast from their live values (horovod broadcasts the last saved ones
  while it broadcasts the live model; in ``hvd.elastic.run`` the two agree,
  because sync follows a restore or a commit).
* Saved model and optimizer tensors are CPU copies (no second copy of the
  model in GPU memory).
* ``commit()`` merges the samplers' progress over ranks (one allgather of
  the indices recorded since the last commit). hvd skips the sync after a
  reset that brings no new worker, so the merge cannot wait for the sync as
  in horovod.
* Objects with ``state_dict``/``load_state_dict`` (LR schedulers) have a
  handler; horovod deep-copies them, optimizer reference included.
"""

import copy
import functools
import inspect
from collections import OrderedDict
from typing import Any, Dict, List, Optional, Set, Tuple, Type

import torch

from ...elastic.state import ObjectState
from ..functions import (allgather_object, broadcast_object,
                         broadcast_optimizer_state, broadcast_parameters)
from ...basics import rank
from .sampler import ElasticSampler


def _cpu_copy(value: Any) -> Any:
    """A deep copy of ``value`` with every tensor copied to the CPU.

    Dicts (an OrderedDict stays one, with its ``_metadata``, which
    ``Module.load_state_dict`` reads), lists and tuples are rebuilt; other
    values are deep-copied.
    """
    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu", copy=True)
    if isinstance(value, OrderedDict):
        out: Any = OrderedDict((k, _cpu_copy(v)) for k, v in value.items())
        metadata = getattr(value, "_metadata", None)
        if metadata is not None:
            out._metadata = copy.deepcopy(metadata)
        return out
    if isinstance(value, dict):
        return {k: _cpu_copy(v) for k, v in value.items()}
    if type(value) in (list, tuple):
        return type(value)(_cpu_copy(v) for v in value)
    return copy.deepcopy(value)


class StateHandler:
    """Keeps one attribute of a TorchState: save, restore, sync.

    ``name`` is the attribute's name, used to name collectives; a handler
    written for Horovod (constructor ``(value)``) gets it set afterwards.
    Subclasses save in their constructor, so that a restore before the
    first commit returns to the state the TorchState was built with.
    """

    def __init__(self, value: Any, name: Optional[str] = None):
        self.value = value
        self.name = name

    def save(self) -> None:
        raise NotImplementedError

    def restore(self) -> None:
        raise NotImplementedError

    def sync(self) -> None:
        """Collective: makes the value equal to rank 0's."""
        raise NotImplementedError

    def before_commit(self) -> None:
        """Collective, at every commit before save(). Nothing by default."""

    def on_reset(self) -> None:
        """After the job reset, before the reset callbacks. Nothing by
        default."""

    def set_value(self, value: Any) -> None:
        """The attribute was assigned a new object: keep it, and save it."""
        self.value = value
        self.save()


class ModelStateHandler(StateHandler):
    """A ``torch.nn.Module``: its state_dict, parameters and buffers."""

    def __init__(self, model: torch.nn.Module, name: str):
        super().__init__(model, name)
        self.save()

    def save(self) -> None:
        self._saved = _cpu_copy(self.value.state_dict())

    def restore(self) -> None:
        # Copies into the existing tensors: the optimizer's references to
        # the parameters stay valid.
        self.value.load_state_dict(self._saved)

    def sync(self) -> None:
        broadcast_parameters(self.value.state_dict(), root_rank=0)


class OptimizerStateHandler(StateHandler):
    """A ``torch.optim.Optimizer``: per-parameter state and param groups."""

    def __init__(self, optimizer: torch.optim.Optimizer, name: str):
        super().__init__(optimizer, name)
        self.save()

    def save(self) -> None:
        self._saved = _cpu_copy(self.value.state_dict())

    def restore(self) -> None:
        # A copy: some torch releases keep the loaded tensors as the
        # optimizer's state, which the next step would update in place.
        self.value.load_state_dict(copy.deepcopy(self._saved))

    def sync(self) -> None:
        broadcast_optimizer_state(self.value, root_rank=0)


class SamplerStateHandler(StateHandler):
    """An ``ElasticSampler``: its epoch and processed indices.

    ``before_commit`` merges the indices each rank recorded since the last
    merge into every rank's sampler, so that what is saved is the job's
    progress. Only the new indices travel, unless the sampler changed
    otherwise (a new epoch, a restore), in which case all of them do.
    """

    def __init__(self, sampler: ElasticSampler, name: str):
        super().__init__(sampler, name)
        # The job-wide processed indices as of the last merge, and their
        # epoch: what the other ranks know already.
        self._merged: Tuple[int, Set[int]] = (sampler.epoch, set())
        self.save()

    def save(self) -> None:
        self._saved = copy.deepcopy(self.value.state_dict())

    def restore(self) -> None:
        self.value.load_state_dict(copy.deepcopy(self._saved))
        self._merged = (self.value.epoch, set(self.value.processed_indices))

    def sync(self) -> None:
        processed = allgather_object(self.value.processed_indices,
                                     name=f"hvd.elastic.{self.name}.processed")
        state = self.value.state_dict()
        state["processed_indices"] = set().union(*processed)
        state = broadcast_object(state, root_rank=0,
                                 name=f"hvd.elastic.{self.name}.state")
        self.value.load_state_dict(state)
        self._merged = (self.value.epoch, set(self.value.processed_indices))

    def before_commit(self) -> None:
        sampler = self.value
        epoch, merged = self._merged
        # Only what the others have not seen, if the last merge still holds
        # here (same epoch, nothing forgotten since).
        current = (epoch == sampler.epoch and
                   merged <= sampler.processed_indices)
        new = sampler.processed_indices - merged if current else \
            sampler.processed_indices
        gathered = allgather_object(
            (sampler.epoch, current, sorted(new)),
            name=f"hvd.elastic.{self.name}.commit")
        epochs = [e for e, _, _ in gathered]
        if any(e != sampler.epoch for e in epochs):
            raise RuntimeError(
                f"hvd.elastic.TorchState.commit: the ranks' samplers "
                f"{self.name!r} are at different epochs (by rank: {epochs}); "
                "call set_epoch on every rank alike")
        if all(c for _, c, _ in gathered):
            union = set(merged)
        else:
            # Some rank's last merge no longer holds: every rank sends all.
            gathered = allgather_object(
                (sampler.epoch, False, sorted(sampler.processed_indices)),
                name=f"hvd.elastic.{self.name}.commit_all")
            union = set()
        for _, _, indices in gathered:
            union.update(indices)
        sampler.processed_indices = union
        self._merged = (sampler.epoch, set(union))

    def on_reset(self) -> None:
        self.value.reset()


class StatefulHandler(StateHandler):
    """Any object with ``state_dict()`` and ``load_state_dict()``."""

    def __init__(self, value: Any, name: str):
        super().__init__(value, name)
        self.save()

    def save(self) -> None:
        self._saved = _cpu_copy(self.value.state_dict())

    def restore(self) -> None:
        self.value.load_state_dict(copy.deepcopy(self._saved))

    def sync(self) -> None:
        state = broadcast_object(_cpu_copy(self.value.state_dict()),
                                 root_rank=0,
                                 name=f"hvd.elastic.{self.name}.state")
        self.value.load_state_dict(state)


def _has_state_dict(value: Any) -> bool:
    return (callable(getattr(value, "state_dict", None)) and
            callable(getattr(value, "load_state_dict", None)))


# (predicate or type, handler class); the first match is used.
_handler_registry: List[Tuple[Any, Type[StateHandler]]] = [
    (torch.nn.Module, ModelStateHandler),
    (torch.optim.Optimizer, OptimizerStateHandler),
    (ElasticSampler, SamplerStateHandler),
    (_has_state_dict, StatefulHandler),
]


def get_handler_registry() -> List[Tuple[Any, Type[StateHandler]]]:
    """The (type or predicate, handler class) pairs TorchState tries, in
    order. A handler class is called as ``cls(value, name)``, or as
    ``cls(value)`` if that is all its constructor takes (Horovod's)."""
    return list(_handler_registry)


def set_handler_registry(
        registry: List[Tuple[Any, Type[StateHandler]]]) -> None:
    """Replaces the registry for TorchStates built from now on."""
    global _handler_registry
    _handler_registry = list(registry)


def _make_handler(handler_cls: Type[StateHandler], value: Any,
                  name: str) -> StateHandler:
    """``handler_cls(value, name)``, or ``handler_cls(value)`` for a class
    written for Horovod's registry, which passes the value only."""
    try:
        inspect.signature(handler_cls).bind(value, name)
    except TypeError:
        handler = handler_cls(value)
        if getattr(handler, "name", None) is None:
            handler.name = name
        return handler
    return handler_cls(value, name)


def _handler_for(value: Any, name: str) -> Optional[StateHandler]:
    for match, handler_cls in _handler_registry:
        if isinstance(match, type):
            if isinstance(value, match):
                return _make_handler(handler_cls, value, name)
        elif match(value):
            return _make_handler(handler_cls, value, name)
    return None


class TorchState(ObjectState):
    """State of an elastic torch job (see the module doc).

    Args:
        model: a ``torch.nn.Module``, or None.
        optimizer: a ``torch.optim.Optimizer`` (a DistributedOptimizer
            too), or None.
        **kwargs: more attributes: samplers, schedulers, other modules and
            optimizers (through their handlers), picklable values (as in
            ObjectState).

    Every attribute given is read and assigned as ``state.<name>``;
    assigning a new model, optimizer or sampler to it saves that object at
    once. save() and restore() are local; sync() and commit() are
    collective (every rank, in the same order). Not thread-safe.
    """

    def __init__(self, model: Optional[torch.nn.Module] = None,
                 optimizer: Optional[torch.optim.Optimizer] = None,
                 **kwargs: Any):
        kwargs.update(model=model, optimizer=optimizer)
        handlers: Dict[str, StateHandler] = {}
        plain: Dict[str, Any] = {}
        for name, value in kwargs.items():
            handler = _handler_for(value, name)
            if handler is None:
                plain[name] = value
            else:
                handlers[name] = handler
        object.__setattr__(self, "_handlers", handlers)
        for name, handler in handlers.items():
            object.__setattr__(self, name, handler.value)
        bcast = functools.partial(broadcast_object, root_rank=0,
                                  name="hvd.elastic.torch_state")
        super().__init__(bcast_object=bcast, get_rank=rank, **plain)

    def __setattr__(self, name: str, value: Any) -> None:
        handlers = self.__dict__.get("_handlers", {})
        if name in handlers:
            handlers[name].set_value(value)
        super().__setattr__(name, value)

    def save(self) -> None:
        """Keeps a copy of every attribute (local)."""
        for handler in self._handlers.values():
            handler.save()
        super().save()

    def restore(self) -> None:
        """Goes back to the last save (local); samplers work out what is
        left, and cut it when next iterated."""
        for handler in self._handlers.values():
            handler.restore()
        super().restore()

    def sync(self) -> None:
        """Makes every attribute equal to rank 0's live value (samplers: the
        union of every rank's processed indices), then saves. Collective."""
        for handler in self._handlers.values():
            handler.sync()
        if self._saved_state:
            live = {name: getattr(self, name) for name in self._saved_state}
            self._saved_state = self._bcast_object(live)
            self._set_attrs()
        self.save()

    def commit(self) -> None:
        """Merges the samplers' progress over ranks, saves, then raises
        HostsUpdatedInterrupt on every rank if hosts changed. Collective."""
        for handler in self._handlers.values():
            handler.before_commit()
        super().commit()

    def on_reset(self) -> None:
        """Samplers work out their next share for the new world, then
        reset() and the reset callbacks run."""
        for handler in self._handlers.values():
            handler.on_reset()
        super().on_reset()
