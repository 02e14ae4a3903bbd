"""The chaos soak (issue 32): one elastic job on the test bed through a
reproducible schedule of faults, ending with the model a fault-free run
computes and every step's samples applied exactly once.

The job: workers over ssh on bed hosts found by a discovery script, etcd
as three members on three others, a leader and a standby hvdrun in the
root namespace (--adopt-grace-seconds). The schedule is a pure function of
a seed and a length (`schedule`): worker kills, hangs (SIGSTOP), host
crashes, partitions (healed later), host additions, leader crashes (the
standby takes over, and a new standby starts) and etcd member losses (the
member restarts later), every kind at least once, then at random.

CI runs a short one (HVD_SOAK_MINUTES, 2 by default, HVD_SOAK_SEED 1);
`scripts/chaos/soak.sh SEED MINUTES` runs any other."""

import os
import random
import signal
import time

from conftest import wait_until
from test_elastic import Scenario, check_consistent_finish

FAULTS = ("kill", "hang", "crash", "partition", "add", "leader", "etcd")
# Seconds a partition or an etcd member's loss lasts.
OUTAGE = 10.0


def schedule(seed, minutes):
    """[(seconds from the start, fault)]: every kind once, in an order the
    seed picks, then kinds at random, 12 to 25 s apart, within the first
    three quarters of the run (or as long as every kind takes)."""
    rng = random.Random(seed)
    kinds = list(FAULTS)
    rng.shuffle(kinds)
    events, at = [], 15.0
    while kinds or at < minutes * 60 * 0.75:
        events.append((round(at, 1),
                       kinds.pop(0) if kinds else rng.choice(FAULTS)))
        at += rng.uniform(12, 25)
    return events


def test_the_schedule_is_the_seeds_and_holds_every_fault():
    assert schedule(7, 3) == schedule(7, 3)
    assert schedule(7, 3) != schedule(8, 3)
    for seed, minutes in zip(range(30), [0.5, 1, 2, 3, 10] * 6):
        events = schedule(seed, minutes)
        assert {kind for _, kind in events} == set(FAULTS), events
        assert [kind for _, kind in events[:len(FAULTS)]] != \
            [kind for _, kind in schedule(seed + 1, minutes)][:len(FAULTS)]
        assert events[-1][0] <= max(minutes * 45 + 25, 15 + 6 * 25)
        gaps = [b[0] - a[0] for a, b in zip(events, events[1:])]
        assert all(12 <= g <= 25.1 for g in gaps), events


