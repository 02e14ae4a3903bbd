"""The driver's host updates, handed to the states that hvd.elastic.run
registers, as Horovod's WorkerNotificationManager hands them to its
listeners: ``state.on_hosts_updated(timestamp, update_res)``.

The worker's notification server (C++, docs/design.md, "Notifications")
receives the driver's HostsUpdated pushes; what reaches Python through the
extension is the newest generation announced that this process has not
joined yet (``core.pending_hosts_update()``). Each such generation is one
update, handed once to every registered state when a state checks for host
updates (``State.check_host_updates``, at every commit), before the check
itself: so a state that overrides ``on_hosts_updated`` sees the update
before the commit raises HostsUpdatedInterrupt. Horovod calls its listeners
on the notification service's thread instead, as the push arrives.

The arguments: ``timestamp`` is that generation (hvd orders updates by
generation, never by clocks); ``update_res`` says what the driver's pushes
for it changed (``core.pending_hosts_changes()``: hosts added, removed or
both), as Horovod's does.
"""

import enum
import threading


class HostUpdateResult(enum.IntFlag):
    """What a host update did, as passed to ``State.on_hosts_updated``;
    the values are horovod.runner.elastic.worker.HostUpdateResult's."""
    no_update = 0
    removed = 1
    added = 2
    mixed = removed | added


class HostUpdateNotifier:
    """The registered states and the newest generation handed to them.
    Thread-safe; the states are called on the thread that delivers."""

    def __init__(self):
        self._lock = threading.Lock()
        self._listeners = []  # in registration order, each once
        self._delivered = 0  # the newest generation handed out

    def register_listener(self, state):
        with self._lock:
            if state not in self._listeners:
                self._listeners.append(state)

    def remove_listener(self, state):
        with self._lock:
            if state in self._listeners:
                self._listeners.remove(state)

    def deliver(self, generation, update_res):
        """Hands the update that announced ``generation`` (what it changed:
        ``update_res``) to every registered state, unless an update of that
        generation or a newer one was handed out already (0: no update)."""
        with self._lock:
            if generation <= self._delivered:
                return
            self._delivered = generation
            listeners = list(self._listeners)
        for state in listeners:
            state.on_hosts_updated(generation, update_res)


# The process's one notifier: the driver's updates reach the process, not
# a state.
notifier = HostUpdateNotifier()
