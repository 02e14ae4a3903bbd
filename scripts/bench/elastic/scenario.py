"""Runs one elastic benchmark scenario and appends its result (one JSON
line) to a results file. Called by run.sh; usable alone:

    scenario.py OUT_DIR RESULTS.jsonl recovery --np 4 [--variant host]
    scenario.py OUT_DIR RESULTS.jsonl scaleup --np 4
    scenario.py OUT_DIR RESULTS.jsonl commit --np 4 --state torch
    scenario.py OUT_DIR RESULTS.jsonl rerendezvous --np 4 --impl hvd
    scenario.py OUT_DIR RESULTS.jsonl torchrun --np 4 [--monitor-interval 5]

Each scenario gets its own folder under OUT_DIR with the workers' JSON-lines
logs and hvdrun's (or torchrun's) stderr, every line prefixed with the
wall-clock time at which it arrived (`<time.time()> <line>`). The metrics
are computed from those files only: worker-side time.time() stamps, the
driver's lines as they arrived, and the spdlog stamps inside worker lines.

Hosts are local addresses, each a distinct host for hvdrun: localhost,
127.0.0.1, 127.0.0.2, ...
"""

import argparse
import datetime
import glob
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
HVDRUN = os.path.join(ROOT, "build", "launcher", "hvdrun")
PYTHON = "/usr/bin/python3"
WORKER = os.path.join(HERE, "elastic_worker.py")

# Step shape of the recovery and scale-up runs: 20 ms of "compute" (a
# sleep, so 8 workers on 2 cores still step in time) and a 256 KiB
# allreduce.
COMPUTE = 0.02
GRAD_FLOATS = 65536
KILL_STEP = 40
TAIL_STEPS = 15


def host(i):
    return "localhost" if i == 0 else f"127.0.0.{i}"


def free_ports(n):
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def run_logged(cmd, workdir, timeout, env=None):
    """Runs cmd; its stderr goes to workdir/stderr.txt with arrival times,
    stdout to workdir/stdout.txt. Returns (exit code, seconds)."""
    err_path = os.path.join(workdir, "stderr.txt")
    out = open(os.path.join(workdir, "stdout.txt"), "wb")
    started = time.time()
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE,
                            env=env, cwd=workdir)

    def pump():
        with open(err_path, "w") as err:
            for raw in proc.stderr:
                line = raw.decode(errors="replace").rstrip("\n")
                err.write(f"{time.time():.6f} {line}\n")
                err.flush()

    thread = threading.Thread(target=pump, daemon=True)
    thread.start()
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.terminate()
        try:
            code = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
        code = f"timeout after {timeout} s"
    thread.join(timeout=10)
    out.close()
    return code, time.time() - started


def read_jsonl(pattern):
    records = []
    for path in glob.glob(pattern):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    try:
                        records.append(json.loads(line))
                    except json.JSONDecodeError:
                        pass  # a line cut short by SIGKILL
    return sorted(records, key=lambda r: r.get("time", r.get("t0", 0)))


SPDLOG_STAMP = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3})\]")


def stderr_lines(workdir):
    """[(arrival time, spdlog time or None, text)] of the captured stderr."""
    lines = []
    path = os.path.join(workdir, "stderr.txt")
    if not os.path.exists(path):
        return lines
    with open(path) as f:
        for line in f:
            stamp, _, text = line.rstrip("\n").partition(" ")
            m = SPDLOG_STAMP.search(text)
            inner = None
            if m:
                inner = datetime.datetime.strptime(
                    m.group(1), "%Y-%m-%d %H:%M:%S.%f").timestamp()
            lines.append((float(stamp), inner, text))
    return lines


def first(lines, pattern, after=0.0, use_inner=False):
    rx = re.compile(pattern)
    for arrival, inner, text in lines:
        t = inner if use_inner and inner is not None else arrival
        if t >= after - 0.002 and rx.search(text):
            return t
    return None


def all_times(lines, pattern, after=0.0, use_inner=False):
    rx = re.compile(pattern)
    out = []
    for arrival, inner, text in lines:
        t = inner if use_inner and inner is not None else arrival
        if t >= after - 0.002 and rx.search(text):
            out.append(t)
    return out


def rel(t, zero):
    return None if t is None else round(t - zero, 4)


def median_gap(times):
    gaps = [b - a for a, b in zip(times, times[1:])]
    return statistics.median(gaps) if gaps else None


def by_slot(records):
    out = {}
    for r in records:
        out.setdefault(r["slot"], []).append(r)
    return out


