"""One elastic scenario on the multi-host test bed (scripts/cluster/): a
job of N workers on N/2 hosts of two slots, started over real ssh, loses
its last host to an event, and the survivors go on. Appends one JSON line
to a results file. Called by run.sh (HVD_BENCH_ONLY=bed); usable alone, as
root:

    bed_scenario.py OUT_DIR RESULTS.jsonl hvd --np 8 --event partition
    bed_scenario.py OUT_DIR RESULTS.jsonl torchrun --np 8 --event crash

Events, at step KILL_STEP of the last host's first worker:
  kill       that worker SIGKILLs itself (hvd: its host is blacklisted, so
             both of its workers leave; torchrun: every worker restarts)
  crash      every process of the host is killed (scripts/cluster/ctl.sh
             crash), as a machine that loses power: its sockets are reset
  partition  the host's link goes down (ctl.sh partition): nothing is
             reset, the host just goes silent

With --rdzv etcd (torchrun only) the agents meet in a 3-member etcd on
three more bed hosts (its v2 API on, which torch's etcd rendezvous speaks
through Debian's python3-etcd) instead of the c10d store on the first
host; with --lose first the first host is the one lost (for hvd's side of
that comparison, the leader's host that also runs workers, see
scripts/bench/takeover/run.sh ... beside).

Recovery = from the event to the last survivor's first step in the world
without the lost host. hvd: `hvdrun -H h1:2,... --min-np N-2` from this
(root) namespace, which runs no worker. torchrun: one agent per host,
started over ssh (`torchrun --nnodes MIN:N/2 --nproc_per_node 2` with the
c10d rendezvous on the first host), --monitor-interval 0.1; its workers'
Gloo timeout is 30 s (init_process_group's `timeout`; torch's default for
Gloo is 30 min), since a partition is seen only through it.
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
BED = dict(HVD_BED_PREFIX=os.environ.get("HVD_BENCH_BED_PREFIX", "bench"),
           HVD_BED_NET=os.environ.get("HVD_BENCH_BED_NET", "10.230.0"))
TORCH_GLOO_TIMEOUT = 30


def bed(*args):
    out = subprocess.run([os.path.join(CLUSTER, args[0]), *args[1:]],
                         env=dict(os.environ, **BED), capture_output=True,
                         text=True, timeout=60)
    if out.returncode != 0:
        sys.exit(f"scripts/cluster/{' '.join(args)}: {out.stderr}")
    return out.stdout.split()


def wait_for_step(logdir, slot_prefix, step, timeout):
    """Time at which a worker whose log name starts with slot_prefix logged
    `step` (polled every 5 ms); exits if it does not within timeout."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        for rec in scenario.read_jsonl(os.path.join(logdir, "*.jsonl")):
            name = rec.get("slot", f"rank{rec.get('rank')}")
            if name.startswith(slot_prefix) and rec["event"] == "step" and \
                    rec.get("step", 0) >= step:
                return
        time.sleep(0.005)
    sys.exit(f"no step {step} from {slot_prefix} within {timeout} s")


def act(event, host):
    """Carries out a crash or partition now; returns its time."""
    t = time.time()
    bed("ctl.sh", event, host)
    return t


