"""Summarises scripts/bench/elastic/run.sh output (results.jsonl, one JSON
line per scenario run, written by scenario.py) as Markdown tables: medians
over the repeats with their spread (min-max), the phase breakdowns, and
the issue's targets.

    report.py RESULTS.jsonl
"""

import collections
import json
import os
import statistics
import sys

# Horovod's published Gloo re-init times (horovod/horovod issue 3556).
HOROVOD_REINIT = {2: 0.4, 4: 1.2, 8: 7.1}


def load(path):
    rows = []
    with open(path) as f:
        for line in f:
            if line.strip():
                rows.append(json.loads(line))
    return rows


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def ms(value):
    return "-" if value is None else f"{value * 1000:.0f}"


def sec(value, digits=3):
    return "-" if value is None else f"{value:.{digits}f}"


def spread(values, fmt=sec):
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    return f"{fmt(min(values))}–{fmt(max(values))}"


def group(rows, *keys):
    out = collections.OrderedDict()
    for r in sorted(rows, key=lambda r: tuple(str(r.get(k)).zfill(4)
                                              for k in keys)):
        out.setdefault(tuple(r.get(k) for k in keys), []).append(r)
    return out


def by_variant(rows):
    """Recovery rows by (variant, N): one worker first, then whole hosts."""
    groups = group(rows, "variant", "np")
    return collections.OrderedDict(sorted(
        groups.items(), key=lambda kv: (kv[0][0] != "worker", kv[0][1])))


def table(header, lines):
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for line in lines:
        print("| " + " | ".join(str(x) for x in line) + " |")
    print()


def phase_table(rows_by_key, names, label):
    lines = []
    for key, rs in rows_by_key.items():
        lines.append([*key] + [ms(med(r["phases"].get(n) for r in rs))
                               for n in names])
    table(label + names, lines)


def recovery(rows, torchrun_rows):
    ok = [r for r in rows if "error" not in r]
    if not ok:
        return
    print("## Recovery: kill -9 → survivors' next step\n")
    print("Time from the victim's SIGKILL (its own last log line) to the "
          "last survivor's first completed step in the new generation. "
          "Step: 20 ms of sleep + a 256 KiB allreduce + commit; *over one "
          "step* subtracts the normal step time (the survivors would have "
          "finished a step then anyway). `worker`: hosts of one slot, rank "
          "1 killed; `host`: hosts of two slots, both workers of the second "
          "host (ranks 2 and 3) killed at once.\n")
    targets = {("worker", 2): 0.2, ("worker", 4): 0.5, ("host", 8): 2.0}
    lines = []
    for (variant, n), rs in by_variant(ok).items():
        rec = [r["recovery_s"] for r in rs]
        target = targets.get((variant, n))
        verdict = "-"
        if target is not None:
            verdict = (f"≤ {target} s: " +
                       ("**met**" if max(rec) <= target else
                        "met in median" if med(rec) <= target else
                        "**missed**"))
        lines.append([variant, n, rs[0]["survivors"], len(rs),
                      sec(med(rec)), spread(rec),
                      sec(med(r["overhead_s"] for r in rs)),
                      sec(med(r["step_s"] for r in rs)), verdict])
    for (n, mi), rs in group([r for r in torchrun_rows if "error" not in r],
                             "np", "monitor_interval").items():
        rec = [r["recovery_s"] for r in rs]
        lines.append([f"torchrun (monitor {mi:g} s)", n, n, len(rs),
                      sec(med(rec)), spread(rec),
                      sec(med(r["overhead_s"] for r in rs)),
                      sec(med(r["step_s"] for r in rs)),
                      "all workers restarted"])
    table(["kill", "N", "survivors", "runs", "median s", "spread s",
           "over one step s", "step s", "target"], lines)
    print("Where the time goes (medians, ms after the kill; for each event "
          "the last survivor's, except *error first*):\n")
    names = ["error_first", "error_last", "driver_saw_exit",
             "generation_published", "shutdown_done", "joined_last",
             "init_done", "sync_done", "first_step"]
    phase_table(by_variant(ok), names, ["kill", "N"])
    print("error: HorovodInternalError reached the script (restore()); "
          "driver_saw_exit / generation_published: hvdrun's lines as they "
          "arrived; shutdown_done: hvd.shutdown() returned; joined_last: "
          "the worker's 'joined generation' log line (check-in answered); "
          "init_done: hvd.init() returned (Gloo contexts connected); "
          "sync_done: state broadcast from rank 0.\n")
    etcd_against_embedded(by_variant(ok))


