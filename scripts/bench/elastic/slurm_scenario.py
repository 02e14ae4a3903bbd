"""Slurm figures on the test bed (scripts/cluster/ with slurm-up.sh): a job
of 6 workers on 3 nodes (two slots each) loses its third node to a crash
(every process of it killed, slurmd included), goes on with 4, then grows
back to 6 on a fourth node. Appends one JSON line to a results file.
Called by run.sh (HVD_BENCH_ONLY=slurm); usable alone, as root:

    slurm_scenario.py OUT_DIR RESULTS.jsonl slurm --repeat 1
    slurm_scenario.py OUT_DIR RESULTS.jsonl ssh --event partition

--event partition takes the third host's link down instead (ctl.sh
partition): nothing is reset, the host just goes silent, as a node that
loses power does on a real network.

slurm: `sbatch --nodes 3 --ntasks-per-node 2 --no-kill` running `hvdrun -np
6 --min-np 4` (hosts from the allocation and hvd-slurm-discover, workers as
srun steps); the growth is `sbatch --job-name hvd-grow-<job>` of one node.
ssh, the anchor: the same job started from this (root) namespace with a
discovery script over the same hosts, workers over ssh; the growth is a
line added to the discovery script's file.

recovery_s: from the crash (or partition) to the last survivor's first step in the world
of 4. grow_s: from the sbatch of the growth job (ssh: the write of the
hosts file) to the first step of a worker on the new node;
grow_from_start_s: from the growth job's start (its batch script's first
line) to that step.
"""

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scenario  # noqa: E402

CLUSTER = os.path.join(scenario.ROOT, "scripts", "cluster")
BED = dict(os.environ,
           HVD_BED_PREFIX=os.environ.get("HVD_BENCH_SLURM_PREFIX", "bslurm"),
           HVD_BED_NET=os.environ.get("HVD_BENCH_SLURM_NET", "10.231.0"))
CRASH_STEP = scenario.KILL_STEP


def cluster(*args, env=BED):
    out = subprocess.run([os.path.join(CLUSTER, args[0]), *args[1:]],
                         env=env, capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        sys.exit(f"scripts/cluster/{' '.join(args)}: {out.stderr}")
    return out.stdout


def slurm(*argv, env):
    out = subprocess.run(argv, env=env, capture_output=True, text=True,
                         timeout=30)
    if out.returncode != 0:
        sys.exit(f"{' '.join(argv)}: {out.stderr}")
    return out.stdout.strip()


def first_steps(logdir, after, size, prefix=""):
    """{slot: time of its first step after `after` in a world of `size`}."""
    firsts = {}
    for r in scenario.read_jsonl(os.path.join(logdir, "*.jsonl")):
        if r["event"] == "step" and r["time"] > after and \
                r["size"] == size and r["slot"].startswith(prefix):
            firsts.setdefault(r["slot"], r["time"])
    return firsts


def wait_for(what, predicate, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.005)
    sys.exit(f"waited {timeout} s for {what}, in vain")


def run(args, workdir, hosts):
    a, b, c, d = hosts
    logdir = os.path.join(workdir, "log")
    os.makedirs(logdir)
    config = scenario.write_config(
        workdir, mode="recovery", log=logdir, compute=scenario.COMPUTE,
        grad_floats=scenario.GRAD_FLOATS, victims=[], kill_step=-1,
        final_size=0, tail_steps=0, max_steps=100000)
    job_args = ["-np", "6", "--min-np", "4", "--discovery-interval", "0.5",
                "--log-level", "info", scenario.PYTHON, scenario.WORKER,
                config]
    env = dict(BED)
    hosts_file = os.path.join(workdir, "hosts.txt")
    proc = job = None
    if args.impl == "slurm":
        env["SLURM_CONF"] = cluster("slurm-up.sh").split("=", 1)[1].strip()
        line = " ".join([scenario.HVDRUN, *job_args])
        job = slurm("sbatch", "--parsable", "--time=10", "--nodes=3",
                    "--ntasks-per-node=2", "--no-kill",
                    f"--nodelist={a},{b},{c}", f"--chdir={workdir}",
                    f"--output={workdir}/job.out", "--wrap", f"exec {line}",
                    env=env)
    else:
        with open(hosts_file, "w") as f:
            f.write(f"{a}:2\n{b}:2\n{c}:2\n")
        discover = os.path.join(workdir, "discover.sh")
        with open(discover, "w") as f:
            f.write(f"#!/bin/sh\ncat {hosts_file}\n")
        os.chmod(discover, 0o755)
        proc = subprocess.Popen(
            [scenario.HVDRUN, "--host-discovery-script", discover, *job_args],
            stdout=open(os.path.join(workdir, "job.out"), "w"),
            stderr=subprocess.STDOUT, cwd=workdir)
    row = {}
    try:
        wait_for(f"a step {CRASH_STEP} on {c}", lambda: [
            r for r in scenario.read_jsonl(os.path.join(logdir, "*.jsonl"))
            if r["event"] == "step" and r["slot"].startswith(f"{c}:") and
            r["step"] >= CRASH_STEP], 180)
        t_crash = time.time()
        cluster("ctl.sh", args.event, c)
        survivors = wait_for("four survivors stepping", lambda: (
            lambda f: len(f) == 4 and f)(first_steps(logdir, t_crash, 4)), 120)
        row["recovery_s"] = round(max(survivors.values()) - t_crash, 3)
        t_grow = time.time()
        started = os.path.join(workdir, "grow.started")
        if args.impl == "slurm":
            grow = slurm("sbatch", "--parsable", "--time=10", "--nodes=1",
                         "--ntasks-per-node=2", f"--nodelist={d}",
                         f"--job-name=hvd-grow-{job}",
                         f"--output={workdir}/grow.out", "--wrap",
                         f"date +%s.%N > {started}; exec sleep 600", env=env)
        else:
            with open(hosts_file + ".tmp", "w") as f:
                f.write(f"{a}:2\n{b}:2\n{d}:2\n")
            os.replace(hosts_file + ".tmp", hosts_file)
        joined = wait_for("a worker on the new node stepping",
                          lambda: first_steps(logdir, t_grow, 6, f"{d}:"), 120)
        row["grow_s"] = round(min(joined.values()) - t_grow, 3)
        if args.impl == "slurm":
            with open(started) as f:
                row["grow_from_start_s"] = round(
                    min(joined.values()) - float(f.read()), 3)
            slurm("scancel", job, grow, env=env)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)
        if args.impl == "slurm":
            cluster("slurm-down.sh", env=env)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("results")
    parser.add_argument("impl", choices=["slurm", "ssh"])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--event", choices=["crash", "partition"],
                        default="crash")
    args = parser.parse_args()
    name = f"slurm-{args.impl}-{args.event}-np6-r{args.repeat}"
    workdir = os.path.join(args.out_dir, name)
    os.makedirs(workdir)
    load = os.getloadavg()[0]
    hosts = cluster("up.sh", "4").split()
    try:
        row = run(args, workdir, hosts)
    finally:
        cluster("down.sh")
    row.update(bench="slurm", impl=args.impl, event=args.event, np=6,
               repeat=args.repeat,
               load_before=round(load, 2), dir=name)
    with open(args.results, "a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps(row))


if __name__ == "__main__":
    main()
