"""A sequence of Horovod-style tests in one process per rank (the way
Horovod's CI runs its torch test file) ends on every rank, with results or
readable errors, within a bound derived from the configured timeouts,
whatever failures came before: joins, ops refused under a join, a join
left pending by a failed test, re-inits, a rank shutting down early.
workers/horovod_sequence_worker.py says what each test does."""

import json
import time

from conftest import ROOT, rank_lines

WORKER = ROOT / "tests" / "integration" / "workers" / \
    "horovod_sequence_worker.py"
PYTHON = "/usr/bin/python3"
TESTS = 10  # in the worker's sequence
START, GLOO, STALL = 5, 5, 2  # the timeouts hvdrun is given (seconds)


def test_sequence_ends_on_every_rank_within_the_timeouts(hvdrun):
    # Each test can at worst wait out one rendezvous (a peer that never
    # re-inits), one Gloo operation and one stall shutdown (ranks left
    # waiting on different names), plus a second of work.
    bound = TESTS * (START + GLOO + STALL + 1)
    began = time.monotonic()
    result = hvdrun(["-np", "2", "--start-timeout", str(START),
                     "--gloo-timeout-seconds", str(GLOO),
                     "--stall-check-warning-time-seconds", "1",
                     "--stall-check-shutdown-time-seconds", str(STALL),
                     PYTHON, str(WORKER)], timeout=bound)
    took = time.monotonic() - began
    output = f"took {took:.1f} s\n{result.stdout}\n{result.stderr}"
    assert result.returncode == 0, output
    steps = {}
    for rank in (0, 1):
        lines = rank_lines(result.stdout, rank)
        assert lines[-1] == "DONE", output
        steps[rank] = [json.loads(l[len("STEP "):]) for l in lines
                       if l.startswith("STEP ")]
        assert len(steps[rank]) == TESTS, output
        for step in steps[rank]:
            assert step["outcome"] == "ok" or step["detail"], output
    # Before anything fails, Horovod's join rules hold on both ranks:
    # allreduce runs with zeros from the joined rank; allgather and
    # broadcast are refused on the rank that called them (a RuntimeError
    # naming the join), and the joins then complete.
    for rank in (0, 1):
        assert [s["outcome"] for s in steps[rank][:4]] == ["ok"] * 4, output
    # The failed test leaves rank 0 in its join until rank 1's shutdown (in
    # its next test) ends it with HorovodInternalError.
    assert steps[1][4]["outcome"] == "AssertionError", output
    assert steps[0][4]["outcome"] == "HorovodInternalError", output
    assert "shut down" in steps[0][4]["detail"], output
