"""The leader's machine lost mid-training (issue 32): an elastic job of 8
workers on 4 bed hosts over real ssh, the rendezvous in a 3-member etcd on
three other hosts, the leading hvdrun on a host of its own and a
--standby on another. The leader's host crashes (scripts/cluster/ctl.sh
crash: every process of it killed, its link gone). Per repeat, one JSON
line: when the standby had adopted every worker after the crash, the
longest pause between two steps of rank 0 around the crash against its
median step, the resets (none expected) and whether the final model equals
a fault-free run's. With `beside`, the leader runs on one of the four
worker hosts instead (its 2 workers die with it; the others go on from the
last commit): the line says when the last survivor stepped again in the
world without that host. Called by run.sh, as root; usable alone:

    takeover.py OUT_DIR RESULTS.jsonl REPEAT [apart|beside]
"""

import glob
import json
import os
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))))
CLUSTER = os.path.join(ROOT, "scripts", "cluster")
HVDRUN = os.path.join(ROOT, "build", "launcher", "hvdrun")
WORKER = os.path.join(ROOT, "tests", "integration", "workers",
                      "elastic_worker.py")
ENV = dict(os.environ,
           HVD_BED_PREFIX=os.environ.get("HVD_BENCH_BED_PREFIX", "tkb"),
           HVD_BED_NET=os.environ.get("HVD_BENCH_BED_NET", "10.232.0"))


def cluster(*args):
    out = subprocess.run([os.path.join(CLUSTER, args[0]), *args[1:]],
                         env=ENV, capture_output=True, text=True, timeout=90)
    if out.returncode != 0:
        sys.exit(f"scripts/cluster/{' '.join(args)}: {out.stderr}")
    return out.stdout.split()


def records(log):
    out = []
    for path in glob.glob(os.path.join(log, "*.jsonl")):
        with open(path) as f:
            out.extend(json.loads(line) for line in f if line.endswith("\n"))
    return sorted(out, key=lambda r: r["time"])


def wait(predicate, what, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        got = predicate()
        if got:
            return got
        time.sleep(0.05)
    sys.exit(f"{what}: not within {timeout} s")


def appeared(path, text):
    """Whether `text` has appeared in file `path`."""
    with open(path, errors="replace") as f:
        return text in f.read()


def succeeded_after(stderr):
    """The resets hvdrun counted ("job succeeded after N resets"); -1 if
    the job did not succeed."""
    with open(stderr, errors="replace") as f:
        found = re.search(r"job succeeded after (\d+) reset", f.read())
    return int(found.group(1)) if found else -1


def main():
    out_dir, results, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3])
    beside = (sys.argv[4] if len(sys.argv) > 4 else "apart") == "beside"
    name = "beside" if beside else "takeover"
    run = os.path.join(out_dir, f"{name}-r{repeat}")
    os.makedirs(run)
    log = os.path.join(run, "log")
    os.makedirs(log)
    hosts_file = os.path.join(run, "hosts.txt")
    open(hosts_file, "w").close()
    scenario = os.path.join(run, "scenario.json")
    with open(scenario, "w") as f:
        json.dump(dict(log=log, hosts_file=hosts_file, epochs=6, batches=50,
                       sleep=0.05), f)
    endpoints = os.environ["HVD_ETCD_ENDPOINTS"]
    workers = os.environ["HVD_BENCH_WORKER_HOSTS"].split()
    leader_host, standby_host = cluster("ctl.sh", "add") + \
        cluster("ctl.sh", "add")
    if beside:  # 8 workers on 4 hosts still, the leader's one of them
        workers = [leader_host, *workers[:3]]
    job = f"bench{repeat}-{os.getpid()}"
    args = ["--rendezvous-backend", "etcd", "--rendezvous-endpoint",
            endpoints, "--job-id", job, "--job-secret-file",
            os.path.join(run, "job.secret"), "--adopt-grace-seconds", "60",
            "-np", "8", "--min-np", "4",
            "-H", ",".join(f"{h}:2" for h in workers),
            "/usr/bin/python3", WORKER, scenario]
    leader_err = os.path.join(run, "leader.stderr")
    standby_err = os.path.join(run, "standby.stderr")
    leader = subprocess.Popen(["ssh", leader_host, HVDRUN, *args],
                              stdout=subprocess.DEVNULL,
                              stderr=open(leader_err, "w"), cwd=run)
    wait(lambda: len({r["slot"] for r in records(log)
                      if r["event"] == "batch"}) == 8,
         "every worker training", 120)
    standby = subprocess.Popen(["ssh", standby_host, HVDRUN, "--standby",
                                *args], stdout=subprocess.DEVNULL,
                               stderr=open(standby_err, "w"), cwd=run)
    wait(lambda: appeared(standby_err, "hvdrun: standby for job"),
         "the standby standing by", 60)
    time.sleep(2)  # steady steps before the crash, for the median
    crashed = time.time()
    cluster("ctl.sh", "crash", leader_host)
    wait(lambda: appeared(standby_err, f"hvdrun: took job '{job}' over"),
         "the standby taking over", 60)
    adopted = time.time()
    code = standby.wait(timeout=300)
    leader.wait(timeout=30)
    recs = records(log)
    steps = [r["time"] for r in recs
             if r["event"] == "batch" and r["rank"] == 0]
    gaps = [b - a for a, b in zip(steps, steps[1:])]
    around = [b - a for a, b in zip(steps, steps[1:])
              if a < adopted + 2 and b > crashed]
    done = [r for r in recs if r["event"] == "done"]
    if beside:
        # The survivors' first step after their reset into the world
        # without the leader's host; the last of them.
        firsts = []
        for slot in {r["slot"] for r in recs
                     if not r["slot"].startswith(leader_host + ":")}:
            mine = [r for r in recs if r["slot"] == slot]
            reset = min(r["time"] for r in mine
                        if r["event"] == "reset" and r["time"] > crashed)
            firsts.append(min(r["time"] for r in mine
                              if r["event"] == "batch" and r["time"] > reset))
        line = dict(
            scenario="beside", np=8, repeat=repeat, exit_code=code,
            adopted_after_s=round(adopted - crashed, 3),
            survivors_stepping_after_s=round(max(firsts) - crashed, 3),
            median_step_s=round(statistics.median(gaps), 4),
            resets=succeeded_after(standby_err),
            exact=len(done) == 6 and
            all(r["w"] == r["reference"] for r in done))
        with open(results, "a") as f:
            f.write(json.dumps(line) + "\n")
        print(json.dumps(line))
        return
    line = dict(
        scenario="takeover", np=8, repeat=repeat, exit_code=code,
        adopted_after_s=round(adopted - crashed, 3),
        longest_step_gap_around_crash_s=round(max(around), 3),
        median_step_s=round(statistics.median(gaps), 4),
        resets=len([r for r in recs if r["event"] == "reset"]),
        exact=len(done) == 8 and all(r["w"] == r["reference"] for r in done))
    with open(results, "a") as f:
        f.write(json.dumps(line) + "\n")
    print(json.dumps(line))


if __name__ == "__main__":
    main()
