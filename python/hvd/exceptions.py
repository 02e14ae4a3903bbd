"""The exceptions hvd raises, by kind of failure (docs/errors.md)."""


class HorovodInternalError(RuntimeError):
    """A collective failed because a peer or the network did: a worker died,
    a connection broke, an operation timed out, or hvd was shut down while it
    was pending. An elastic job recovers from it by restoring its last commit
    and re-initializing."""


class HostsUpdatedInterrupt(RuntimeError):
    """The set of hosts changed; raised at a commit so that every rank joins
    the new world at the same step (elastic mode)."""

    def __init__(self, skip_sync=False):
        super().__init__("hosts updated")
        self.skip_sync = skip_sync


class MismatchError(ValueError, RuntimeError):
    """Ranks disagree on a collective (name, operation, dtype, shape, root or
    reduce op). A bug in the training script: retrying will not help, so no
    elastic loop catches it. Also a RuntimeError, which is what Horovod
    raises in this case, so Horovod code that catches that still does."""


class InvalidArgumentError(ValueError, RuntimeError):
    """A collective refused at the call, on the rank that made it, before
    anything was sent: an op the collective or the dtype does not take
    (Adasum of integers, reducescatter with Min), bad splits, a root
    outside the set, an unregistered process set, a name already in
    flight, hvd not initialized. A ValueError, hvd's kind for a bad call,
    and a RuntimeError, which is what Horovod raises for the refusals its
    core makes, so that code written for either catches it."""


class InvalidArgumentTypeError(TypeError, RuntimeError):
    """A collective refused at the call because an argument is of a type it
    cannot take: not a tensor, a tensor on another device, a sparse tensor
    or a dtype hvd cannot move for this op. A TypeError, and a RuntimeError
    as every refusal of a collective is (see InvalidArgumentError)."""


class ForkedProcessError(RuntimeError):
    """hvd was used in a process forked (os.fork, multiprocessing's fork
    start method) from the one that called hvd.init(): the fork has a copy of
    hvd's state but none of its threads, so a collective there would never
    complete. Use collectives in the parent only, or call hvd.shutdown() and
    then hvd.init() in the fork for a job of its own. Not a
    HorovodInternalError: no elastic loop retries it."""


class RemovedFromJobError(RuntimeError):
    """This worker's slot is not part of the job's new generation (its host
    was removed or the job shrank). hvd.elastic.run exits with code 0 on it;
    the driver counts that exit as neither success nor failure."""
