"""A one-machine elastic job (one host, several slots: a box of GPUs)
through the real hvdrun. A worker killed with kill -9 leaves the others,
which hold the committed state, to go on, and its slot comes back after a
cooldown; a job that cannot start stops after a few tries; hvdrun's last
lines carry horovodrun's words for the endings it names."""

import glob
import os
import re
import signal
import time

import pytest

from conftest import untimed, wait_until
from test_elastic import Scenario, check_consistent_finish

PYTHON = "/usr/bin/python3"
PROCESSES_FAILED = ("Horovod detected that one or more processes exited "
                    "with non-zero status, thus causing the job to be "
                    "terminated")


def worker_pid(job, slot):
    """The worker process of `slot`'s first start: the child of the pid
    hvdrun reports with --verbose (the worker's guard)."""
    line = job.wait_for_line(
        lambda l: f"hvdrun: slot {slot} (rank " in l and ") is pid " in l,
        f"hvdrun's pid of slot {slot}", stream="stderr")
    guard = int(line.rsplit(" ", 1)[1])

    def child():
        with open(f"/proc/{guard}/task/{guard}/children") as f:
            return [int(pid) for pid in f.read().split()]

    return wait_until(child, f"the worker of guard {guard}")[0]


def generations(stderr):
    """(reason, size) of each generation hvdrun formed, in order."""
    found = []
    for line in untimed(stderr):
        m = re.match(r"hvdrun: generation \d+ \((.*)\): (\d+) workers?: ", line)
        if m:
            found.append((m.group(1), int(m.group(2))))
    return found


@pytest.mark.parametrize("victim,cooldown", [
    ("localhost:1", None),
    ("localhost:1", ("1", "1")),
    ("localhost:0", ("1", "1")),  # rank 0: its slot comes back behind
])
def test_a_killed_worker_leaves_the_others_to_finish(hvdrun, tmp_path,
                                                      victim, cooldown):
    # With a cooldown the job ends only once its slot is back.
    s = Scenario(tmp_path, "", epochs=2, batches=20, sleep=0.05,
                 hold_until_size=2 if cooldown else 0)
    extra = ["--blacklist-cooldown-range", *cooldown] if cooldown else []
    job = hvdrun.start(["--verbose", "-np", "2", "--min-np", "1", "-H",
                        "localhost:2", *extra, *s.command()])
    pid = worker_pid(job, victim)
    wait_until(lambda: any(r["event"] == "batch" for r in s.records()),
               "a trained step")
    os.kill(pid, signal.SIGKILL)
    result = job.finish(timeout=90)
    assert result.returncode == 0, result.stderr
    survivor = "localhost:0" if victim == "localhost:1" else "localhost:1"
    assert f"slot {victim} (rank {victim[-1]}) was killed by signal 9" \
        in result.stderr, result.stderr
    assert "host localhost stays: blacklisting it would stop every worker " \
        "that holds the committed state" in result.stderr, result.stderr
    # The survivor kept its process from start to end.
    assert len(glob.glob(str(s.log / f"{survivor}.*.jsonl"))) == 1
    formed = generations(result.stderr)
    assert formed[:2] == [
        ("start", 2),
        (f"slot {victim} failed; slot blacklisted, host localhost kept", 1)], \
        formed
    if cooldown:
        assert formed[2:] == [("a blacklisted slot's cooldown ended", 2)], \
            formed
        check_consistent_finish(s, 2)
        # The survivor, holding the state, is rank 0 to the end.
        assert {r["slot"]: r["rank"] for r in s.done()}[survivor] == 0
    else:
        assert formed[2:] == [], formed
        check_consistent_finish(s, 1)
        assert s.done()[0]["slot"] == survivor


def test_a_job_that_cannot_start_stops(hvdrun, tmp_path):
    """A missing script fails every start before hvd.init(); with a
    cooldown hvdrun used to restart it forever, each generation said to
    be for "hosts changed"."""
    s = Scenario(tmp_path, "localhost:2\n")
    started = time.monotonic()
    result = hvdrun(["-np", "2", "--host-discovery-script", str(s.discover),
                     "--discovery-interval", "0.3",
                     "--blacklist-cooldown-range", "1", "2", PYTHON,
                     str(tmp_path / "no_such_script.py")], timeout=60)
    assert result.returncode == 2, result.stderr  # python's code
    assert time.monotonic() - started < 30
    assert generations(result.stderr) == [
        ("start", 2),
        ("a blacklisted host's cooldown ended", 2),
        ("a blacklisted host's cooldown ended", 2)], result.stderr
    own = [l for l in untimed(result.stderr) if l.startswith("hvdrun: ")]
    assert own[-2] == "hvdrun: " + PROCESSES_FAILED, own
    assert own[-1].startswith(
        "hvdrun: the job cannot start: 3 worker starts in a row failed the "
        "same way before any worker checked in to the rendezvous "
        "(hvd.init()): exited with code 2"), own
    assert own[-1].endswith("job failed (exit code 2)"), own


def test_the_elastic_timeout_ends_with_horovods_words(hvdrun, tmp_path):
    s = Scenario(tmp_path, "localhost:1\n")
    result = hvdrun(["-np", "2", "--host-discovery-script", str(s.discover),
                     "--elastic-timeout", "1", "/bin/true"], timeout=60)
    assert result.returncode == 1, result.stderr
    own = [l for l in untimed(result.stderr) if l.startswith("hvdrun: ")]
    assert own[-2] == (
        "hvdrun: Timed out waiting for minimum number of slots to become "
        "available. Please check that you have enough resources to run at "
        "least 2 Horovod processes. Timeout after 1 seconds."), own
    assert own[-1].startswith("hvdrun: not enough slots for 1 s"), own
