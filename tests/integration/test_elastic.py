"""Elastic jobs through the real hvdrun: hosts added and removed, workers
failing, limits. Hosts are local addresses (localhost, 127.0.0.1, ...)."""

import glob
import json
import os
import re
import signal
import stat
import time

import pytest

import hvd

from conftest import ROOT, untimed, wait_until

WORKER = ROOT / "tests" / "integration" / "workers" / "elastic_worker.py"
PYTHON = "/usr/bin/python3"


class Scenario:
    def __init__(self, tmp_path, hosts, **fields):
        self.dir = tmp_path
        self.log = tmp_path / "log"
        self.log.mkdir()
        self.hosts_file = tmp_path / "hosts.txt"
        self.hosts_file.write_text(hosts)
        self.discover = tmp_path / "discover.sh"
        self.discover.write_text(f"#!/bin/sh\ncat {self.hosts_file}\n")
        self.discover.chmod(self.discover.stat().st_mode | stat.S_IEXEC)
        self.file = tmp_path / "scenario.json"
        fields.setdefault("epochs", 3)
        fields.setdefault("batches", 4)
        self.file.write_text(json.dumps(dict(
            log=str(self.log), hosts_file=str(self.hosts_file), **fields)))

    def command(self):
        return [PYTHON, str(WORKER), str(self.file)]

    def records(self):
        out = []
        for path in glob.glob(str(self.log / "*.jsonl")):
            with open(path) as f:
                # A line still being written has no newline yet.
                out.extend(json.loads(line) for line in f
                           if line.endswith("\n"))
        return sorted(out, key=lambda r: r["time"])

    def done(self):
        return [r for r in self.records() if r["event"] == "done"]


def check_consistent_finish(scenario, size):
    done = scenario.done()
    assert len(done) == size, done
    assert len({r["total"] for r in done}) == 1, done
    assert sorted(r["rank"] for r in done) == list(range(size))
    assert all(r["size"] == size for r in done)
    # Every step applied exactly once: equal to one process doing them all.
    assert all(r["w"] == r["reference"] for r in done), done


