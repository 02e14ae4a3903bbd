"""The state an elastic job commits, restores and syncs across resets."""

import copy

import numpy as np

from ..exceptions import HostsUpdatedInterrupt
from ..objects import broadcast_object
from ..ops import Max, allreduce
from .._core import core


class State:
    """Base of every elastic state: commit/restore/sync plus host updates.

    Subclasses implement save(), restore() and sync(). commit() saves and
    then checks for host updates, so that every rank raises
    HostsUpdatedInterrupt at the same commit.
    """

    def __init__(self):
        self._reset_callbacks = []

    def register_reset_callbacks(self, callbacks):
        """Functions called (without arguments) after every reset, once the
        new world is up: rescale the learning rate, rebuild samplers..."""
        self._reset_callbacks.extend(callbacks)

    def on_reset(self):
        for callback in self._reset_callbacks:
            callback()

    def commit(self):
        """Saves the state (a failure rolls back to here), then raises
        HostsUpdatedInterrupt on every rank if any rank heard of a change."""
        self.save()
        self.check_host_updates()

    def check_host_updates(self):
        """One collective: if any rank has heard of a generation it has not
        joined, every rank raises HostsUpdatedInterrupt here, together."""
        pending = core.pending_hosts_update()
        newest = allreduce(np.array([pending], np.int64), op=Max,
                           name="hvd.elastic.host_updates")
        if newest[0] > 0:
            raise HostsUpdatedInterrupt(skip_sync=False)

    def save(self):
        raise NotImplementedError

    def restore(self):
        raise NotImplementedError

    def sync(self):
        raise NotImplementedError


class ObjectState(State):
    """Picklable attributes, broadcast from rank 0 by sync():

        state = hvd.elastic.ObjectState(epoch=0, batch=0)
        state.epoch += 1; state.commit()
    """

    def __init__(self, bcast_object=broadcast_object, **kwargs):
        self._bcast_object = bcast_object
        self._saved_state = kwargs
        self._set_attrs()
        super().__init__()

    def save(self):
        new_state = {}
        for attr in self._saved_state:
            new_state[attr] = copy.deepcopy(getattr(self, attr))
        self._saved_state = new_state

    def restore(self):
        self._set_attrs()

    def sync(self):
        if self._saved_state:
            self._saved_state = self._bcast_object(
                self._saved_state, root_rank=0, name="hvd.elastic.object_state")
            self._set_attrs()

    def _set_attrs(self):
        for attr, value in self._saved_state.items():
            setattr(self, attr, copy.deepcopy(value))


