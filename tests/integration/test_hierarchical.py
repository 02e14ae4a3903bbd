"""Hierarchical collectives through hvdrun: the shared-memory stage inside
a host (runtime/src/ops/shm/) checked against numpy at 2 and 4 ranks on one
host and 2 "hosts" x 2 ranks, the flat path when switched off, and what a
kill -9 leaves behind: survivors recover with right results, and no
segment stays in /dev/shm."""

import os
import re
import signal

import pytest

from conftest import (ROOT, rank_lines, shm_segments, wait_until,
                      wait_until_no_new_segments)
from test_elastic import Scenario, _alive, check_consistent_finish

WORKERS = ROOT / "tests" / "integration" / "workers"
PYTHON = "/usr/bin/python3"
SHARED = "hierarchical collectives through"


def debug_env(**extra):
    return dict(os.environ, HOROVOD_LOG_LEVEL="debug", **extra)


def passed_everywhere(result, size):
    for rank in range(size):
        lines = rank_lines(result.stdout, rank)
        assert len(lines) == 1 and re.fullmatch(
            rf"rank {rank}/{size}: \d+ checks passed", lines[0]), result.stdout


@pytest.mark.parametrize("hosts", ["localhost:2", "localhost:4",
                                   "localhost:2,127.0.0.1:2"])
def test_every_op_through_shared_memory_in_small_chunks(hvdrun, hosts):
    """4 KiB chunks: most tensors take several, slices are uneven."""
    before = shm_segments()
    size = sum(int(h.split(":")[1]) for h in hosts.split(","))
    result = hvdrun(["-H", hosts, PYTHON,
                     str(WORKERS / "collectives_worker.py")], timeout=180,
                    env=debug_env(HVD_SHM_CHUNK_BYTES="4096"))
    assert result.returncode == 0, result.stdout + result.stderr
    passed_everywhere(result, size)
    # Every rank took the shared-memory path, not the flat one.
    assert result.stderr.count(SHARED) == size, result.stderr
    wait_until_no_new_segments(before)


@pytest.mark.parametrize("switch", ["env", "flags"])
def test_flat_when_switched_off(hvdrun, switch):
    env = debug_env()
    flags = []
    if switch == "env":
        env.update(HOROVOD_HIERARCHICAL_ALLREDUCE="0",
                   HOROVOD_HIERARCHICAL_ALLGATHER="0")
    else:
        flags = ["--no-hierarchical-allreduce", "--no-hierarchical-allgather"]
    result = hvdrun(["-np", "2", *flags, PYTHON,
                     str(WORKERS / "collectives_worker.py")], timeout=180,
                    env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    passed_everywhere(result, 2)
    assert SHARED not in result.stderr
    assert "connected the global Gloo context" in result.stderr


def test_kill_of_a_local_rank_mid_allreduce(hvdrun, tmp_path):
    """127.0.0.1:1 dies while its 16 MiB allreduce is in flight; its local
    peer waits on the segment, the others across hosts. All must give up
    at the driver's word, not the Gloo timeout, and the next generation
    (localhost's two ranks, through a new segment) must compute right."""
    before = shm_segments()
    s = Scenario(tmp_path, "", epochs=2, batches=3, payload=4 << 20,
                 exits=[{"slot": "127.0.0.1:1", "epoch": 1, "batch": 1,
                         "how": "kill", "during": "payload"}])
    result = hvdrun(["-np", "4", "--min-np", "2", "-H",
                     "localhost:2,127.0.0.1:2", *s.command()], timeout=120,
                    env=debug_env())
    assert result.returncode == 0, result.stdout + result.stderr
    check_consistent_finish(s, 2)
    records = s.records()
    payloads = [r for r in records if r["event"] == "payload"]
    assert payloads and all(r["ok"] for r in payloads), payloads
    # Payloads summed by the second generation, at size 2.
    assert any(r["size"] == 2 for r in payloads), payloads
    exit_time = next(r["time"] for r in records if r["event"] == "exit")
    resets = [r for r in records if r["event"] == "reset"]
    assert {r["slot"] for r in resets} >= {"localhost:0", "localhost:1"}
    # Well inside the default Gloo timeout (30 s) that a wait on the
    # segment without the Abort would have taken.
    assert min(r["time"] for r in resets) - exit_time < 10, resets
    assert SHARED in result.stderr
    wait_until_no_new_segments(before)


def test_hvdrun_killed_mid_job_leaves_no_segment(hvdrun, tmp_path):
    before = shm_segments()
    s = Scenario(tmp_path, "localhost:4\n", epochs=1000, batches=10,
                 payload=1 << 20)
    job = hvdrun.start(["-np", "4", "--host-discovery-script",
                        str(s.discover), *s.command()])
    wait_until(lambda: len({r["slot"] for r in s.records()
                            if r["event"] == "payload"}) == 4,
               "every rank's first payload allreduce")
    pids = {int(os.path.basename(p).split(".")[-2])
            for p in s.log.glob("*.jsonl")}
    assert len(pids) == 4
    job.send_signal(signal.SIGKILL)
    job.wait(timeout=30)
    wait_until(lambda: not any(_alive(p) for p in pids),
               f"workers {sorted(pids)} to die with hvdrun", timeout=10)
    wait_until_no_new_segments(before)


def test_process_sets_have_their_own_groups(hvdrun):
    """A set with two ranks on each of two hosts goes through its own
    segments and cross contexts, one on one host through its segment, one
    with a rank per host flat; every result checked against numpy."""
    before = shm_segments()
    result = hvdrun(["-H", "localhost:3,127.0.0.1:3", PYTHON,
                     str(WORKERS / "hierarchical_sets_worker.py")],
                    timeout=180, env=debug_env(HVD_SHM_CHUNK_BYTES="4096"))
    assert result.returncode == 0, result.stdout + result.stderr
    passed_everywhere(result, 6)
    # Set ids 1, 2, 3 in SETS' order; the global set's group on every rank.
    groups = re.findall(r"shared memory for set (s\d+)", result.stderr)
    assert sorted(groups) == sorted(["s0"] * 6 + ["s1"] * 4 + ["s2"] * 2), \
        result.stderr
    wait_until_no_new_segments(before)
