"""Sequences of Horovod-style tests in one process per rank (the way
Horovod's CI runs its torch test file). One ends on every rank, with
results or readable errors, within a bound derived from the configured
timeouts, whatever failures came before: joins, ops refused under a join,
a join left pending by a failed test, re-inits, a rank shutting down early
(workers/horovod_sequence_worker.py). In the other every test passes:
joins in both orders, refused collectives, process sets and a dozen more
collectives, all unnamed, so that one test's join or refusal cannot
cascade into the next (workers/join_sequence_worker.py)."""

import json
import os
import time

from conftest import ROOT, rank_lines

WORKERS = ROOT / "tests" / "integration" / "workers"
WORKER = WORKERS / "horovod_sequence_worker.py"
PYTHON = "/usr/bin/python3"
TESTS = 12  # in the worker's sequence
START, GLOO = 5, 3  # the timeouts hvdrun is given (seconds)


def steps_of(result, output):
    """Each rank's STEP records, after checking both ranks got to DONE."""
    steps = {}
    for rank in (0, 1):
        lines = rank_lines(result.stdout, rank)
        assert lines and lines[-1] == "DONE", output
        steps[rank] = [json.loads(l[len("STEP "):]) for l in lines
                       if l.startswith("STEP ")]
    return steps


def test_every_test_passes_after_joins_and_refusals_in_both_orders(hvdrun):
    # Unnamed collectives after a join or a refused collective match on
    # every rank (had they not, the deadlock error would fail the step
    # after the Gloo timeout).
    # Horovod's CI runs its process-set tests with dynamic sets on.
    result = hvdrun(["-np", "2", "--start-timeout", str(START),
                     "--gloo-timeout-seconds", str(GLOO),
                     PYTHON, str(WORKERS / "join_sequence_worker.py")],
                    timeout=120, env=dict(os.environ,
                                          HOROVOD_DYNAMIC_PROCESS_SETS="1"))
    output = f"{result.stdout}\n{result.stderr}"
    assert result.returncode == 0, output
    steps = steps_of(result, output)
    assert [s["test"] for s in steps[0]] == [s["test"] for s in steps[1]]
    assert len(steps[0]) == 10, output
    for rank in (0, 1):
        failed = [s for s in steps[rank] if s["outcome"] != "ok"]
        assert not failed, f"rank {rank}: {failed}\n{output}"


def test_sequence_ends_on_every_rank_within_the_timeouts(hvdrun):
    # Each test can at worst wait out one rendezvous (a peer that never
    # re-inits), one Gloo operation and the deadlock bound, the Gloo timeout
    # again (ranks left waiting on different names), plus a second of work.
    # No stall shutdown: as in Horovod, the stall inspector only warns.
    bound = TESTS * (START + GLOO + GLOO + 1)
    began = time.monotonic()
    result = hvdrun(["-np", "2", "--start-timeout", str(START),
                     "--gloo-timeout-seconds", str(GLOO),
                     PYTHON, str(WORKER)], timeout=bound)
    took = time.monotonic() - began
    output = f"took {took:.1f} s\n{result.stdout}\n{result.stderr}"
    assert result.returncode == 0, output
    steps = steps_of(result, output)
    for rank in (0, 1):
        assert len(steps[rank]) == TESTS, output
        for step in steps[rank]:
            assert step["outcome"] == "ok" or step["detail"], output
    # Before anything fails, Horovod's join rules hold on both ranks:
    # allreduce runs with zeros from the joined rank; allgather and
    # broadcast are refused on the rank that called them (a RuntimeError
    # naming the join), and the joins then complete.
    for rank in (0, 1):
        assert [s["outcome"] for s in steps[rank][:4]] == ["ok"] * 4, output
    # Rank 1's failure skips its allreduce: it waits in the next test's
    # while rank 0 waits in this one. Both get the deadlock error (the same
    # message, naming what each waits for) after the Gloo timeout and not
    # much later.
    assert steps[1][4]["outcome"] == "AssertionError", output
    deadlocked = [steps[0][4], steps[1][5]]
    for step in deadlocked:
        assert step["outcome"] == "MismatchError", output
        assert step["detail"] == deadlocked[0]["detail"], output
        assert GLOO - 0.1 <= step["seconds"] <= GLOO + 8, output
    for wait in ("rank 0 waits in allreduce 'allreduce.seq.skipped'",
                 "rank 1 waits in allreduce 'allreduce.seq.last'",
                 "diverged"):
        assert wait in deadlocked[0]["detail"], output
    # Later the ranks stay apart (a join left by a failed test, re-inits,
    # an early shutdown), in an order that depends on timing; whatever
    # they meet, every deadlock error names both ranks' waits.
    for rank in (0, 1):
        for step in steps[rank]:
            if step["detail"].startswith("deadlock:"):
                assert "rank 0 waits" in step["detail"], output
                assert "rank 1 waits" in step["detail"], output
        # Each deadlock is logged once per rank that waited in it, not once
        # per name it failed.
        logged = [l for l in rank_lines(result.stderr, rank, "stderr")
                  if "[warning] deadlock:" in l]
        failed = [s for s in steps[rank] if s["detail"].startswith("deadlock:")]
        assert 1 <= len(logged) <= len(failed), output
