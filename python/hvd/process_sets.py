"""Process sets: collectives among a subset of the ranks.

``hvd.init(process_sets=[hvd.ProcessSet([0, 1]), ...])`` registers sets for
the whole job; with ``HOROVOD_DYNAMIC_PROCESS_SETS=1`` (or
``hvd.init(process_sets="dynamic")``) ``add_process_set`` and
``remove_process_set`` change them later, called by every rank in the same
order. Every collective takes ``process_set=``; ``global_process_set`` (id
0) is every rank.

The sets registered here outlive an elastic reset: the reset's
``hvd.init()`` re-creates them for the new world in registration order
(their ids are renumbered 1, 2, ...). A set that names a rank the new world
does not have makes that ``hvd.init()`` raise ``ValueError`` naming it.
``hvd.shutdown()`` removes them all, as Horovod's does: the next
``hvd.init()`` starts with the global set alone.
"""

from ._core import core
from .exceptions import InvalidArgumentError, InvalidArgumentTypeError


class ProcessSet:
    """A set of global ranks. ``process_set_id`` is None until registered.

    ``ranks_or_comm`` is Horovod's name: there it may also be an MPI
    communicator, which hvd (no MPI) refuses with ``ValueError``."""

    def __init__(self, ranks_or_comm):
        try:
            ranks = list(ranks_or_comm)
        except TypeError:
            raise ValueError(
                f"ProcessSet needs a list of ranks, got "
                f"{type(ranks_or_comm).__name__}: hvd has no MPI, so an MPI "
                f"communicator cannot define a set; pass its ranks "
                f"(comm.allgather(hvd.rank()) in mpi4py)") from None
        self.ranks = sorted(int(r) for r in ranks)
        self.process_set_id = None

    def size(self):
        return len(self.ranks)

    def included(self):
        """Whether this process is in the set."""
        return core.rank() in self.ranks

    def rank(self):
        """This process's rank within the set, or None if not included."""
        me = core.rank()
        return self.ranks.index(me) if me in self.ranks else None

    def __repr__(self):
        return f"ProcessSet(process_set_id={self.process_set_id}, " \
               f"ranks={self.ranks})"


class _GlobalProcessSet(ProcessSet):
    def __init__(self):
        super().__init__([])
        self.process_set_id = 0

    @property
    def ranks(self):
        return list(range(core.size())) if core.is_initialized() else []

    @ranks.setter
    def ranks(self, value):
        pass


global_process_set = _GlobalProcessSet()

# The user's sets in registration order, re-created by every init().
_registered = []


def set_id(process_set):
    """The id to hand the core for `process_set` (a ProcessSet or an id)."""
    if isinstance(process_set, int):
        return process_set
    if not isinstance(process_set, ProcessSet):
        raise InvalidArgumentTypeError(
            "process_set must be an hvd.ProcessSet, got "
            f"{type(process_set).__name__}")
    if process_set.process_set_id is None:
        raise InvalidArgumentError(
            f"{process_set!r} is not registered: pass it to "
            "hvd.init(process_sets=[...]) or hvd.add_process_set()")
    return process_set.process_set_id


def register_for_init(process_sets):
    """The rank lists init() hands the core; `process_sets` (when not None)
    replaces the registered ones."""
    global _registered
    if process_sets is not None:
        _registered = [p if isinstance(p, ProcessSet) else ProcessSet(p)
                       for p in process_sets]
    for p in _registered:
        p.process_set_id = None
    return [p.ranks for p in _registered]


def forget_registered():
    """At hvd.shutdown(): every set but the global one is gone (Horovod
    removes them there); their objects are unregistered, so they can be
    added again after the next init()."""
    global _registered
    for p in _registered:
        p.process_set_id = None
    _registered = []


def numbered_after_init():
    """After a successful init: the registered sets are 1, 2, ..."""
    for i, p in enumerate(_registered):
        p.process_set_id = i + 1


def describe_failed_init(error):
    """A clearer error when a registered set does not fit the new world."""
    if not _registered or "process set" not in str(error):
        return error
    return ValueError(
        f"{error}. The registered process sets are "
        f"{[p.ranks for p in _registered]}; hvd.init() re-creates them for "
        "every new world (an elastic reset may have shrunk it). Register "
        "only sets that fit every world size the job can have, or remove "
        "the set with hvd.remove_process_set() while it still exists")


def add_process_set(process_set):
    """Registers a new set on every rank (all must call this, in the same
    order) and returns it with its id."""
    if not isinstance(process_set, ProcessSet):
        process_set = ProcessSet(process_set)
    if process_set.process_set_id is not None:
        raise ValueError(f"{process_set!r} is registered already")
    sizes = core.wait(core.add_process_set_async(process_set.ranks))
    process_set.process_set_id = int(sizes[0])
    _registered.append(process_set)
    return process_set


def remove_process_set(process_set):
    """Removes a registered set on every rank (all must call this). Returns
    True if it was registered."""
    if process_set.process_set_id is None or process_set is global_process_set:
        return False
    core.wait(core.remove_process_set_async(process_set.process_set_id))
    process_set.process_set_id = None
    if process_set in _registered:
        _registered.remove(process_set)
    return True


def get_process_set_ids_and_ranks():
    """{id: ranks} of every process set of this generation."""
    return core.process_sets()
