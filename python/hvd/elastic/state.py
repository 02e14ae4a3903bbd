"""The state an elastic job commits, restores and syncs across resets."""

import copy
import functools
import queue

import numpy as np

from .. import basics
from ..exceptions import HostsUpdatedInterrupt
from ..objects import broadcast_object
from ..ops import Max, allreduce
from .._core import core
from .notifications import HostUpdateResult, notifier


def _named_broadcast(name):
    """hvd's broadcast_object from rank 0, called as Horovod calls its
    ``bcast_object`` (one argument), under a collective name that says
    which state it belongs to."""
    return functools.partial(broadcast_object, root_rank=0, name=name)


class State:
    """Base of every elastic state: commit/restore/sync plus host updates.

    Args (both optional, as Horovod's positional ``bcast_object, get_rank``):
        bcast_object: called as ``bcast_object(obj)``, returns rank 0's
            ``obj`` on every rank. Default: hvd's ``broadcast_object``.
        get_rank: returns this worker's rank. Default: ``hvd.rank``.

    Subclasses implement save(), restore() and sync(), and may override
    reset(). commit() saves and then checks for host updates, so that every
    rank raises HostsUpdatedInterrupt at the same commit.
    """

    def __init__(self, bcast_object=None, get_rank=None):
        self._bcast_object = (bcast_object if bcast_object is not None else
                              _named_broadcast("hvd.elastic.state"))
        self._rank = get_rank if get_rank is not None else basics.rank
        self._host_messages = queue.Queue()
        self._last_updated_timestamp = 0
        self._reset_callbacks = []

    def register_reset_callbacks(self, callbacks):
        """Functions called (without arguments) after every reset, once the
        new world is up: rescale the learning rate, rebuild samplers..."""
        self._reset_callbacks.extend(callbacks)

    def on_reset(self):
        """Called by hvd.elastic.run once hvd is re-initialized into the new
        world, before the sync: drops queued host messages (the reset has
        handled them), calls reset(), then the reset callbacks."""
        self._host_messages = queue.Queue()
        self.reset()
        for callback in self._reset_callbacks:
            callback()

    def on_hosts_updated(self, timestamp, update_res):
        """Horovod's notification hook: hosts were added or removed at
        ``timestamp`` (``update_res``: a HostUpdateResult). Thread-safe.
        The next commit() / check_host_updates() then raises
        HostsUpdatedInterrupt on every rank, if ``timestamp`` is newer than
        the last update this state acted on.

        Called for each of the driver's updates while hvd.elastic.run
        runs with this state (see notifications.py: ``timestamp`` is the
        generation the update leads to), and by code that announces
        updates itself. A subclass that overrides it without calling this
        one is still interrupted by the driver's updates: the check reads
        the runtime's pending generation too."""
        self._host_messages.put((timestamp, HostUpdateResult(update_res)))

    def commit(self):
        """Saves the state (a failure rolls back to here), then raises
        HostsUpdatedInterrupt on every rank if any rank heard of a change."""
        self.save()
        core.count_commit()  # for the driver's progress reports
        self.check_host_updates()

    def check_host_updates(self):
        """Collective, one allreduce: if any rank has heard of a generation
        it has not joined, or was given a host message newer than the last
        one acted on (on_hosts_updated), every rank raises
        HostsUpdatedInterrupt here, together.

        ``skip_sync`` on the exception is True only when the update was
        announced through on_hosts_updated and removed hosts only (as in
        Horovod); hvd.elastic.run does not read it: whether the next
        generation syncs is the driver's decision (a slot is new).

        The registered states are told of the driver's update first
        (notifications.py), on a rank that has not heard of it yet once
        the allreduce shows that another rank has, so that every rank's
        states see it before the interrupt."""
        announced = core.pending_hosts_update()
        changes = HostUpdateResult(core.pending_hosts_changes())
        notifier.deliver(announced, changes)
        newest, update = self._drain_host_messages()
        fresh = newest > self._last_updated_timestamp
        local = np.array([
            announced,
            1.0 if fresh else 0.0,
            newest,
            1.0 if fresh and update & HostUpdateResult.removed else 0.0,
            1.0 if fresh and update & HostUpdateResult.added else 0.0,
            1.0 if changes & HostUpdateResult.removed else 0.0,
            1.0 if changes & HostUpdateResult.added else 0.0,
        ], np.float64)
        (pending, any_fresh, newest_anywhere, removed, added,
         announced_removed, announced_added) = allreduce(
            local, op=Max, name="hvd.elastic.host_updates")
        notifier.deliver(int(pending), HostUpdateResult(
            (HostUpdateResult.removed if announced_removed else 0) |
            (HostUpdateResult.added if announced_added else 0)))
        # The generation counts as acted on, so that the message the line
        # above queued here after the drain interrupts no later check.
        self._last_updated_timestamp = max(self._last_updated_timestamp,
                                           newest_anywhere, pending)
        if pending > 0 or any_fresh > 0:
            removed_only = pending == 0 and removed > 0 and added == 0
            raise HostsUpdatedInterrupt(skip_sync=bool(removed_only))

    def _drain_host_messages(self):
        """The newest queued timestamp (0 if none) and the union of the
        updates of the messages newer than the last one acted on."""
        newest = 0
        update = HostUpdateResult.no_update
        while True:
            try:
                timestamp, result = self._host_messages.get_nowait()
            except queue.Empty:
                return newest, update
            if timestamp > self._last_updated_timestamp:
                newest = max(newest, timestamp)
                update |= result

    def save(self):
        """Keeps a copy of the state in host memory (local)."""
        raise NotImplementedError

    def restore(self):
        """Goes back to the last save (local)."""
        raise NotImplementedError

    def sync(self):
        """Makes every rank's state rank 0's (collective)."""
        raise NotImplementedError

    def reset(self):
        """Called after every reset of the job, in the new world, before the
        reset callbacks and the sync. Nothing by default; subclasses
        re-create what depends on the world (its size, this rank)."""


class ObjectState(State):
    """Picklable attributes, broadcast from rank 0 by sync():

        state = hvd.elastic.ObjectState(epoch=0, batch=0)
        state = hvd.elastic.ObjectState(hvd.broadcast_object, hvd.rank,
                                        epoch=0, batch=0)   # as Horovod
        state.epoch += 1; state.commit()

    save() keeps deep copies (Horovod keeps references, so that an object
    changed in place after a commit would be restored changed).
    """

    def __init__(self, bcast_object=None, get_rank=None, **kwargs):
        if bcast_object is None:
            bcast_object = _named_broadcast("hvd.elastic.object_state")
        self._saved_state = kwargs
        self._set_attrs()
        super().__init__(bcast_object=bcast_object, get_rank=get_rank)

    def save(self):
        new_state = {}
        for attr in self._saved_state:
            new_state[attr] = copy.deepcopy(getattr(self, attr))
        self._saved_state = new_state

    def restore(self):
        self._set_attrs()

    def sync(self):
        if self._saved_state:
            self._saved_state = self._bcast_object(self._saved_state)
            self._set_attrs()

    def _set_attrs(self):
        for attr, value in self._saved_state.items():
            setattr(self, attr, copy.deepcopy(value))
