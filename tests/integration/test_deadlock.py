"""Ranks that wait, each on a collective no other rank will submit, end
with a MismatchError on every rank after the Gloo timeout, naming what each
rank waits for; the runtime works afterwards; a rank that is merely slow
outside hvd is no deadlock. workers/deadlock_worker.py runs the checks."""

import json

import numpy as np

from conftest import ROOT, rank_lines

WORKER = ROOT / "tests" / "integration" / "workers" / "deadlock_worker.py"
PYTHON = "/usr/bin/python3"
GLOO = 2  # --gloo-timeout-seconds: the deadlock bound
SLOW = 3  # rank 1's time outside hvd in the last check, > GLOO
# A deadlock ends once every rank has waited GLOO; the rest is cycles and
# this machine's load.
SLACK = 8


def checks_by_rank(hvdrun):
    result = hvdrun(["-np", "2", "--gloo-timeout-seconds", str(GLOO),
                     PYTHON, str(WORKER), str(SLOW)], timeout=120)
    output = f"{result.stdout}\n{result.stderr}"
    assert result.returncode == 0, output
    checks = {}
    for rank in (0, 1):
        lines = rank_lines(result.stdout, rank)
        assert lines and lines[-1] == "DONE", output
        checks[rank] = {c["check"]: c for c in
                        (json.loads(l[len("CHECK "):]) for l in lines
                         if l.startswith("CHECK "))}
    return checks, output


def test_a_deadlock_fails_on_every_rank_within_the_gloo_timeout(hvdrun):
    checks, output = checks_by_rank(hvdrun)
    x = {rank: np.arange(4, dtype=np.float32) + 10 * rank for rank in (0, 1)}
    total = (x[0] + x[1]).tolist()
    # hvd.torch names a tensor '<op>.<name>', as Horovod does.
    waits = {
        "names": ("rank 0 waits in allreduce 'allreduce.dl.a'",
                  "rank 1 waits in allreduce 'allreduce.dl.b'"),
        "hits": ("rank 0 waits in allreduce 'allreduce.dl.c'",
                 "rank 1 waits in allreduce 'allreduce.dl.d'"),
        "barrier": ("rank 0 waits in barrier",
                    "rank 1 waits in allreduce 'allreduce.dl.e'"),
    }
    for rank in (0, 1):
        for check, named in waits.items():
            c = checks[rank][check]
            where = f"rank {rank}, check {check}: {c}\n{output}"
            assert c["outcome"] == "MismatchError", where
            assert c["runtime_error"], where
            assert "deadlock" in c["detail"], where
            for wait in named:
                assert wait in c["detail"], where
            assert "diverged" in c["detail"], where
            # Not before every rank waited the Gloo timeout; soon after.
            assert GLOO - 0.1 <= c["seconds"] <= GLOO + SLACK, where
        # The runtime goes on: agreeing ranks reduce (also from the cache).
        for check in ("agree", "slow"):
            c = checks[rank][check]
            assert c["outcome"] == "ok", f"rank {rank}: {c}\n{output}"
            assert c["result"] == total, f"rank {rank}: {c}\n{output}"
        assert checks[rank]["prime"]["result"] == [total, total], output
    # Rank 0 waited through rank 1's sleep, longer than the Gloo timeout,
    # without a deadlock error.
    assert checks[0]["slow"]["seconds"] >= SLOW - 0.5, output
