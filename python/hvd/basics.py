"""Process-level calls: init, shutdown and where this worker sits."""

import atexit
import os

from ._core import core
from . import process_sets as _sets


def init(comm=None, process_sets=None):
    """Joins the job hvdrun started (or runs alone, size 1, without it):
    connects to the other workers and starts hvd's background thread.

    `process_sets`: hvd.ProcessSet objects (or rank lists) to create on
    every rank, as sets 1, 2, ...; "dynamic" allows add_process_set and
    remove_process_set later (as HOROVOD_DYNAMIC_PROCESS_SETS=1 does).
    Without it, the sets registered since the last shutdown() (by an
    earlier init or add_process_set) are created again: an elastic reset
    keeps them; shutdown() removes them, as in Horovod.
    `comm` exists for Horovod's signature; hvd has no MPI.
    """
    if comm is not None:
        raise ValueError("hvd runs without MPI; init() takes no comm")
    if isinstance(process_sets, str):
        if process_sets != "dynamic":
            raise ValueError("process_sets must be a list of process sets "
                             f"or 'dynamic', got {process_sets!r}")
        os.environ["HOROVOD_DYNAMIC_PROCESS_SETS"] = "1"
        process_sets = None
    if core.loop_stopped():
        # A peer's shutdown (or an error) ended this runtime: every
        # collective on it would fail. Start afresh, as shutdown() + init()
        # would; the peer that shut down re-inits the same way, so both
        # meet in the next generation instead of one waiting for the other.
        shutdown()
    rank_lists = _sets.register_for_init(process_sets)
    try:
        core.init(rank_lists)
    except ValueError as e:
        raise _sets.describe_failed_init(e) from e
    _sets.numbered_after_init()


def shutdown():
    """Stops hvd on every rank and fails what is still pending. Safe to call
    twice; init() may follow. As in Horovod, every process set but the
    global one is removed: a later init() starts with set 0 alone, and
    add_process_set numbers sets from 1 again."""
    core.shutdown()
    _sets.forget_registered()


def reset():
    """Shutdown and init for an elastic reset: unlike shutdown(), the
    registered process sets are created again for the new world, and the
    next generation may keep or shrink this one's NCCL communicator."""
    core.shutdown(reset=True)
    init()


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
# ends should still say goodbye. Then (atexit runs the last registered
# first) the progress reporter sends its last report and stops.
atexit.register(core.stop_reports)
atexit.register(core.shutdown)


def negotiation_stats(process_set=None):
    """This rank's negotiation counters in a process set (default: every
    rank): cycles, coordinator_rounds (cycles that went to the coordinator),
    cache_hits (collectives answered by the response cache) and
    negotiation_seconds (time spent negotiating, waiting for the other
    members included). An hvd extension, for tests and tuning."""
    from .process_sets import global_process_set, set_id
    return core.negotiation_stats(set_id(process_set or global_process_set))


def start_timeline(file_path, mark_cycles=False):
    """Rank 0 records a Chrome-trace timeline of hvd's activity into
    `file_path` (open it in ui.perfetto.dev or chrome://tracing) until
    stop_timeline(); an existing trace is appended to. Every rank may call
    it; only rank 0 writes."""
    core.start_timeline(str(file_path), bool(mark_cycles))


def stop_timeline():
    """Stops the timeline and writes what is left of it."""
    core.stop_timeline()
