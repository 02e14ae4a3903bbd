"""A sequence of Horovod-style tests in one process per rank, the way
Horovod's CI runs its torch test file: every test calls hvd.init() first
and catches only the exceptions Horovod's test expects; an unexpected
outcome fails that test (recorded) and the sequence goes on, as unittest
does. Among them: joins, an allgather and a broadcast under a join, a
shutdown and re-init, one rank shutting down early without joining while
the others join, then more collectives and a barrier; a test whose
failure skips its allreduce, which leaves the ranks waiting on different
names (a deadlock hvd ends after the Gloo timeout); and a test whose
failure skips its join, which leaves the ranks one test apart.

Prints sequence_runner's lines. What matters to the caller is that the
whole sequence ends, on every rank, within the configured timeouts.
"""

import torch

import hvd.torch as hvd
from sequence_runner import run_in_sequence


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def test_allreduce():
    hvd.init()
    x = torch.arange(6, dtype=torch.float32)
    got = hvd.allreduce(x, op=hvd.Sum, name="seq.allreduce")
    check(torch.equal(got, x * hvd.size()), f"allreduce gave {got}")


def test_join_allreduce():
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    x = torch.full((5,), 3.0)
    if rank == 0:
        last = hvd.join()
    else:
        got = hvd.allreduce(x, name="seq.join.allreduce")  # average
        # The joined rank adds zeros; Average still divides by the size.
        check(torch.allclose(got, x * (size - 1) / size),
              f"allreduce under join gave {got}")
        last = hvd.join()
    check(0 <= last < size, f"join returned {last}")


def expect_refused_under_join(call):
    """Horovod's shape: rank 0 joins; the others' op must raise a
    RuntimeError, then they join."""
    hvd.init()
    if hvd.rank() == 0:
        hvd.join()
        return
    try:
        call()
        raise AssertionError("did not raise under join")
    except RuntimeError as e:
        check("joined" in str(e), f"error does not mention the join: {e}")
    hvd.join()


def test_join_allgather():
    expect_refused_under_join(
        lambda: hvd.allgather(torch.ones(3, 2), name="seq.join.allgather"))


def test_join_broadcast():
    expect_refused_under_join(
        lambda: hvd.broadcast(torch.ones(3), 1, name="seq.join.broadcast"))


def test_join_left_by_a_failure():
    """Rank 0 joins; the others fail before their join (as a test whose
    assert fails does), so rank 0's join completes only when some rank's
    shutdown ends it, in a later test."""
    hvd.init()
    if hvd.rank() == 0:
        hvd.join()
        return
    raise AssertionError("a failed check before hvd.join()")


def test_reinit():
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    hvd.shutdown()
    check(not hvd.is_initialized(), "initialized after shutdown")
    hvd.init()
    check((hvd.rank(), hvd.size()) == (rank, size), "rank changed")


def test_early_shutdown():
    """The last rank ends hvd without joining (as a failing test might);
    the others' join must fail, not wait for it forever."""
    hvd.init()
    if hvd.rank() == hvd.size() - 1:
        hvd.shutdown()
        return
    for what, call in (("join", hvd.join),
                       ("allreduce", lambda: hvd.allreduce(torch.ones(1))),
                       ("barrier", hvd.barrier)):
        try:
            call()
            raise AssertionError(f"{what} returned although a peer shut down")
        except hvd.HorovodInternalError:
            pass


def test_allreduce_after():
    hvd.init()
    got = hvd.allreduce(torch.ones(2), op=hvd.Sum, name="seq.after")
    check(torch.equal(got, torch.full((2,), float(hvd.size()))),
          f"allreduce gave {got}")


def test_barrier_after():
    hvd.init()
    hvd.barrier()


def test_allreduce_skipped_by_a_failure():
    """The last rank fails before its allreduce, so it is one test ahead:
    it waits in the next test's allreduce while the others wait in this
    one. No rank can go on: each gets the deadlock error (MismatchError)
    after the Gloo timeout."""
    hvd.init()
    if hvd.rank() == hvd.size() - 1:
        raise AssertionError("a failed check before the allreduce")
    hvd.allreduce(torch.ones(2), name="seq.skipped")


def test_allreduce_last():
    hvd.init()
    hvd.allreduce(torch.ones(2), name="seq.last")


TESTS = [test_allreduce, test_join_allreduce, test_join_allgather,
         test_join_broadcast, test_allreduce_skipped_by_a_failure,
         test_allreduce_last, test_join_left_by_a_failure, test_reinit,
         test_allreduce, test_early_shutdown, test_allreduce_after,
         test_barrier_after]


if __name__ == "__main__":
    run_in_sequence(TESTS)
