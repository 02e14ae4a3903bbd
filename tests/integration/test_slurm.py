"""hvdrun inside real Slurm allocations on the test bed: slurmctld in this
namespace, one slurmd per network-namespace host (scripts/cluster/
slurm-up.sh). Jobs are submitted with sbatch and waited for with
deadlines; hvdrun runs in the batch step on the first node and starts every
worker as a step (srun) of the allocation."""

import json
import os
import re
import shlex
import subprocess
import time

import pytest

from conftest import CLUSTER, HVDRUN, rank_lines, wait_until
from test_elastic import Scenario, check_consistent_finish

WORKERS = HVDRUN.parents[2] / "tests" / "integration" / "workers"
PYTHON = "/usr/bin/python3"


class Slurm:
    """The bed's Slurm cluster and the commands that talk to it."""

    def __init__(self, bed):
        self.bed = bed
        self.env = dict(bed.env)
        self.dir = bed.dir / "slurm"
        self.crashed = []

    def up(self):
        result = subprocess.run([str(CLUSTER / "slurm-up.sh")],
                                env=self.env, capture_output=True,
                                text=True, timeout=120)
        if result.returncode != 0:
            pytest.fail(f"slurm-up.sh failed:\n{result.stderr}",
                        pytrace=False)
        match = re.fullmatch(r"export SLURM_CONF=(\S+)\n", result.stdout)
        assert match, result.stdout
        self.env["SLURM_CONF"] = match.group(1)

    def crash(self, host):
        """Every process of `host` killed, slurmd and steps included."""
        self.bed.ctl("crash", host)
        self.crashed.append(host)

    def down(self):
        # A crashed node would hold its jobs in COMPLETING until slurmctld
        # declares it down (SlurmdTimeout); an admin does that at once.
        for host in self.crashed:
            self.run("scontrol", "update", f"nodename={host}", "state=down",
                     "reason=crashed by the test")
        subprocess.run([str(CLUSTER / "slurm-down.sh")], env=self.env,
                       capture_output=True, text=True, timeout=120,
                       check=True)

    def run(self, *argv, timeout=30):
        result = subprocess.run(argv, env=self.env, capture_output=True,
                                text=True, timeout=timeout)
        if result.returncode != 0:
            pytest.fail(f"{shlex.join(argv)} failed (exit "
                        f"{result.returncode}):\n{result.stderr}",
                        pytrace=False)
        return result.stdout

    def sbatch(self, tmp_path, command, *options, env=None):
        """Submits `command` (a shell line) as a batch job; returns its id.
        Its output goes to tmp_path/<id>.out."""
        submit_env = dict(self.env, **(env or {}))
        result = subprocess.run(
            ["sbatch", "--parsable", "--time=10", f"--chdir={tmp_path}",
             f"--output={tmp_path}/%j.out", *options, "--wrap",
             command], env=submit_env, capture_output=True, text=True,
            timeout=30)
        if result.returncode != 0:
            pytest.fail(f"sbatch failed:\n{result.stderr}", pytrace=False)
        return result.stdout.strip().split(";")[0]

    def state(self, job):
        out = self.run("squeue", "--noheader", f"--jobs={job}",
                       "--states=all", "--format=%T")
        return out.strip()

    def wait_state(self, job, states, timeout):
        return wait_until(lambda: self.state(job) in states and
                          self.state(job), f"job {job} to be {states}",
                          timeout=timeout, interval=0.2)

    def output(self, tmp_path, job):
        path = tmp_path / f"{job}.out"
        return path.read_text() if path.exists() else ""

    def steps(self, job):
        """sacct's rows of the job's steps: JobID, JobName, NodeList,
        SubmitLine."""
        out = self.run("sacct", "--noheader", "--parsable2", f"--jobs={job}",
                       "--format=JobID,JobName,NodeList,SubmitLine")
        return [line.split("|") for line in out.splitlines()]

    def slurmd_pid(self, host):
        try:
            return int((self.dir / "nodes" / host / "slurmd.pid").read_text())
        except (OSError, ValueError):
            return None


def hvdrun_line(*args):
    return shlex.join([str(HVDRUN), *map(str, args)])