def write_config(workdir, **config):
    path = os.path.join(workdir, "config.json")
    with open(path, "w") as f:
        json.dump(config, f)
    return path


# --- 1. recovery --------------------------------------------------------


def recovery(args, workdir):
    """A worker (variant 'worker': N hosts of one slot, the victim is rank
    1) or a whole host (variant 'host': hosts of two slots, both workers of
    the second host, ranks 2 and 3) SIGKILL themselves right after the
    commit of step KILL_STEP. hvdrun runs with a fixed host list and
    --min-np, so the job goes on with the survivors."""
    n = args.np
    if args.variant == "worker":
        hosts = [f"{host(i)}:1" for i in range(n)]
        victims = ["127.0.0.1:0"]
    else:
        if n % 2 or n < 4:
            sys.exit("recovery --variant host needs an even --np >= 4")
        hosts = [f"{host(i)}:2" for i in range(n // 2)]
        victims = ["127.0.0.1:0", "127.0.0.1:1"]
    final = n - len(victims)
    logdir = os.path.join(workdir, "log")
    os.makedirs(logdir)
    config = write_config(workdir, mode="recovery", log=logdir,
                          compute=COMPUTE, grad_floats=GRAD_FLOATS,
                          victims=victims, kill_step=KILL_STEP,
                          final_size=final, tail_steps=TAIL_STEPS,
                          max_steps=KILL_STEP + 400)
    # With --etcd the workers' Gloo contexts meet in etcd (issue 32).
    etcd = (["--rendezvous-backend", "etcd", "--rendezvous-endpoint",
             args.etcd] if args.etcd else [])
    cmd = [HVDRUN, "-np", str(n), "--min-np", str(final), "-H",
           ",".join(hosts), "--log-level", "info", "--elastic-timeout", "60",
           *etcd, PYTHON, WORKER, config]
    code, seconds = run_logged(cmd, workdir, timeout=120)
    variant = args.variant + ("-etcd" if args.etcd else "")
    row = dict(bench="recovery", variant=variant, np=n, survivors=final,
               exit_code=code, wall_s=round(seconds, 2))
    recs = read_jsonl(os.path.join(logdir, "*.jsonl"))
    kills = [r["time"] for r in recs if r["event"] == "kill"]
    if code != 0 or not kills:
        row["error"] = f"hvdrun exit {code}, {len(kills)} kill records"
        return row
    kill = min(kills)
    slots = by_slot(recs)
    survivors = {s: rs for s, rs in slots.items() if s not in victims}
    lines = stderr_lines(workdir)
    steady = [r["time"] for r in slots["localhost:0"]
              if r["event"] == "step" and r["time"] < kill][5:]
    phases = {}

    def each(event, pick=max):
        ts = []
        for rs in survivors.values():
            t = next((r["time"] for r in rs
                      if r["event"] == event and r["time"] >= kill), None)
            if t is None:
                return None
            ts.append(t)
        return pick(ts)

    first_steps = []
    for rs in survivors.values():
        t = next((r["time"] for r in rs if r["event"] == "step" and
                  r["time"] > kill and r["size"] == final), None)
        first_steps.append(t)
    if None in first_steps:
        row["error"] = "a survivor logged no step in the new generation"
        return row
    phases["error_first"] = rel(each("error", min), kill)
    phases["error_last"] = rel(each("error"), kill)
    phases["driver_saw_exit"] = rel(first(lines, r"killed by signal", kill),
                                    kill)
    phases["generation_published"] = rel(
        first(lines, r"hvdrun: generation [2-9]", kill), kill)
    phases["shutdown_done"] = rel(each("shutdown_done"), kill)
    joined = all_times(lines, r"joined generation [2-9]", kill,
                       use_inner=True)
    phases["joined_last"] = rel(max(joined) if joined else None, kill)
    phases["init_done"] = rel(each("init_done"), kill)
    phases["sync_done"] = rel(each("sync_done"), kill)
    phases["first_step"] = rel(max(first_steps), kill)
    row.update(
        recovery_s=round(max(first_steps) - kill, 4),
        recovery_first_s=round(min(first_steps) - kill, 4),
        step_s=round(median_gap(steady), 4),
        phases=phases)
    row["overhead_s"] = round(row["recovery_s"] - row["step_s"], 4)
    # The reset as seen in one survivor: shutdown start -> init returned.
    resets = []
    for rs in survivors.values():
        s = next((r["time"] for r in rs if r["event"] == "shutdown_start"
                  and r["time"] >= kill), None)
        e = next((r["time"] for r in rs if r["event"] == "init_done"
                  and r["time"] >= kill), None)
        if s is not None and e is not None:
            resets.append(e - s)
    row["reset_s"] = round(max(resets), 4) if resets else None
    # hvd.init()'s own share: from the later of (this survivor's shutdown
    # returned, hvdrun published the generation) to init returned: the
    # check-in answer and the Gloo connect.
    gen = first(lines, r"hvdrun: generation [2-9]", kill)
    connects = []
    for rs in survivors.values():
        s = next((r["time"] for r in rs if r["event"] == "shutdown_done"
                  and r["time"] >= kill), None)
        e = next((r["time"] for r in rs if r["event"] == "init_done"
                  and r["time"] >= kill), None)
        if s is not None and e is not None and gen is not None:
            connects.append(e - max(s, gen))
    row["connect_s"] = round(max(connects), 4) if connects else None
    return row


# --- 2. scale-up --------------------------------------------------------


def scaleup(args, workdir):
    """Discovery lists hosts for N - k slots; at step KILL_STEP rank 0
    rewrites the hosts file with one more host (k slots: one slot at
    N <= 4, two at N = 8). hvdrun --discovery-interval 0.3."""
    n = args.np
    per_host = 2 if n >= 8 else 1
    before = [f"{host(i)}:{per_host}" for i in range(n // per_host - 1)]
    after = before + [f"{host(n // per_host - 1)}:{per_host}"]
    start = n - per_host
    logdir = os.path.join(workdir, "log")
    os.makedirs(logdir)
    hosts_file = os.path.join(workdir, "hosts.txt")
    with open(hosts_file, "w") as f:
        f.write("\n".join(before) + "\n")
    discover = os.path.join(workdir, "discover.sh")
    with open(discover, "w") as f:
        f.write(f"#!/bin/sh\ncat {hosts_file}\n")
    os.chmod(discover, 0o755)
    config = write_config(workdir, mode="scaleup", log=logdir,
                          compute=COMPUTE, grad_floats=GRAD_FLOATS,
                          hosts_file=hosts_file,
                          hosts_after="\n".join(after) + "\n",
                          join_step=KILL_STEP, final_size=n,
                          joiner_imports_torch=not args.no_torch_import,
                          tail_steps=TAIL_STEPS, max_steps=KILL_STEP + 600)
    cmd = [HVDRUN, "-np", str(start), "--min-np", "1", "--max-np", str(n),
           "--host-discovery-script", discover, "--discovery-interval",
           str(args.discovery_interval), "--log-level", "info",
           "--elastic-timeout", "60", PYTHON, WORKER, config]
    code, seconds = run_logged(cmd, workdir, timeout=120)
    row = dict(bench="scaleup", np=n, start_np=start,
               joiner_imports_torch=not args.no_torch_import,
               discovery_interval=args.discovery_interval, exit_code=code,
               wall_s=round(seconds, 2))
    recs = read_jsonl(os.path.join(logdir, "*.jsonl"))
    written = [r["time"] for r in recs if r["event"] == "hosts_written"]
    if code != 0 or not written:
        row["error"] = f"hvdrun exit {code}, {len(written)} hosts_written"
        return row
    w = written[0]
    slots = by_slot(recs)
    new = {s: rs for s, rs in slots.items()
           if rs[0]["event"] == "proc_start" and rs[0]["time"] > w}
    old = {s: rs for s, rs in slots.items() if s not in new}
    if len(new) != per_host:
        row["error"] = f"{len(new)} new workers, expected {per_host}"
        return row

    def pick(group, event, fn=max, size=None):
        ts = []
        for rs in group.values():
            t = next((r["time"] for r in rs if r["event"] == event and
                      r["time"] >= w and (size is None or r["size"] == size)),
                     None)
            if t is None:
                return None
            ts.append(t)
        return fn(ts)

    lines = stderr_lines(workdir)
    new_step = pick(new, "step")
    if new_step is None:
        row["error"] = "the new worker logged no step"
        return row
    phases = dict(
        generation_published=rel(
            first(lines, r"hvdrun: generation [2-9]", w), w),
        new_pid=rel(first(lines, r"is pid", w, use_inner=True), w),
        new_proc_start=rel(pick(new, "proc_start"), w),
        new_imported=rel(pick(new, "imported"), w),
        old_notified=rel(first(lines, r"hosts updated", w, use_inner=True),
                         w),
        old_shutdown_start=rel(pick(old, "shutdown_start"), w),
        old_shutdown_done=rel(pick(old, "shutdown_done"), w),
        init_done=rel(pick(slots, "init_done", size=n), w),
        sync_done=rel(pick(slots, "sync_done"), w),
        new_first_step=rel(new_step, w),
        old_first_step=rel(pick(old, "step", size=n), w))
    # Pause: the longest gap between two consecutive steps of a running
    # worker from the write to its first step in the new generation,
    # minus its normal step time (median gap before the write).
    pauses, normals = [], []
    for rs in old.values():
        steps = [r["time"] for r in rs if r["event"] == "step"]
        steady = [t for t in steps if t < w][5:]
        first_new = next((r["time"] for r in rs if r["event"] == "step"
                          and r["size"] == n), None)
        window = [t for t in steps if t < w][-1:] + \
            [t for t in steps if w <= t <= (first_new or w)]
        gaps = [b - a for a, b in zip(window, window[1:])]
        normal = median_gap(steady)
        if gaps and normal is not None:
            pauses.append(max(gaps) - normal)
            normals.append(normal)
    row.update(join_s=round(new_step - w, 4),
               pause_s=round(max(pauses), 4) if pauses else None,
               step_s=round(statistics.median(normals), 4) if normals
               else None, phases=phases)
    return row


# --- 3. re-rendezvous ---------------------------------------------------


def rerendezvous(args, workdir):
    n = args.np
    logdir = os.path.join(workdir, "log")
    os.makedirs(logdir)
    ports = free_ports(args.rounds + 2)
    cmd = [HVDRUN, "-np", str(n), PYTHON,
           os.path.join(HERE, "rerendezvous_worker.py"), "--impl", args.impl,
           "--rounds", str(args.rounds), "--log", logdir,
           "--store-port", str(ports[0]),
           "--ports", ",".join(map(str, ports[1:]))]
    env = dict(os.environ, GLOO_SOCKET_IFNAME="lo")
    code, seconds = run_logged(cmd, workdir, timeout=180, env=env)
    row = dict(bench="rerendezvous", impl=args.impl, np=n, exit_code=code,
               wall_s=round(seconds, 2))
    recs = [r for r in read_jsonl(os.path.join(logdir, "*.jsonl"))
            if "round" in r]
    rounds = {}
    for r in recs:
        rounds.setdefault(r["round"], []).append(r)
    times = [max(x["t1"] for x in rs) - min(x["t0"] for x in rs)
             for _, rs in sorted(rounds.items()) if len(rs) == n]
    if code != 0 or len(times) != args.rounds:
        row["error"] = f"exit {code}, {len(times)} complete rounds"
        return row
    # The two halves, per round the slowest rank's: shutdown/destroy and
    # init (from that rank's own shutdown end).
    downs = [max(x["tm"] - x["t0"] for x in rs)
             for _, rs in sorted(rounds.items())]
    ups = [max(x["t1"] - x["tm"] for x in rs)
           for _, rs in sorted(rounds.items())]
    row.update(rounds_s=[round(t, 4) for t in times],
               median_s=round(statistics.median(times), 4),
               shutdown_s=round(statistics.median(downs), 4),
               init_s=round(statistics.median(ups), 4))
    return row


# --- 4. commit overhead -------------------------------------------------


def commit(args, workdir):
    n = args.np
    logdir = os.path.join(workdir, "log")
    os.makedirs(logdir)
    config = write_config(workdir, mode="commit", log=logdir,
                          state=args.state, warmup=3, steps=args.steps,
                          hidden=1024, batch=32)
    cmd = [HVDRUN, "-np", str(n), "--min-np", str(n), "-H",
           f"localhost:{n}", "--elastic-timeout", "30", PYTHON, WORKER, config]
    code, seconds = run_logged(cmd, workdir, timeout=300)
    row = dict(bench="commit", state=args.state, np=n, exit_code=code,
               wall_s=round(seconds, 2))
    recs = [r for r in read_jsonl(os.path.join(logdir, "*.jsonl"))
            if r["event"] == "commit_step"]
    if code != 0 or not recs:
        row["error"] = f"exit {code}, {len(recs)} commit records"
        return row
    med = {k: statistics.median(r[k] for r in recs) for k in
           ("step_seconds", "commit_seconds", "save_seconds",
            "check_seconds")}
    shares = [r["commit_seconds"] / (r["step_seconds"] + r["commit_seconds"])
              for r in recs]
    row.update(params=recs[0]["params"], step_s=round(med["step_seconds"], 5),
               commit_s=round(med["commit_seconds"], 5),
               save_s=round(med["save_seconds"], 5),
               check_s=round(med["check_seconds"], 5),
               share=round(statistics.median(shares), 4),
               samples=len(recs))
    return row


# --- 5. torchrun --------------------------------------------------------


def torchrun(args, workdir):
    n = args.np
    logdir = os.path.join(workdir, "log")
    os.makedirs(logdir)
    port = free_ports(1)[0]
    cmd = ["torchrun", "--nnodes=1", f"--nproc_per_node={n}",
           "--max_restarts=3", f"--monitor_interval={args.monitor_interval}",
           "--master_addr=127.0.0.1", f"--master_port={port}",
           "--log_dir", os.path.join(workdir, "torchrun-logs"),
           "-r", "1", "-t", "2",
           os.path.join(HERE, "torchrun_worker.py"), "--log", logdir,
           "--compute", str(COMPUTE), "--grad-floats", str(GRAD_FLOATS),
           "--kill-step", str(KILL_STEP), "--tail-steps", str(TAIL_STEPS)]
    env = dict(os.environ, GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1")
    code, seconds = run_logged(cmd, workdir, timeout=180, env=env)
    row = dict(bench="torchrun", np=n, monitor_interval=args.monitor_interval,
               exit_code=code, wall_s=round(seconds, 2))
    recs = read_jsonl(os.path.join(logdir, "*.jsonl"))
    kills = [r["time"] for r in recs if r["event"] == "kill"]
    if code != 0 or not kills:
        row["error"] = f"torchrun exit {code}, {len(kills)} kill records"
        return row
    kill = kills[0]
    again = [r for r in recs if r["attempt"] == 1]

    def last(event):
        ts = {}
        for r in again:
            if r["event"] == event and r["rank"] not in ts:
                ts[r["rank"]] = r["time"]
        return max(ts.values()) if len(ts) == n else None

    steady = [r["time"] for r in recs if r["attempt"] == 0 and
              r["rank"] == 0 and r["event"] == "step"][5:]
    first_step = last("step")
    if first_step is None:
        row["error"] = "not every rank stepped after the restart"
        return row
    lines = stderr_lines(workdir)
    phases = dict(
        agent_saw_failure=rel(first(lines, r"closing signal|exitcode",
                                    kill), kill),
        proc_start=rel(last("proc_start"), kill),
        imported=rel(last("imported"), kill),
        init_done=rel(last("init_done"), kill),
        first_step=rel(first_step, kill))
    row.update(recovery_s=round(first_step - kill, 4),
               step_s=round(median_gap(steady), 4), phases=phases)
    row["overhead_s"] = round(row["recovery_s"] - row["step_s"], 4)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("results")
    parser.add_argument("bench", choices=["recovery", "scaleup",
                                          "rerendezvous", "commit",
                                          "torchrun"])
    parser.add_argument("--np", type=int, required=True)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--variant", default="worker",
                        choices=["worker", "host"])
    parser.add_argument("--impl", default="hvd",
                        choices=["hvd", "torch-prefix", "torch-tcp"])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--state", default="object",
                        choices=["object", "torch"])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--discovery-interval", type=float, default=0.3)
    parser.add_argument("--no-torch-import", action="store_true",
                        help="scaleup: the joiner does not import torch")
    parser.add_argument("--monitor-interval", type=float, default=5.0)
    parser.add_argument("--etcd", default="",
                        help="recovery: the rendezvous in the etcd of "
                        "these endpoints")
    args = parser.parse_args()
    tag = {"recovery": args.variant + ("-etcd" if args.etcd else ""),
           "rerendezvous": args.impl,
           "commit": args.state,
           "torchrun": f"mi{args.monitor_interval:g}"}.get(args.bench, "")
    name = f"{args.bench}-{tag}-np{args.np}-r{args.repeat}".replace("--", "-")
    workdir = os.path.join(args.out_dir, name)
    os.makedirs(workdir)
    load = os.getloadavg()[0]
    row = globals()[args.bench](args, workdir)
    row.update(repeat=args.repeat, load_before=round(load, 2), dir=name)
    with open(args.results, "a") as f:
        f.write(json.dumps(row) + "\n")
    summary = {k: v for k, v in row.items() if k not in ("phases",
                                                         "rounds_s")}
    print(json.dumps(summary))
    if "error" in row:
        sys.exit(1)


if __name__ == "__main__":
    main()