def etcd_against_embedded(groups):
    """Issue 32's targets: with the rendezvous in etcd, worker-kill
    recovery at most 1.5x the embedded store's and the steady step time
    at most 1.02x, from runs interleaved in the same repeat."""
    lines = []
    for (variant, n), rs in groups.items():
        if not variant.endswith("-etcd"):
            continue
        base = groups.get((variant[:-len("-etcd")], n))
        if not base:
            continue
        rec = med(r["recovery_s"] for r in rs)
        rec0 = med(r["recovery_s"] for r in base)
        step = med(r["step_s"] for r in rs)
        step0 = med(r["step_s"] for r in base)
        lines.append([n, len(base), len(rs), sec(rec0), sec(rec),
                      f"{rec / rec0:.2f}", sec(step0), sec(step),
                      f"{step / step0:.3f}"])
    if not lines:
        return
    print("### The rendezvous in etcd against the embedded store\n")
    table(["N", "runs embedded", "runs etcd", "recovery embedded s",
           "recovery etcd s", "etcd / embedded (≤ 1.5)", "step embedded s",
           "step etcd s", "etcd / embedded (≤ 1.02)"], lines)


def torchrun(rows):
    ok = [r for r in rows if "error" not in r]
    if not ok:
        return
    print("## torchrun: kill -9 → every worker's next step after the "
          "restart\n")
    print("torchrun stops every worker and starts them all again; the new "
          "processes import torch and call init_process_group (no "
          "checkpoint is loaded, which a real job would add).\n")
    names = ["agent_saw_failure", "proc_start", "imported", "init_done",
             "first_step"]
    phase_table(group(ok, "monitor_interval", "np"), names,
                ["monitor interval s", "N"])


def scaleup(rows):
    ok = [r for r in rows if "error" not in r]
    if not ok:
        return
    print("## Scale-up: a host appears in discovery\n")
    torch_note = ("the new worker imports torch before `import hvd`, as a "
                  "torch job's would; " if ok[0].get("joiner_imports_torch")
                  else "")
    print(f"Rank 0 rewrites the hosts file at step 40; hvdrun "
          f"--discovery-interval {ok[0]['discovery_interval']:g}; "
          f"{torch_note}N = 2 and 4 add a host of one slot, N = 8 a host of "
          "two slots to three. *join*: write → the new worker's first "
          "step. *pause*: the longest gap between two consecutive steps of "
          "a running worker from the write to its first step in the new "
          "generation, minus its normal step time (target ≤ 0.5 s).\n")
    lines = []
    for (n,), rs in group(ok, "np").items():
        join = [r["join_s"] for r in rs]
        pause = [r["pause_s"] for r in rs]
        verdict = ("**met**" if max(pause) <= 0.5 else
                   "met in median" if med(pause) <= 0.5 else "**missed**")
        lines.append([n, rs[0]["start_np"], len(rs), sec(med(join)),
                      spread(join), sec(med(pause)), spread(pause),
                      sec(med(r["step_s"] for r in rs)), verdict])
    table(["N", "from", "runs", "join median s", "join spread s",
           "pause median s", "pause spread s", "step s", "pause ≤ 0.5 s"],
          lines)
    print("Where the time goes (medians, ms after the hosts file was "
          "written):\n")
    names = ["generation_published", "new_pid", "new_proc_start",
             "new_imported", "old_notified", "old_shutdown_start",
             "old_shutdown_done", "init_done", "sync_done",
             "new_first_step"]
    phase_table(group(ok, "np"), names, ["N"])
    print("generation_published: hvdrun saw the new host; new_pid: hvdrun "
          "started the worker; new_imported: its imports done (then it "
          "checks in); old_notified: the running workers got HostsUpdated "
          "(sent once every newcomer checked in); old_shutdown_start: they "
          "reached their next commit and reset; init_done: every worker's "
          "hvd.init() returned.\n")