def run_hvd(args, workdir, hosts):
    n = args.np
    victim = hosts[-1]
    logdir = os.path.join(workdir, "log")
    os.makedirs(logdir)
    config = scenario.write_config(
        workdir, mode="recovery", log=logdir, compute=scenario.COMPUTE,
        grad_floats=scenario.GRAD_FLOATS,
        victims=[f"{victim}:0"] if args.event == "kill" else [],
        kill_step=scenario.KILL_STEP, final_size=n - 2,
        tail_steps=scenario.TAIL_STEPS, max_steps=scenario.KILL_STEP + 400)
    cmd = [scenario.HVDRUN, "-np", str(n), "--min-np", str(n - 2), "-H",
           ",".join(f"{h}:2" for h in hosts), "--log-level", "info",
           "--elastic-timeout", "60", scenario.PYTHON, scenario.WORKER,
           config]
    t_event = []

    def trigger():
        if args.event != "kill":
            wait_for_step(logdir, f"{victim}:0", scenario.KILL_STEP, 120)
            t_event.append(act(args.event, victim))

    code, seconds = run_with(cmd, workdir, trigger)
    recs = scenario.read_jsonl(os.path.join(logdir, "*.jsonl"))
    if args.event == "kill":
        t_event = [r["time"] for r in recs if r["event"] == "kill"][:1]
    row = dict(exit_code=code, wall_s=round(seconds, 2))
    if code != 0 or not t_event:
        row["error"] = f"hvdrun exit {code}"
        return row
    t0 = t_event[0]
    firsts = {}
    for r in recs:
        if r["event"] == "step" and r["time"] > t0 and r["size"] == n - 2:
            firsts.setdefault(r["slot"], r["time"])
    if len(firsts) != n - 2:
        row["error"] = f"{len(firsts)} survivors stepped, expected {n - 2}"
        return row
    lines = scenario.stderr_lines(workdir)
    row.update(
        recovery_s=round(max(firsts.values()) - t0, 4),
        phases=dict(
            driver_noticed=scenario.rel(scenario.first(
                lines, r"exited|killed by|liveness|unreachable|lost", t0),
                t0),
            generation_published=scenario.rel(scenario.first(
                lines, r"hvdrun: generation [2-9]", t0), t0),
            first_step=scenario.rel(max(firsts.values()), t0)))
    return row


def run_with(cmd, workdir, trigger):
    """run_logged(cmd) while `trigger` runs beside it."""
    import threading
    thread = threading.Thread(target=trigger, daemon=True)
    thread.start()
    code, seconds = scenario.run_logged(cmd, workdir, timeout=180)
    thread.join(timeout=1)
    return code, seconds


def rdzv_flags(args, hosts):
    """torchrun's rendezvous flags: c10d on the first worker host, or the
    etcd that main() started (its first member)."""
    if args.rdzv == "etcd":
        return (f"--rdzv_backend etcd --rdzv_endpoint {args.etcd_endpoint} "
                f"--rdzv_id bench{os.getpid()} "
                f"--rdzv_conf last_call_timeout=1")
    return (f"--rdzv_backend c10d --rdzv_endpoint {hosts[0]}:29400 "
            f"--rdzv_id bench --rdzv_conf last_call_timeout=1")


