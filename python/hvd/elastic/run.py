"""hvd.elastic.run: the retry loop around a training function."""

import functools
import sys
import time

from .. import basics
from .._core import core
from ..exceptions import (HorovodInternalError, HostsUpdatedInterrupt,
                          RemovedFromJobError)
from .notifications import notifier


def run(func):
    """Decorates `func(state, *args, **kwargs)` so that it survives workers
    failing and hosts coming and going.

    Before each attempt the state is synced from rank 0 when the generation
    needs it (the driver says so when any slot is new). A HorovodInternalError
    restores the last commit; a HostsUpdatedInterrupt keeps the live state.
    Either way hvd re-initializes into the next generation, calls
    `state.on_reset()` (which calls `state.reset()`, then the reset
    callbacks), syncs if needed and calls `func` again, as Horovod does. A
    worker whose slot is no longer part of the job leaves with exit code 0.
    A worker that cannot rejoin (every re-initialization failing, e.g. its
    rendezvous store out of reach) for longer than the elastic timeout
    (hvdrun --elastic-timeout) gives up with a HorovodInternalError that
    says so and carries the last failure.
    While it runs, `state` hears of the driver's host updates through
    `state.on_hosts_updated` (notifications.py), as Horovod's listeners do.
    """

    @functools.wraps(func)
    def wrapper(state, *args, **kwargs):
        notifier.register_listener(state)
        try:
            return _run(func, state, args, kwargs)
        finally:
            notifier.remove_listener(state)

    return wrapper


def _run(func, state, args, kwargs):
    reset_required = False
    rejoining_since = None  # the first of the failed rejoins in a row
    while True:
        rejoining = reset_required
        attempt = time.monotonic()
        try:
            if reset_required:
                _reset()
                rejoining, rejoining_since = False, None
                state.on_reset()
            if core.generation_needs_sync():
                state.sync()
                core.mark_synced()  # the recovery's sync phase ends
            return func(state, *args, **kwargs)
        except HorovodInternalError as e:
            if rejoining:
                rejoining_since = rejoining_since or attempt
                limit = core.elastic_timeout_seconds()
                if time.monotonic() - rejoining_since >= limit:
                    raise HorovodInternalError(
                        f"could not rejoin the job within the elastic "
                        f"timeout ({limit:g} s); the last attempt: {e}"
                    ) from e
            state.restore()
        except HostsUpdatedInterrupt:
            pass
        except RemovedFromJobError as e:
            print(f"hvd: {e}; this worker leaves the job", file=sys.stderr,
                  flush=True)
            sys.exit(0)
        reset_required = True


def _reset():
    basics.reset()