def rerendezvous(rows, recovery_rows):
    ok = [r for r in rows if "error" not in r]
    if not ok:
        return
    print("## Re-rendezvous in the same processes\n")
    print("Static `hvdrun -np N`; each round: a barrier, then hvd.shutdown() "
          "+ hvd.init(), or destroy_process_group() + "
          "init_process_group(\"gloo\") (torch-prefix: one TCPStore for the "
          "run, a PrefixStore per round; torch-tcp: tcp:// init method on a "
          "fresh port per round). Round time: last rank's init returned − "
          "first rank's reset start. Median over all rounds of all runs; "
          "spread: the runs' medians.\n")
    by = group(ok, "np", "impl")
    lines = []
    for n in sorted({r["np"] for r in ok}):
        cells = [n]
        meds = {}
        for impl in ("hvd", "torch-prefix", "torch-tcp"):
            rs = by.get((n, impl), [])
            rounds = [t for r in rs for t in r["rounds_s"]]
            meds[impl] = med(rounds)
            cells += [sec(meds[impl]),
                      spread([r["median_s"] for r in rs]),
                      f"{ms(med(r['shutdown_s'] for r in rs))} + "
                      f"{ms(med(r['init_s'] for r in rs))}"]
        torch_best = min((v for k, v in meds.items()
                          if k != "hvd" and v is not None), default=None)
        ratio = (f"{meds['hvd'] / torch_best:.2f}" if meds["hvd"] and
                 torch_best else "-")
        verdict = "-" if ratio == "-" else (
            "**met**" if meds["hvd"] <= torch_best else "**missed**")
        cells += [ratio, verdict, sec(HOROVOD_REINIT.get(n), 1)]
        lines.append(cells)
    table(["N", "hvd s", "hvd spread", "hvd down + up ms", "torch-prefix s",
           "spread", "down + up ms", "torch-tcp s", "spread",
           "down + up ms", "hvd / best torch", "≤ torch", "Horovod (3556) s"],
          lines)
    ok_rec = [r for r in recovery_rows if "error" not in r]
    if ok_rec:
        print("The reset inside an elastic recovery (from the recovery "
              "runs, the slowest survivor's): *reset*: hvd.shutdown() "
              "start → hvd.init() returned, which includes waiting for "
              "hvdrun's new generation; *init*: from the later of "
              "shutdown returned and hvdrun's generation line to init "
              "returned (check-in answer + Gloo connect):\n")
        lines = []
        for (variant, n), rs in by_variant(ok_rec).items():
            lines.append([variant, n, ms(med(r["reset_s"] for r in rs)),
                          spread([r["reset_s"] for r in rs], ms),
                          ms(med(r.get("connect_s") for r in rs)),
                          spread([r.get("connect_s") for r in rs], ms)])
        table(["kill", "N", "reset ms", "spread ms", "init ms",
               "spread ms"], lines)


def bed(rows):
    ok = [r for r in rows if "error" not in r]
    if not ok:
        return
    print("## Recovery across hosts (test bed)\n")
    print("bed_scenario.py: N workers on N/2 bed hosts of two slots "
          "(network namespaces with their own sshd, workers started over "
          "ssh); the last host is lost at step 40 of its first worker: "
          "*kill* (that worker SIGKILLs itself), *crash* (every process of "
          "the host killed), *partition* (its link down). Recovery: the "
          "event → the last survivor's first step in the world without "
          "that host (torchrun, after a kill: every worker's first step "
          "after the restart). Medians over the repeats, spread min–max.\n")
    by = group(ok, "event", "np", "impl")
    lines = []
    events = ["kill", "crash", "partition"]
    for event in events:
        for n in sorted({r["np"] for r in ok if r["event"] == event}):
            hv = [r["recovery_s"] for r in by.get((event, n, "hvd"), [])]
            tr = [r["recovery_s"] for r in by.get((event, n, "torchrun"),
                                                  [])]
            ratio = (f"{med(tr) / med(hv):.1f}" if hv and tr and med(hv)
                     else "-")
            verdict = "-"
            if event == "partition" and n == 8 and hv:
                verdict = ("≤ 5 s: " +
                           ("**met**" if max(hv) <= 5 else
                            "met in median" if med(hv) <= 5 else
                            "**missed**"))
            lines.append([event, n, len(hv), sec(med(hv)), spread(hv),
                          len(tr),
                          sec(med(tr), 2), spread(tr, lambda v: sec(v, 2)),
                          ratio, verdict])
    table(["event", "N", "hvd runs", "hvd median s", "hvd spread s",
           "torchrun runs", "torchrun median s", "torchrun spread s",
           "torchrun / hvd", "target"], lines)
    print("Where hvd's time goes (medians, s after the event; spread "
          "min–max):\n")
    names = ["driver_noticed", "generation_published", "first_step"]
    lines = []
    for (event, n), rs in group([r for r in ok if r["impl"] == "hvd"],
                                "event", "np").items():
        cells = [event, n]
        for name in names:
            values = [r["phases"].get(name) for r in rs]
            cells.append(f"{sec(med(values))} ({spread(values)})")
        lines.append(cells)
    lines.sort(key=lambda c: (events.index(c[0]), c[1]))
    table(["event", "N"] + names, lines)
    print("driver_noticed: hvdrun's first line about the loss (a worker "
          "exited, ssh ended); generation_published: its next generation; "
          "first_step: the last survivor's first step in it.\n")


