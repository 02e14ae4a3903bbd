"""hvdrun's driver as a user meets it: SIGTERM in every state it can be in,
the CPU it uses while it waits, steps longer than every timeout, failures
counted once, jobs that end at once when no host is left."""

import glob
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from conftest import wait_until
from test_elastic import Scenario, check_consistent_finish

TICKS = os.sysconf("SC_CLK_TCK")


def start(hvdrun, args, **kwargs):
    """hvdrun --verbose: it reports each worker's guard pid."""
    return hvdrun.start(["--verbose", *args], **kwargs)


def wait_for(child, pattern, timeout=60):
    child.wait_for_line(lambda line: re.search(pattern, line), pattern,
                        stream="stderr", timeout=timeout)


def guard_pids(child):
    """The pids hvdrun reports for the workers' guards."""
    return {int(p) for p in re.findall(r"\) is pid (\d+)",
                                       child.text("stderr"))}


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1]
    utime, stime = fields.split()[11:13]
    return (int(utime) + int(stime)) / TICKS


def alive(pid):
    try:
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def worker_pids(log_dir):
    """Pids the test's workers wrote into their file names."""
    return {int(os.path.basename(p).split(".")[-2])
            for p in glob.glob(str(log_dir / "*.jsonl"))} | \
        {int(os.path.basename(p).split(".")[-1])
         for p in glob.glob(str(log_dir / "pid.*"))}


def elastic_args(s, *extra):
    return ["--host-discovery-script", str(s.discover), "--discovery-interval",
            "0.3", *extra, *s.command()]


def reach_starting(hvdrun, tmp_path):
    s = Scenario(tmp_path, "localhost:2\n", epochs=100, batches=10)
    w = start(hvdrun, ["-np", "2", *elastic_args(s)])
    wait_for(w, r"generation 1 \(start\)")
    w.wait_for_lines(lambda line: ") is pid " in line, "both workers' pids",
                     count=2, stream="stderr")
    return w, s.log


def reach_running(hvdrun, tmp_path):
    s = Scenario(tmp_path, "localhost:2\n", epochs=100, batches=10)
    w = start(hvdrun, ["-np", "2", *elastic_args(s)])
    wait_until(lambda: any(r["event"] == "batch" for r in s.records()),
               "a training step", timeout=60)
    return w, s.log


def reach_waiting_for_slots(hvdrun, tmp_path):
    s = Scenario(tmp_path, "localhost:1\n")
    w = start(hvdrun, ["-np", "2", "--min-np", "2", *elastic_args(s)])
    wait_for(w, "1 usable slots, 2 needed; waiting up to 600 s")
    return w, s.log


def reach_waiting_for_checkins(hvdrun, tmp_path):
    # A host joins while the workers are in their first, 30 s step (rank 0
    # writes the hosts at the start of epoch 0).
    s = Scenario(tmp_path, "localhost:2\n", epochs=3, batches=2, sleep=30,
                 discovery={"0": "localhost:2\n127.0.0.1:1\n"})
    w = start(hvdrun, ["-np", "2", "--min-np", "2", *elastic_args(s)])
    wait_for(w, r"generation 2 \(hosts changed\)", timeout=120)
    return w, s.log


def reach_resetting(hvdrun, tmp_path):
    # One worker hangs; its peers time out and ask for a reset; the driver
    # probes the hung one.
    s = Scenario(tmp_path, "", epochs=3, batches=4,
                 exits=[{"slot": "127.0.0.1:0", "epoch": 1, "batch": 1,
                         "how": "stop"}])
    w = start(hvdrun, ["-np", "3", "--min-np", "2", "-H", "localhost:2,127.0.0.1:1",
                 "--gloo-timeout-seconds", "2", *s.command()])
    wait_for(w, "slot 127.0.0.1:0 did not answer", timeout=90)
    return w, s.log


def reach_stopping(hvdrun, tmp_path):
    # Workers that ignore SIGTERM keep the driver in its grace period.
    log_dir = tmp_path / "log"
    log_dir.mkdir()
    script = tmp_path / "stubborn.sh"
    script.write_text(f"trap '' TERM\necho > {log_dir}/pid.$$\n"
                      "while :; do sleep 0.1; done\n")
    w = start(hvdrun, ["-np", "2", "/bin/sh", str(script)])
    wait_until(lambda: len(worker_pids(log_dir)) == 2,
               "both workers to start")
    w.send_signal(signal.SIGTERM)
    wait_for(w, "received Terminated; stopping the workers")
    return w, log_dir