def test_static_job_in_an_allocation_runs_its_workers_as_steps(
        bed, slurm, tmp_path):
    hosts = bed.up(3)
    slurm.up()
    job = slurm.sbatch(tmp_path, hvdrun_line("-np", 6, PYTHON,
                                             WORKERS / "bed_worker.py"),
                       "--nodes=3", "--ntasks-per-node=2")
    slurm.wait_state(job, {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT",
                           "NODE_FAIL"}, timeout=180)
    output = slurm.output(tmp_path, job)
    assert slurm.state(job) == "COMPLETED", output
    keys = set()
    for rank in range(6):
        lines = rank_lines(output, rank)
        assert sum(bool(re.fullmatch(rf"rank {rank}/6: \d+ checks passed", l))
                   for l in lines) == 2, output
        report = next(l[4:] for l in lines if l.startswith("ENV "))
        report = json.loads(report)
        # Hosts and slots came from the allocation, in Slurm's order.
        assert report["host"] == hosts[rank // 2]
        env = report["env"]
        # Each worker is a step of the job, not hvdrun's batch step.
        assert env["SLURM_JOB_ID"] == job
        assert env["SLURM_STEP_ID"] not in (None, "batch")
        # Its own key, given in the sealed launch message and then out of
        # the environment the script sees; the job's secret not at all.
        assert env["HVD_SECRET_KEY"] is None and env["HVD_WORKER_KEY"] is None
        keys.add(report["given_key"])
    # sacct shows the six workers as steps of the job, two per node.
    steps = slurm.steps(job)
    workers = [s for s in steps if s[1] == "hvd-worker"]
    assert len(workers) == 6, steps
    assert sorted(s[2] for s in workers) == sorted(hosts * 2), steps
    # A key for each worker, and none on a step's command line.
    assert len(keys) == 6 and all(keys), keys
    assert not any(key in s[3] for key in keys for s in steps), steps


def batches(scenario, size, host=None):
    """The batch records of workers in a world of `size` (on `host`)."""
    return [r for r in scenario.records() if r["event"] == "batch" and
            r["size"] == size and
            (host is None or r["slot"].startswith(f"{host}:"))]


def test_elastic_job_loses_a_node_and_grows_with_a_companion_job(
        bed, slurm, tmp_path):
    hosts = bed.up(4)
    slurm.up()
    a, b, c, d = hosts
    s = Scenario(tmp_path, "", epochs=20, batches=10, sleep=0.1)
    # --no-kill: Slurm keeps the job when a node fails; hvdrun finds its
    # hosts with hvd-slurm-discover (elastic, no -H).
    job = slurm.sbatch(tmp_path, hvdrun_line("-np", 6, "--min-np", 2,
                                             "--discovery-interval", 0.5,
                                             *s.command()),
                       "--nodes=3", "--ntasks-per-node=2", "--no-kill",
                       f"--nodelist={a},{b},{c}")
    wait_until(lambda: batches(s, 6), "six workers training", timeout=120)
    # Node c loses power: its slurmd, steps and workers are killed.
    slurm.crash(c)
    crashed = time.time()
    wait_until(lambda: [r for r in batches(s, 4) if r["time"] > crashed],
               "four workers training after the crash", timeout=60)
    # One more node, as a companion job of the same user named after it.
    grow = slurm.sbatch(tmp_path, "exec sleep 600", "--nodes=1",
                        "--ntasks-per-node=2", f"--nodelist={d}",
                        f"--job-name=hvd-grow-{job}")
    wait_until(lambda: batches(s, 6, host=d), "the job to grow onto d",
               timeout=90)
    # The workers on d are steps of the companion job...
    wait_until(lambda: [row for row in slurm.steps(grow)
                        if row[1] == "hvd-worker"],
               "sacct to list d's workers as steps of the companion job",
               timeout=20, interval=0.5)
    # ...and its end takes d out of the job again.
    slurm.run("scancel", grow)
    cancelled = time.time()
    wait_until(lambda: [r for r in batches(s, 4) if r["time"] > cancelled],
               "four workers training after the companion's end",
               timeout=60)
    slurm.wait_state(job, {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT",
                           "NODE_FAIL"}, timeout=240)
    output = slurm.output(tmp_path, job)
    assert slurm.state(job) == "COMPLETED", output
    assert f"host {c} blacklisted" in output, output
    # The final model equals a single process doing every step once.
    check_consistent_finish(s, 4)
    assert {r["slot"].split(":")[0] for r in s.done()} == {a, b}


def start_steady_job(slurm, tmp_path):
    """A static job of 6 workers on 3 nodes that trains until stopped;
    returns its id once every rank has stepped."""
    job = slurm.sbatch(tmp_path, hvdrun_line("-np", 6, PYTHON,
                                             WORKERS / "forever_worker.py"),
                       "--nodes=3", "--ntasks-per-node=2")
    wait_until(lambda: slurm.output(tmp_path, job).count("stepping") == 6,
               "every rank stepping", timeout=120)
    return job


def test_a_lost_node_fails_a_static_job_naming_it_and_slurms_view(
        bed, slurm, tmp_path):
    hosts = bed.up(3)
    slurm.up()
    job = start_steady_job(slurm, tmp_path)
    slurm.crash(hosts[2])
    # hvdrun ends the job itself, before Slurm declares the node failed.
    slurm.wait_state(job, {"FAILED", "NODE_FAIL"}, timeout=60)
    output = slurm.output(tmp_path, job)
    # The workers of the lost node are the ones that ignored the stop,
    # and Slurm's state of that node (with its reason, once it has one) is
    # in hvdrun's last words.
    assert re.search(rf"still running .*\(ranks 4, 5 on host {hosts[2]}\)",
                     output), output
    assert re.search(rf"Slurm's view of node {hosts[2]}: \S+", output), \
        output
    assert re.search(rf"workers on {hosts[2]} did not stop when told .*; "
                     r"job failed", output), output


def test_scancel_leaves_no_process_of_the_job_on_any_host(bed, slurm,
                                                          tmp_path):
    hosts = bed.up(3)
    slurm.up()
    job = start_steady_job(slurm, tmp_path)
    slurm.run("scancel", job)
    cancelled = time.monotonic()

    def left():
        return {h: [p for p in bed.job_pids(h) if p != slurm.slurmd_pid(h)]
                for h in hosts}
    wait_until(lambda: not any(left().values()) or None,
               "no process of the job left", timeout=10)
    assert time.monotonic() - cancelled < 10
    assert slurm.state(job) == "CANCELLED"


def test_outside_an_allocation_nothing_changes(hvdrun, tmp_path):
    """Without SLURM_JOB_ID hvdrun starts local workers itself, not
    through srun (which is not even on PATH here)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM")}
    env["PATH"] = "/usr/bin:/bin"
    result = hvdrun(["-np", "2", PYTHON, "-c",
                     "import os, hvd; hvd.init(); "
                     "print('step', os.environ.get('SLURM_STEP_ID'))"],
                    env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert [rank_lines(result.stdout, r) for r in (0, 1)] == \
        [["step None"]] * 2
    result = hvdrun(["--launcher", "slurm", "-np", "2", PYTHON, "-c", "0"],
                    env=env, cwd=tmp_path)
    assert result.returncode != 0
    assert "needs a Slurm allocation" in result.stderr
