"""Process-level calls: init, shutdown and where this worker sits."""

import atexit

from ._core import core


def init():
    """Joins the job hvdrun started (or runs alone, size 1, without it):
    connects to the other workers and starts hvd's background thread."""
    core.init()


def shutdown():
    """Stops hvd on every rank and fails what is still pending. Safe to call
    twice; init() may follow (that is how an elastic reset rejoins)."""
    core.shutdown()


def is_initialized():
    return core.is_initialized()


def rank():
    return core.rank()


def size():
    return core.size()


def local_rank():
    return core.local_rank()


def local_size():
    return core.local_size()


def cross_rank():
    return core.cross_rank()


def cross_size():
    return core.cross_size()


# Peers wait for a rank's shutdown in their negotiation; a script that just
# ends should still say goodbye.
atexit.register(core.shutdown)
