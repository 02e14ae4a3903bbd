"""hvd.elastic.run: the retry loop around a training function."""

import functools
import sys

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
    while True:
        try:
            if reset_required:
                _reset()
                state.on_reset()
            if core.generation_needs_sync():
                state.sync()
                core.mark_synced()  # the recovery's sync phase ends
            return func(state, *args, **kwargs)
        except HorovodInternalError:
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