STATES = {
    "starting": reach_starting,
    "running": reach_running,
    "waiting for slots": reach_waiting_for_slots,
    "waiting for check-ins": reach_waiting_for_checkins,
    "resetting": reach_resetting,
    "stopping": reach_stopping,
}


@pytest.mark.parametrize("state", list(STATES))
def test_sigterm_ends_hvdrun_in_every_state(hvdrun, tmp_path, state):
    w, log_dir = STATES[state](hvdrun, tmp_path)
    pids = guard_pids(w) | worker_pids(log_dir)
    if state != "waiting for slots":
        assert pids, w.text("stderr")
    sent = time.monotonic()
    w.proc.send_signal(signal.SIGTERM)
    try:
        w.proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pytest.fail(f"hvdrun still running 5 s after SIGTERM ({state}):\n"
                    + w.text("stderr"))
    took = time.monotonic() - sent
    # Its workers left with it (the guards reap them as they go).
    wait_until(lambda: not any(alive(p) for p in pids),
               f"workers {sorted(p for p in pids if alive(p))} to exit",
               timeout=5)
    assert w.proc.returncode == 128 + signal.SIGTERM, w.text("stderr")
    assert took < 5


def test_hvdrun_idles_while_it_waits(hvdrun, tmp_path):
    """Waiting for slots (discovery every second) and for check-ins (a long
    step, its workers probed) costs hvdrun at most 5 % of a core."""
    for sub in ("slots", "checkins"):
        (tmp_path / sub).mkdir()
    w, _ = reach_waiting_for_slots(hvdrun, tmp_path / "slots")
    before = cpu_seconds(w.pid)
    time.sleep(4)  # the measurement window, not a synchronisation
    used = cpu_seconds(w.pid) - before
    assert used <= 0.05 * 4, f"hvdrun used {used:.2f} s of CPU in 4 s"
    w.send_signal(signal.SIGTERM)
    w.finish(timeout=10)

    w, _ = reach_waiting_for_checkins(hvdrun, tmp_path / "checkins")
    before = cpu_seconds(w.pid)
    time.sleep(4)
    used = cpu_seconds(w.pid) - before
    assert used <= 0.05 * 4, f"hvdrun used {used:.2f} s of CPU in 4 s"


def test_steps_longer_than_every_timeout_keep_the_committed_state(
        hvdrun, tmp_path):
    """A host is added while every step lasts longer than the elastic and
    start timeouts: the trained workers are never killed, and the job ends
    with the model of a run without change."""
    s = Scenario(tmp_path, "localhost:2\n", epochs=2, batches=2, sleep=4,
                 discovery={"1": "localhost:2\n127.0.0.1:1\n"})
    result = hvdrun(["-np", "2", "--min-np", "2", "--elastic-timeout", "1",
                     "--start-timeout", "3", *elastic_args(s)], timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    check_consistent_finish(s, 3)
    assert "did not check in" not in result.stderr, result.stderr
    assert "(hung)" not in result.stderr, result.stderr
    # The localhost slots kept their processes from the start to the end
    # (each process logs to <slot>.<pid>.jsonl).
    for slot in ("localhost:0", "localhost:1"):
        files = glob.glob(str(s.log / f"{slot}.*.jsonl"))
        assert len(files) == 1, (slot, files)
    assert "generation 2 (hosts changed)" in result.stderr


def test_one_failure_is_one_reset_on_a_busy_machine(hvdrun, tmp_path):
    """The survivors' reset requests may reach the driver before the failed
    worker's exit; with two busy processes on two cores that used to make
    a second generation and exceed --reset-limit 1."""
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(2)]
    try:
        s = Scenario(tmp_path, "", epochs=3, batches=4,
                     exits=[{"slot": "127.0.0.1:0", "epoch": 1, "batch": 0,
                             "how": "exception"}])
        result = hvdrun(["-np", "4", "--min-np", "2", "--reset-limit", "1",
                         "-H", "localhost:2,127.0.0.1:2", *s.command()],
                        timeout=180)
    finally:
        for p in busy:
            p.kill()
            p.wait(timeout=10)
    assert result.returncode == 0, result.stdout + result.stderr
    check_consistent_finish(s, 2)
    assert "job succeeded after 1 reset" in result.stderr, result.stderr