class Soak:
    """The job and the faults done to it (the I/O of the soak)."""

    def __init__(self, bed, etcd_hosts, endpoints, hvdrun, tmp_path, rng,
                 minutes):
        self.bed, self.hvdrun, self.rng = bed, hvdrun, rng
        self.etcd_hosts, self.etcd_down = list(etcd_hosts), []
        self.workers = [bed.ctl("add")[0] for _ in range(3)]
        self.cut = []  # partitioned hosts
        # Steps of at least 0.1 s: enough of them to outlast the schedule.
        self.s = Scenario(tmp_path, self.hosts_text(), epochs=minutes * 30,
                          batches=20, sleep=0.1)
        self.args = [
            "--rendezvous-backend", "etcd", "--rendezvous-endpoint",
            endpoints, "--job-id", "soak", "--job-secret-file",
            str(tmp_path / "job.secret"), "--adopt-grace-seconds", "60",
            "-np", "4", "--min-np", "2", "--max-np", "6",
            "--blacklist-cooldown-range", "5", "10",
            "--host-discovery-script", str(self.s.discover),
            "--discovery-interval", "0.5", *self.s.command()]
        self.tmp_path = tmp_path
        self.leader = hvdrun.start(self.args, cwd=tmp_path)
        self.standby = self.start_standby()
        self.done = []  # what was done: (seconds, fault, target)

    def hosts_text(self):
        return "".join(f"{h}:2\n" for h in self.workers)

    def start_standby(self):
        standby = self.hvdrun.start(["--standby", *self.args],
                                    cwd=self.tmp_path)
        standby.wait_for_line(lambda l: "hvdrun: standby for job 'soak'" in l,
                              "the standby waiting", stream="stderr",
                              timeout=60)
        return standby

    def live_workers(self):
        """[(host, pid)] of workers running now (a worker's log is named
        <slot>.<pid>.jsonl; the bed says which pids run on a host)."""
        out = []
        for host in self.workers:
            if host in self.cut:
                continue
            running = set(self.bed.job_pids(host))
            for path in self.s.log.glob(f"{host}:*.jsonl"):
                pid = int(path.name.split(".")[-2])
                if pid in running:
                    out.append((host, pid))
        return sorted(out)

    def needs(self, fault):
        """What must come first: a crash or a partition that would leave
        fewer than two whole hosts (--min-np) adds one."""
        whole = [h for h in self.workers if h not in self.cut]
        return ["add"] if fault in ("crash", "partition") and \
            len(whole) <= 2 else []

    def do(self, fault):
        """Carries `fault` out; returns its target, or None when nothing
        fits it now."""
        whole = [h for h in self.workers if h not in self.cut]
        if fault in ("kill", "hang"):
            workers = self.live_workers()
            if not workers:
                return None
            host, pid = self.rng.choice(workers)
            os.kill(pid, signal.SIGKILL if fault == "kill" else
                    signal.SIGSTOP)
            return f"{host} pid {pid}"
        if fault in ("crash", "partition"):
            host = self.rng.choice(whole)
            if fault == "crash":
                self.bed.ctl("crash", host)
                self.workers.remove(host)
                self.s.hosts_file.write_text(self.hosts_text())
            else:
                self.bed.ctl("partition", host)
                self.cut.append(host)
            return host
        if fault == "add":
            host = self.bed.ctl("add")[0]
            self.workers.append(host)
            self.s.hosts_file.write_text(self.hosts_text())
            return host
        if fault == "leader":
            pid = self.leader.proc.pid
            self.leader.proc.kill()
            self.leader.proc.wait(timeout=10)
            self.standby.wait_for_line(
                lambda l: "hvdrun: took job 'soak' over" in l,
                "the standby taking over", stream="stderr", timeout=60)
            self.leader, self.standby = self.standby, self.start_standby()
            return f"hvdrun pid {pid}"
        if fault == "etcd":
            if self.etcd_down:
                return None
            host = self.rng.choice(self.etcd_hosts)
            self.bed.ctl("crash", host)
            self.etcd_down.append(host)
            return host
        raise AssertionError(fault)

    def end_outages(self):
        """Heals the partitions and restarts the etcd member that are
        OUTAGE old (called as the schedule goes)."""
        now = time.monotonic()
        for at, fault, target in self.done:
            if now - at < OUTAGE:
                continue
            if fault == "partition" and target in self.cut:
                self.bed.ctl("heal", target)
                self.cut.remove(target)
            if fault == "etcd" and target in self.etcd_down:
                self.bed.ctl("etcd", target)
                self.etcd_down.remove(target)


def test_chaos_soak(bed, bed_etcd, hvdrun, tmp_path):
    seed = int(os.environ.get("HVD_SOAK_SEED", "1"))
    minutes = float(os.environ.get("HVD_SOAK_MINUTES", "2"))
    etcd_hosts, endpoints = bed_etcd
    soak = Soak(bed, etcd_hosts, endpoints, hvdrun, tmp_path,
                random.Random(seed), int(minutes + 0.5) or 1)
    s = soak.s
    wait_until(lambda: soak.leader.poll() is not None or
               len({r["slot"] for r in s.records()
                    if r["event"] == "batch"}) >= 4,
               "every worker training", timeout=90)
    assert soak.leader.poll() is None, soak.leader.finish().stderr
    start = time.monotonic()
    for at, fault in schedule(seed, minutes):
        while time.monotonic() < start + at:
            soak.end_outages()
            time.sleep(0.2)
        assert soak.leader.poll() is None, \
            (soak.done, soak.leader.finish().stderr)
        for kind in [*soak.needs(fault), fault]:
            target = soak.do(kind)
            print(f"soak: +{at:.1f} s {kind} {target}", flush=True)
            if target is not None:
                soak.done.append((time.monotonic(), kind, target))
    wait_until(lambda: (soak.end_outages() or True) and not soak.cut
               and not soak.etcd_down, "the last outages to end",
               timeout=OUTAGE + 5)
    result = soak.leader.finish(timeout=int(minutes * 60) + 600)
    soak.standby.proc.kill()
    assert result.returncode == 0, (soak.done, result.stderr)
    size = len(s.done())
    assert size >= 2, soak.done
    check_consistent_finish(s, size)