def test_hosts_added_then_removed_including_rank_zeros_host(hvdrun, tmp_path):
    # Rank 0's host leaves (epoch 3) only once the new host's workers train:
    # until then its workers alone hold the state.
    s = Scenario(tmp_path, "localhost:2\n", epochs=5, batches=8, sleep=0.1,
                 hold_before_epoch={"3": 4},
                 discovery={"1": "localhost:2\n127.0.0.1:2\n",
                            "3": "127.0.0.1:2\n"})
    result = hvdrun(["-np", "2", "--min-np", "1", "--host-discovery-script",
                     str(s.discover), "--discovery-interval", "0.3",
                     *s.command()], timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    check_consistent_finish(s, 2)
    done = s.done()
    assert {r["slot"] for r in done} == {"127.0.0.1:0", "127.0.0.1:1"}
    sizes = [r["size"] for r in s.records() if r["event"] == "batch"
             and r["slot"] == "127.0.0.1:0"]
    assert 4 in sizes and sizes[-1] == 2, sizes
    assert "removed from the job" in result.stderr
    assert "generation 3" in result.stderr


@pytest.mark.parametrize("how", ["exception", "kill"])
def test_one_failure_recovers_on_fixed_hosts(hvdrun, tmp_path, how):
    s = Scenario(tmp_path, "", epochs=3, batches=4,
                 exits=[{"slot": "127.0.0.1:0", "epoch": 1, "batch": 1,
                         "how": how}])
    started = time.monotonic()
    result = hvdrun(["-np", "4", "--min-np", "2", "-H",
                     "localhost:2,127.0.0.1:2", *s.command()], timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    check_consistent_finish(s, 2)
    assert "host 127.0.0.1 blacklisted" in result.stderr
    # Survivors redo at most the step that was in flight.
    batches = [r for r in s.records() if r["event"] == "batch"
               and r["slot"] == "localhost:0"]
    steps = [(r["epoch"], r["batch"]) for r in batches]
    assert len(steps) - len(set(steps)) <= 1, steps
    resets = [r for r in s.records() if r["event"] == "reset"]
    assert {r["slot"] for r in resets} >= {"localhost:0", "localhost:1"}
    assert time.monotonic() - started < 90


def test_hung_worker_is_detected_and_the_job_recovers(hvdrun, tmp_path):
    s = Scenario(tmp_path, "", epochs=3, batches=4,
                 exits=[{"slot": "127.0.0.1:0", "epoch": 1, "batch": 1,
                         "how": "stop"}])
    result = hvdrun(["-np", "4", "--min-np", "2", "-H",
                     "localhost:2,127.0.0.1:2", "--gloo-timeout-seconds", "3",
                     "--start-timeout", "3", *s.command()], timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    check_consistent_finish(s, 2)
    # Its peers time out and ask for a reset; it answers no probe.
    assert "slot 127.0.0.1:0 (rank 2) did not answer 3 liveness probes in " \
        "a row (hung)" in result.stderr, result.stderr
    assert {r["slot"] for r in s.done()} == {"localhost:0", "localhost:1"}


def test_min_np_timeout_fails_with_a_message(hvdrun, tmp_path):
    s = Scenario(tmp_path, "localhost:1\n")
    result = hvdrun(["-np", "2", "--host-discovery-script", str(s.discover),
                     "--elastic-timeout", "3", *s.command()], timeout=60)
    assert result.returncode != 0
    assert "not enough slots for 3 s (--min-np 2)" in result.stderr


def test_reset_limit_exceeded(hvdrun, tmp_path):
    s = Scenario(tmp_path, "", epochs=3, batches=4,
                 exits=[{"slot": "127.0.0.1:0", "epoch": 1, "batch": 0,
                         "how": "exception"}])
    result = hvdrun(["-np", "4", "--min-np", "2", "--reset-limit", "0", "-H",
                     "localhost:2,127.0.0.1:2", *s.command()], timeout=120)
    assert result.returncode != 0
    assert "reset limit of 0 exceeded" in result.stderr, result.stderr


def test_reset_limit_not_exceeded(hvdrun, tmp_path):
    s = Scenario(tmp_path, "", epochs=3, batches=4,
                 exits=[{"slot": "127.0.0.1:0", "epoch": 1, "batch": 0,
                         "how": "exception"}])
    result = hvdrun(["-np", "4", "--min-np", "2", "--reset-limit", "1", "-H",
                     "localhost:2,127.0.0.1:2", *s.command()], timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    check_consistent_finish(s, 2)
    assert "job succeeded after 1 reset" in result.stderr


def test_all_hosts_blacklisted(hvdrun, tmp_path):
    s = Scenario(tmp_path, "", epochs=3, batches=4,
                 exits=[{"slot": "localhost:0", "epoch": 0, "batch": 1,
                         "how": "exception"}])
    started = time.monotonic()
    result = hvdrun(["-np", "2", "--min-np", "2", "-H", "localhost:2",
                     "--elastic-timeout", "600", *s.command()], timeout=60)
    assert result.returncode != 0
    # At once, as in Horovod: no host can come back.
    assert time.monotonic() - started < 50
    assert "every host is blacklisted with no cooldown (localhost)" \
        in result.stderr, result.stderr
    assert "last failure: slot localhost:0" in result.stderr, result.stderr


def test_discovery_that_fails_or_prints_garbage_keeps_the_hosts(hvdrun,
                                                                tmp_path):
    s = Scenario(tmp_path, "localhost:2\n", epochs=4, batches=12, sleep=0.1,
                 discovery={"1": "not a host!\n", "2": "<fail>",
                            "3": "localhost:2\n"})
    result = hvdrun(["-np", "2", "--host-discovery-script", str(s.discover),
                     "--discovery-interval", "0.3", *s.command()],
                    timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    check_consistent_finish(s, 2)
    assert "keeping the last known hosts" in result.stderr
    assert "line 1 'not a host!'" in result.stderr
    assert "failed (exit code 1)" in result.stderr, result.stderr
    assert "job succeeded after 0 resets" in result.stderr


def test_elastic_hvdrun_killed_leaves_no_process(hvdrun, tmp_path):
    s = Scenario(tmp_path, "localhost:2\n", epochs=1000, batches=10)
    job = hvdrun.start(["-np", "2", "--host-discovery-script",
                        str(s.discover), *s.command()])
    wait_until(lambda: any(r["event"] == "batch" for r in s.records()),
               "the first batch")
    pids = {int(os.path.basename(p).split(".")[-2])
            for p in glob.glob(str(s.log / "*.jsonl"))}
    assert len(pids) == 2
    job.send_signal(signal.SIGKILL)
    job.wait(timeout=30)
    wait_until(lambda: not any(_alive(p) for p in pids),
               f"workers {sorted(pids)} to die with hvdrun", timeout=10)


def process_state(pid):
    """The state letter /proc gives `pid` (R, S, T, Z, ...); None if gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return None


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_blacklisted_host_returns_after_its_cooldown(hvdrun, tmp_path):
    s = Scenario(tmp_path, "", epochs=8, batches=10, sleep=0.1,
                 exits=[{"slot": "127.0.0.1:0", "epoch": 0, "batch": 1,
                         "how": "exception"}])
    result = hvdrun(["-np", "4", "--min-np", "2", "-H",
                     "localhost:2,127.0.0.1:2", "--blacklist-cooldown-range",
                     "1", "1", *s.command()], timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    check_consistent_finish(s, 4)
    generations = [l for l in untimed(result.stderr)
                   if l.startswith("hvdrun: generation")]
    assert [g.split(": ")[2].split()[0] for g in generations] == \
        ["4", "2", "4"], generations


def test_no_slot_of_the_last_generation_left_fails(hvdrun, tmp_path):
    s = Scenario(tmp_path, "localhost:2\n", epochs=4, batches=8, sleep=0.1,
                 discovery={"1": "127.0.0.3:2\n"})
    result = hvdrun(["-np", "2", "--min-np", "1", "--host-discovery-script",
                     str(s.discover), "--discovery-interval", "0.3",
                     *s.command()], timeout=120)
    assert result.returncode != 0
    assert "no slot of generation 1 is left to carry the committed state" \
        in result.stderr, result.stderr


def test_all_ranks_failing_ends_the_job(hvdrun, tmp_path):
    exits = [{"slot": slot, "epoch": 0, "batch": 1, "how": "exception"}
             for slot in ("localhost:0", "localhost:1", "127.0.0.1:0",
                          "127.0.0.1:1")]
    s = Scenario(tmp_path, "", exits=exits)
    started = time.monotonic()
    result = hvdrun(["-np", "4", "--min-np", "2", "-H",
                     "localhost:2,127.0.0.1:2", "--elastic-timeout", "600",
                     *s.command()], timeout=60)
    assert result.returncode != 0
    assert time.monotonic() - started < 50
    assert "every host is blacklisted with no cooldown" in result.stderr, \
        result.stderr
    assert "job failed" in result.stderr


def test_discovery_script_that_hangs_keeps_the_hosts(hvdrun, tmp_path):
    s = Scenario(tmp_path, "localhost:2\n", epochs=3, batches=10, sleep=0.1)
    # First run answers; later runs hang until killed.
    marker = tmp_path / "answered"
    s.discover.write_text(
        f"#!/bin/sh\nif [ -e {marker} ]; then sleep 60; fi\n"
        f"touch {marker}\ncat {s.hosts_file}\n")
    env = dict(os.environ, HVD_DISCOVERY_TIMEOUT="1")
    result = hvdrun(["-np", "2", "--host-discovery-script", str(s.discover),
                     "--discovery-interval", "0.3", *s.command()],
                    timeout=120, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    check_consistent_finish(s, 2)
    assert "did not finish within 1000 ms (killed)" in result.stderr
    assert "keeping the last known hosts" in result.stderr


def test_elastic_sampler_trains_every_sample_once_across_a_failure(
        hvdrun, tmp_path):
    worker = ROOT / "tests" / "integration" / "workers" / \
        "elastic_sampler_worker.py"
    result = hvdrun(["-np", "4", "--min-np", "2", "-H",
                     "localhost:2,127.0.0.1:2", PYTHON, str(worker),
                     str(tmp_path), "127.0.0.1:1", "3"], timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "killed").exists()
    committed = {0: [], 1: []}
    for path in glob.glob(str(tmp_path / "*.jsonl")):
        records = [json.loads(line) for line in open(path)]
        for record, following in zip(records, records[1:] + [None]):
            # A step counts once its commit is logged by the same process.
            if record["event"] == "step" and following and \
                    following["event"] == "commit":
                committed[record["epoch"]].extend(record["indices"])
    sizes = {json.loads(l)["size"] for p in glob.glob(str(tmp_path / "*.jsonl"))
             for l in open(p) if '"step"' in l}
    assert sizes == {4, 2}, sizes
    for epoch, indices in committed.items():
        assert sorted(indices) == list(range(96)), (epoch, sorted(indices))


def test_driver_updates_reach_on_hosts_updated_before_the_interrupt(
        hvdrun, tmp_path):
    """A State subclass that overrides on_hosts_updated, as Horovod's
    notification manager calls it: each worker of the first world hears of
    the added host once, with the generation it leads to as the timestamp
    and the added flag set, before the commit that raises the interrupt;
    both raise it at the same commit. The workers that start in the grown
    world hear of nothing."""
    worker = ROOT / "tests" / "integration" / "workers" / \
        "host_update_listener_worker.py"
    s = Scenario(tmp_path, "localhost:2\n")
    result = hvdrun(["-np", "2", "--min-np", "1", "--host-discovery-script",
                     str(s.discover), "--discovery-interval", "0.3", PYTHON,
                     str(worker), str(s.log), str(s.hosts_file),
                     "localhost:2\n127.0.0.1:2\n"], timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    ends = {}
    for path in glob.glob(str(s.log / "*.json")):
        with open(path) as f:
            end = json.load(f)
        ends[end["slot"]] = end
    assert sorted(ends) == ["127.0.0.1:0", "127.0.0.1:1", "localhost:0",
                            "localhost:1"], ends
    assert all(end["size"] == 4 for end in ends.values()), ends
    first = [ends["localhost:0"]["seen"], ends["localhost:1"]["seen"]]
    for seen in first:
        assert [event[0] for event in seen] == ["update", "interrupt"], first
        _, timestamp, update_res = seen[0]
        assert isinstance(timestamp, int) and timestamp > 1, first
        assert update_res == hvd.elastic.HostUpdateResult.added, first
    assert first[0] == first[1], first
    assert ends["127.0.0.1:0"]["seen"] == ends["127.0.0.1:1"]["seen"] == []


def test_abort_frees_survivors_blocked_on_a_hung_peer(hvdrun, tmp_path):
    """One worker hangs (SIGSTOP), then another is killed: the driver's
    Abort makes the survivors, blocked on the hung one, fail at once
    instead of after the 60 s Gloo timeout."""
    s = Scenario(tmp_path, "", epochs=3, batches=6, sleep=0.05,
                 exits=[{"slot": "127.0.0.1:0", "epoch": 1, "batch": 1,
                         "how": "stop"}])
    started = time.monotonic()
    job = hvdrun.start(["-np", "4", "--min-np", "2", "-H",
                        "localhost:2,127.0.0.1:1,127.0.0.2:1",
                        "--gloo-timeout-seconds", "60", "--start-timeout",
                        "3", *s.command()])

    def others_blocked():
        """127.0.0.1:0 is stopped between the two allreduces of its step,
        and the other three have submitted the second one, which cannot
        complete without it."""
        stopped = glob.glob(str(s.log / "127.0.0.1:0.*.jsonl"))
        if len(stopped) != 1 or \
                process_state(int(stopped[0].split(".")[-2])) != "T":
            return False
        submitted = {r["slot"] for r in s.records()
                     if r["event"] == "submitted" and r["name"] == "model.b"
                     and (r["epoch"], r["batch"]) == (1, 1)}
        return submitted == {"localhost:0", "localhost:1", "127.0.0.2:0"}

    wait_until(others_blocked, "the others to block on the stopped worker",
               timeout=60)
    victim = glob.glob(str(s.log / "127.0.0.2:0.*.jsonl"))
    assert len(victim) == 1, victim
    os.kill(int(victim[0].split(".")[-2]), signal.SIGKILL)
    out, err = job.communicate(timeout=60)
    assert job.returncode == 0, out + err
    assert time.monotonic() - started < 40
    assert "aborting this generation's collectives" in err, err
    check_consistent_finish(s, 2)
    assert {r["slot"] for r in s.done()} == {"localhost:0", "localhost:1"}


ASCTIME = r"[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}"


def untimed_file(path):
    """The lines of a worker's output file written with
    --prefix-output-with-timestamp, each without its time (which every line
    must have)."""
    lines = path.read_text().splitlines()
    for line in lines:
        assert re.match(ASCTIME + " ", line), (path, line)
    return [line[len("Tue Mar  5 14:03:09 2024 "):] for line in lines]


def test_output_files_of_a_slot_survive_its_respawn(hvdrun, tmp_path):
    """--output-filename in an elastic job: a directory per slot, a pair of
    files per process named after the generation it was started for. A
    worker killed mid-step and the one that replaces it after its host's
    cooldown each leave their complete output."""
    s = Scenario(tmp_path, "", epochs=8, batches=10, sleep=0.1, print=True,
                 exits=[{"slot": "127.0.0.1:0", "epoch": 0, "batch": 2,
                         "how": "pause"}])
    out = tmp_path / "out"
    job = hvdrun.start(["-np", "4", "--min-np", "2", "-H",
                        "localhost:2,127.0.0.1:2", "--blacklist-cooldown-range",
                        "1", "1", "--output-filename", str(out),
                        "--prefix-output-with-timestamp", *s.command()])
    # Killed while it waits in the middle of a step: everything it printed
    # is out by then.
    wait_until(lambda: job.poll() is not None or
               (s.log / "paused").exists(), "127.0.0.1:0 to pause")
    victim = glob.glob(str(s.log / "127.0.0.1:0.*.jsonl"))
    assert len(victim) == 1, victim
    killed = int(victim[0].split(".")[-2])
    os.kill(killed, signal.SIGKILL)
    result = job.finish(timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    check_consistent_finish(s, 4)

    slot_dir = out / "127.0.0.1.0"
    names = sorted(p.name for p in slot_dir.iterdir())
    generations = sorted({int(n.split(".")[1]) for n in names})
    assert len(generations) == 2 and generations[0] == 1, names
    later = generations[1]
    assert names == sorted(f"gen.{g}.{kind}" for g in generations
                           for kind in ("stdout", "stderr")), names
    # The generation the replacement was started for is the one its host
    # came back in (checked again once its cooldown ended).
    back = [l for l in untimed(result.stderr)
            if l.startswith(f"hvdrun: generation {later} (")]
    assert len(back) == 1 and "127.0.0.1:0" in back[0], result.stderr
    pids = {}
    for g in generations:
        err = untimed_file(slot_dir / f"gen.{g}.stderr")
        started = [l for l in err if l.startswith("pid ")]
        assert len(started) == 1, err
        pids[g] = int(started[0].split()[1])
    assert pids[1] == killed
    for g in generations:
        records = [json.loads(line) for line in
                   open(s.log / f"127.0.0.1:0.{pids[g]}.jsonl")]
        mine = [f"batch {r['epoch']}.{r['batch']}" for r in records
                if r["event"] == "batch"]
        lines = untimed_file(slot_dir / f"gen.{g}.stdout")
        assert lines == mine + (["done"] if g == later else []), (g, lines)
    assert untimed_file(slot_dir / "gen.1.stdout")[-1] == "batch 0.1"
    # Slots that kept their process have one pair; the host's other slot,
    # stopped with it, two.
    for slot, count in (("localhost.0", 1), ("localhost.1", 1),
                        ("127.0.0.1.1", 2)):
        files = sorted(p.name for p in (out / slot).iterdir())
        assert len(files) == 2 * count, (slot, files)
    # The terminal got the same lines with the time and the start rank.
    assert re.search(f"^{ASCTIME}\\[2\\]<stdout>:batch 0.1$", result.stdout,
                     re.MULTILINE), result.stdout


def test_one_timeline_across_generations_and_a_killed_rank_zero(hvdrun,
                                                               tmp_path):
    """--timeline-filename in an elastic job: one Chrome trace over the
    whole job. A worker is killed, its host comes back, then rank 0 is
    killed: the next rank 0, a process started on another host (here the
    same machine, so the same file), continues the trace. Every generation
    that ran begins with one membership instant with its size, hosts and
    the reason hvdrun gave for it."""
    s = Scenario(tmp_path, "", epochs=10, batches=10, sleep=0.1,
                 exits=[{"slot": "127.0.0.1:0", "epoch": 0, "batch": 2,
                         "how": "kill"},
                        {"slot": "localhost:0", "size": 4, "entries": 3,
                         "how": "kill"}])
    trace_path = tmp_path / "timeline.json"
    result = hvdrun(["-np", "4", "--min-np", "2", "-H",
                     "localhost:2,127.0.0.1:2", "--blacklist-cooldown-range",
                     "1", "1", "--timeline-filename", str(trace_path),
                     *s.command()], timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    assert len(glob.glob(str(s.log / "exit.*"))) == 2, "a kill did not fire"
    published = {}  # generation -> (reason, size)
    for line in untimed(result.stderr):
        m = re.match(r"hvdrun: generation (\d+) \((.*)\): (\d+) workers?: ",
                     line)
        if m:
            published[int(m.group(1))] = (m.group(2), int(m.group(3)))

    with open(trace_path) as f:
        trace = json.load(f)  # one valid trace
    rows = {e["args"]["name"]: e["pid"] for e in trace
            if e.get("ph") == "M" and e.get("name") == "process_name"}
    assert "membership" in rows, rows
    marks = [e for e in trace if e["pid"] == rows["membership"]
             and e["ph"] == "i"]
    generations = [e["args"]["generation"] for e in marks]
    assert generations == sorted(set(generations)), generations
    for mark in marks:
        g = mark["args"]["generation"]
        reason, size = published[g]
        assert mark["s"] == "g" and mark["name"] == \
            f"generation {g}: {size} ranks", mark
        assert mark["args"]["size"] == size, mark
        assert mark["args"]["reason"] == reason, mark
        assert sum(int(h.rsplit(":", 1)[1]) for h in mark["args"]["hosts"]) \
            == size, mark
    # The first generation, the one after the first kill, and the one
    # after rank 0's, which a process on 127.0.0.1 led.
    by_reason = {m["args"]["reason"]: m for m in marks}
    assert marks[0]["args"]["generation"] == 1
    assert marks[0]["args"]["hosts"] == ["localhost:2", "127.0.0.1:2"]
    after_kill = by_reason["slot 127.0.0.1:0 failed; host 127.0.0.1 "
                           "blacklisted"]
    assert after_kill["args"]["hosts"] == ["localhost:2"], marks
    rank0_gone = by_reason["slot localhost:0 failed; host localhost "
                           "blacklisted"]
    assert rank0_gone["args"]["hosts"] == ["127.0.0.1:2"], marks
    # Every generation recorded its collectives after its mark (and before
    # the next one's).
    ends = [m["ts"] for m in marks[1:]] + [float("inf")]
    for mark, end in zip(marks, ends):
        work = [e for e in trace if e["pid"] != rows["membership"]
                and e["ph"] == "B" and mark["ts"] <= e["ts"] < end]
        assert work, f"no collective in generation {mark['args']}"