def test_every_worker_failing_ends_the_job_at_once(hvdrun, tmp_path):
    """Every worker raises in epoch 1 (the defect: hvdrun spun for the whole
    elastic timeout). Now the job fails at once, naming every failed rank."""
    slots = ("localhost:0", "localhost:1", "127.0.0.1:0", "127.0.0.1:1")
    s = Scenario(tmp_path, "localhost:2\n127.0.0.1:2\n", epochs=3, batches=3,
                 exits=[{"slot": slot, "epoch": 1, "batch": 0,
                         "how": "exception"} for slot in slots])
    started = time.monotonic()
    result = hvdrun(["-np", "2", "--min-np", "2", "--max-np", "4",
                     *elastic_args(s)], timeout=120)
    assert result.returncode != 0
    assert time.monotonic() - started < 60, result.stderr
    assert "every host is blacklisted with no cooldown" in result.stderr, \
        result.stderr
    assert "job failed" in result.stderr
    # The final line lists the failed ranks of the generation they trained
    # in: each a slot of the job that exited with the scenario's code 17.
    final = [line for line in result.stderr.splitlines()
             if "job failed" in line][-1]
    listed = re.search(r"failures in generation \d+: (.*?); job failed",
                       final)
    assert listed, final
    failures = re.findall(r"slot (\S+) \(rank (\d+)\) exited with code 17\b",
                          listed.group(1))
    assert failures and len(failures) == listed.group(1).count("slot "), final
    assert {slot for slot, _ in failures} <= set(slots), final
    assert len({rank for _, rank in failures}) == len(failures), final


def test_workers_that_exit_zero_without_init_finish_an_elastic_job(
        hvdrun, tmp_path):
    s = Scenario(tmp_path, "localhost:2\n")
    started = time.monotonic()
    result = hvdrun(["-np", "2", "--host-discovery-script", str(s.discover),
                     "/bin/true"], timeout=60)
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - started < 30
    assert "job succeeded after 0 resets" in result.stderr


def test_a_killed_guard_takes_its_worker_and_hvdrun_ends_with_its_job(
        hvdrun, tmp_path):
    """kill -9 of rank 0's guard (hvdrun's own process; the OOM killer may
    pick it): the worker under it, busy for minutes, dies with it instead of
    running on as an orphan that holds hvdrun's output open, and hvdrun
    ends with its job, which failed with that rank."""
    w = start(hvdrun, ["-np", "2", "/bin/sleep", "300"])
    w.wait_for_lines(lambda line: ") is pid " in line, "both workers' pids",
                     count=2, stream="stderr")
    guard = int(re.search(r"slot localhost:0 \(rank 0\) is pid (\d+)",
                          w.text("stderr")).group(1))
    children = f"/proc/{guard}/task/{guard}/children"
    wait_until(lambda: open(children).read().split(), "the guard's child",
               timeout=10)
    worker = int(open(children).read().split()[0])
    os.kill(guard, signal.SIGKILL)
    wait_until(lambda: not alive(worker),
               f"rank 0's worker (pid {worker}) to die with its guard",
               timeout=10)
    try:
        w.proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail("hvdrun outlived its job:\n" + w.text("stderr"))
    assert w.proc.returncode != 0, w.text("stderr")
    assert not any(alive(p) for p in guard_pids(w)), w.text("stderr")


def test_output_held_by_an_escaped_process_does_not_keep_hvdrun(hvdrun):
    """A worker that leaves a process of its own session behind (setsid),
    holding its stdout: hvdrun ends at most kOutputDrain (5 s) after the
    job, naming the rank whose output it stopped relaying."""
    # The worker exits once the sleep has its own session (field 6 of
    # /proc/PID/stat), so that the guard's kill of the group misses it.
    script = ("setsid /bin/sleep 300 & echo escaped $!; "
              "for i in $(seq 5000); do "
              "[ \"$(cut -d' ' -f6 /proc/$!/stat)\" = $! ] && break; done")
    result = hvdrun(["-np", "1", "/bin/sh", "-c", script], timeout=60)
    escaped = int(re.search(r"escaped (\d+)", result.stdout).group(1))
    try:
        assert result.returncode == 0, result.stderr
        assert "rank 0's output was still open 5 s after the job ended" in \
            result.stderr, result.stderr
    finally:
        os.kill(escaped, signal.SIGKILL)