def run_torchrun(args, workdir, hosts):
    n = args.np
    victim = hosts[0] if args.lose == "first" else hosts[-1]
    logdir = os.path.join(workdir, "log")
    os.makedirs(logdir)
    worker = os.path.join(scenario.HERE, "torchrun_worker.py")
    nodes = len(hosts)
    # The victim is the first worker of the last host: its rank is
    # n - 2 once the rendezvous ordered the nodes; the worker logs its
    # host, so the trigger matches on the host name. --victim-rank -1: no
    # worker kills itself by rank (the worker's default is rank 1, which
    # made a crash or partition run a kill of rank 1 as well).
    agent = (f"cd {workdir} && GLOO_SOCKET_IFNAME=eth0 OMP_NUM_THREADS=1 "
             f"exec {scenario.PYTHON} -m torch.distributed.run "
             f"--nnodes {nodes - 1}:{nodes} --nproc_per_node 2 "
             f"{rdzv_flags(args, hosts)} "
             f"--max_restarts 3 --monitor_interval 0.1 "
             f"--log_dir {workdir}/torchrun-logs -r 1 -t 2 {worker} "
             f"--log {logdir} --compute {scenario.COMPUTE} "
             f"--grad-floats {scenario.GRAD_FLOATS} "
             f"--kill-step {scenario.KILL_STEP} "
             f"--tail-steps {scenario.TAIL_STEPS} "
             f"--victim-host {victim if args.event == 'kill' else '-'} "
             f"--victim-rank -1 "
             f"--timeout {TORCH_GLOO_TIMEOUT}")
    t_event = []

    def trigger():
        if args.event != "kill":
            wait_for_step(logdir, f"{victim}:", scenario.KILL_STEP, 120)
            t_event.append(act(args.event, victim))

    import threading
    thread = threading.Thread(target=trigger, daemon=True)
    thread.start()
    started = time.time()
    agents = []
    for h in hosts:
        err = open(os.path.join(workdir, f"agent.{h}.txt"), "w")
        # hvdrun's ssh keep-alives (ssh.h): without them the ssh to a
        # partitioned host's agent would wait out the run's whole deadline.
        agents.append(subprocess.Popen(
            ["ssh", "-o", "ServerAliveInterval=1", "-o",
             "ServerAliveCountMax=2", h, agent],
            stdout=err, stderr=subprocess.STDOUT))
    codes = []
    for h, proc in zip(hosts, agents):
        try:
            codes.append(proc.wait(timeout=max(1, 240 - (time.time() -
                                                         started))))
        except subprocess.TimeoutExpired:
            proc.kill()
            codes.append(f"timeout ({h})")
    thread.join(timeout=1)
    recs = scenario.read_jsonl(os.path.join(logdir, "*.jsonl"))
    if args.event == "kill":
        t_event = [r["time"] for r in recs if r["event"] == "kill"][:1]
    row = dict(exit_codes=[str(c) for c in codes],
               wall_s=round(time.time() - started, 2))
    if not t_event:
        row["error"] = "the event did not happen"
        return row
    t0 = t_event[0]
    # torchrun restarts every worker; after a kill the host stays, so the
    # new world is as large as the old.
    size = n if args.event == "kill" else n - 2
    firsts = {}
    for r in recs:
        if r["event"] == "step" and r["time"] > t0 and r["attempt"] > 0 \
                and r.get("size") == size:
            firsts.setdefault(r["rank"], r["time"])
    if len(firsts) != size:
        row["error"] = f"{len(firsts)} workers stepped again, expected {size}"
        return row
    row.update(recovery_s=round(max(firsts.values()) - t0, 4))
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("results")
    parser.add_argument("impl", choices=["hvd", "torchrun"])
    parser.add_argument("--np", type=int, required=True)
    parser.add_argument("--event", required=True,
                        choices=["kill", "crash", "partition"])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--rdzv", choices=["c10d", "etcd"], default="c10d",
                        help="torchrun's rendezvous backend")
    parser.add_argument("--lose", choices=["last", "first"], default="last",
                        help="which worker host the event takes")
    args = parser.parse_args()
    if args.np % 2 or args.np < 4:
        sys.exit("--np must be even and at least 4 (hosts of two slots)")
    if args.impl == "hvd" and (args.rdzv, args.lose) != ("c10d", "last"):
        sys.exit("--rdzv and --lose are torchrun's (hvd's leader host: "
                 "scripts/bench/takeover/run.sh N beside)")
    name = f"bed-{args.impl}-{args.event}-np{args.np}-r{args.repeat}"
    if (args.rdzv, args.lose) != ("c10d", "last"):
        name += f"-{args.rdzv}-{args.lose}"
    workdir = os.path.join(args.out_dir, name)
    os.makedirs(workdir)
    load = os.getloadavg()[0]
    etcd_hosts = 3 if args.rdzv == "etcd" else 0
    hosts = bed("up.sh", str(args.np // 2 + etcd_hosts))
    if etcd_hosts:
        members, hosts = hosts[-etcd_hosts:], hosts[:-etcd_hosts]
        endpoints = subprocess.run(
            [os.path.join(CLUSTER, "etcd-up.sh"), *members],
            env=dict(os.environ, HVD_ETCD_ENABLE_V2="1", **BED),
            capture_output=True, text=True, timeout=120)
        if endpoints.returncode != 0:
            bed("down.sh")
            sys.exit(f"etcd-up.sh: {endpoints.stderr}")
        first = endpoints.stdout.split("=", 1)[1].split(",")[0]
        args.etcd_endpoint = first.strip().removeprefix("http://")
    try:
        run = run_hvd if args.impl == "hvd" else run_torchrun
        row = run(args, workdir, hosts)
    finally:
        bed("down.sh")
    row.update(rdzv=args.rdzv, lose=args.lose)
    row.update(bench="bed", impl=args.impl, event=args.event, np=args.np,
               repeat=args.repeat, load_before=round(load, 2), dir=name)
    with open(args.results, "a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps({k: v for k, v in row.items() if k != "phases"}))
    if "error" in row:
        sys.exit(1)


if __name__ == "__main__":
    main()