def slurm(rows):
    ok = [r for r in rows if "error" not in r]
    if not ok:
        return
    print("## Slurm: a lost node and a companion job\n")
    print("slurm_scenario.py: 6 workers on 3 bed hosts of two slots; the "
          "third host crashes (every process killed, slurmd included) or "
          "is partitioned (its link down) at step 40 of its first worker, "
          "then a fourth host joins. *slurm*: "
          "`sbatch --nodes 3 --ntasks-per-node 2 --no-kill` running "
          "`hvdrun -np 6 --min-np 4` (workers as srun steps), growth by "
          "`sbatch --job-name hvd-grow-<job>` of the fourth node; *ssh* "
          "(the anchor): the same job from the root namespace over ssh, "
          "growth by a line added to the discovery file. Recovery: crash → "
          "last survivor's first step at 4 workers. Growth: the sbatch (ssh: "
          "the file write) → a new worker's first step; from start: the "
          "growth job's first line → that step. Medians, spread min–max.\n")
    by = group(ok, "event", "impl")
    lines = []
    for event, impl in (("crash", "slurm"), ("crash", "ssh"),
                        ("partition", "slurm"), ("partition", "ssh")):
        rs = by.get((event, impl), [])
        if not rs:
            continue
        cells = [event, impl, len(rs)]
        for name in ("recovery_s", "grow_s", "grow_from_start_s"):
            values = [r.get(name) for r in rs]
            cells.append(f"{sec(med(values))} ({spread(values)})"
                         if any(v is not None for v in values) else "-")
        lines.append(cells)
    table(["event", "launcher", "runs", "recovery s",
           "growth from sbatch s", "growth from the job's start s"], lines)
    for event in ("crash", "partition"):
        sl = by.get((event, "slurm"), [])
        sh = by.get((event, "ssh"), [])
        for name, what in (("recovery_s", "recovery"), ("grow_s", "growth")):
            a = med(r[name] for r in sl)
            b = med(r[name] for r in sh)
            if a and b:
                print(f"- {event}, {what}: slurm / ssh = {a / b:.2f}")
    print()


def commit(rows):
    ok = [r for r in rows if "error" not in r]
    if not ok:
        return
    print("## Commit overhead, committing every step\n")
    print(f"An MLP of {ok[0]['params']:,} parameters (1024-1024-1024-10, "
          "batch 32, SGD with momentum, DistributedOptimizer, one torch "
          "thread per worker); step: forward, backward, optimizer.step() "
          "with the gradients' allreduce. ObjectState: three scalars; "
          "TorchState: the model and optimizer plus two scalars. Commit = "
          "save (local copy) + the host-update check (one 8-byte "
          "allreduce). Share = commit / (step + commit). Medians over every "
          "rank's measured steps of all runs.\n")
    lines = []
    for (n, state), rs in group(ok, "np", "state").items():
        lines.append([n, state, len(rs),
                      ms(med(r["step_s"] for r in rs)),
                      f"{med(r['commit_s'] for r in rs) * 1000:.1f}",
                      f"{med(r['save_s'] for r in rs) * 1000:.2f}",
                      f"{med(r['check_s'] for r in rs) * 1000:.1f}",
                      f"{med(r['share'] for r in rs) * 100:.1f} %",
                      spread([r["share"] for r in rs],
                             lambda v: f"{v * 100:.1f}")])
    table(["N", "state", "runs", "step ms", "commit ms", "save ms",
           "check ms", "share", "share spread %"], lines)


def main(path):
    rows = load(path)
    if not rows:
        sys.exit(f"report.py: no results in {path}")
    by_bench = collections.defaultdict(list)
    for r in rows:
        by_bench[r["bench"]].append(r)
    failed = [r for r in rows if "error" in r]
    loads = [r["load_before"] for r in rows]
    print(f"{len(rows)} scenario runs, {len(failed)} failed; load average "
          f"before each run {min(loads):.1f}–{max(loads):.1f} on "
          f"{os.cpu_count()} cores.\n")
    recovery(by_bench["recovery"], by_bench["torchrun"])
    torchrun(by_bench["torchrun"])
    scaleup(by_bench["scaleup"])
    rerendezvous(by_bench["rerendezvous"], by_bench["recovery"])
    commit(by_bench["commit"])
    bed(by_bench["bed"])
    slurm(by_bench["slurm"])
    if failed:
        print("## Failed runs\n")
        for r in failed:
            print(f"- {r['dir']}: {r['error']}")
        print()


if __name__ == "__main__":
    main(sys.argv[1])
