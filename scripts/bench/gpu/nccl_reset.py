"""How long an elastic job of CUDA tensors takes to recover from a killed
worker, with the survivors' NCCL communicator shrunk (hvd's default) and
made anew (HVD_NCCL_SHRINK=0), interleaved, on one machine with three or
more GPUs: 3 workers, one per GPU, each allreducing a CUDA payload every
batch; the worker of the third slot SIGKILLs itself while its allreduce
is in flight. Recovery is the kill to the survivors' first batch after it
(tests/integration/workers/elastic_worker.py logs both).

    /usr/bin/python3 scripts/bench/gpu/nccl_reset.py [repeats] (default 5)

Results: bench-results/gpu/<timestamp>/{results.jsonl,report.md} and each
run's worker logs and hvdrun output. Exits 2, saying why, on a machine
with fewer than three GPUs.
"""

import json
import os
import statistics
import subprocess
import sys
import time

import torch

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..",
                                    ".."))
HVDRUN = os.path.join(ROOT, "build", "launcher", "hvdrun")
WORKER = os.path.join(ROOT, "tests", "integration", "workers",
                      "elastic_worker.py")
PAYLOAD = 1 << 22  # float32 elements: 16 MiB per allreduce
MODES = {"shrink": "1", "new": "0"}


def run(workdir, mode):
    log = os.path.join(workdir, "log")
    os.makedirs(log)
    hosts_file = os.path.join(workdir, "hosts.txt")
    open(hosts_file, "w").close()
    scenario = os.path.join(workdir, "scenario.json")
    with open(scenario, "w") as f:
        json.dump(dict(log=log, hosts_file=hosts_file, epochs=3, batches=5,
                       payload=PAYLOAD, cuda=True,
                       exits=[{"slot": "127.0.0.2:0", "epoch": 1, "batch": 2,
                               "how": "kill", "during": "payload"}]), f)
    env = dict(os.environ, HVD_NCCL_SHRINK=MODES[mode])
    with open(os.path.join(workdir, "hvdrun.out"), "w") as out:
        code = subprocess.call(
            [HVDRUN, "-np", "3", "--min-np", "2", "--log-level", "info",
             "-H", "localhost:1,127.0.0.1:1,127.0.0.2:1",
             "/usr/bin/python3", WORKER, scenario],
            stdout=out, stderr=subprocess.STDOUT, env=env, timeout=300)
    records = []
    for name in os.listdir(log):
        with open(os.path.join(log, name)) as f:
            records += [json.loads(line) for line in f if line.endswith("\n")]
    exits = [r["time"] for r in records if r["event"] == "exit"]
    after = [r["time"] for r in records if r["event"] == "batch"
             and exits and r["time"] > exits[0] and r["size"] == 2]
    row = dict(mode=mode, exit_code=code)
    if code != 0 or not exits or not after:
        row["error"] = (f"hvdrun exit {code}; {len(after)} batches after "
                        "the kill")
    else:
        row["recovery_s"] = round(min(after) - exits[0], 4)
    return row


def main():
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if gpus < 3:
        print(f"nccl_reset: needs three GPUs (one per worker); this machine "
              f"has {gpus}", file=sys.stderr)
        return 2
    out = os.path.join(ROOT, "bench-results", "gpu",
                       time.strftime("%Y%m%d-%H%M%S"))
    os.makedirs(out)
    rows = []
    for repeat in range(1, repeats + 1):
        for mode in MODES:
            row = run(os.path.join(out, f"{mode}-r{repeat}"), mode)
            row["repeat"] = repeat
            rows.append(row)
            print(json.dumps(row), flush=True)
            with open(os.path.join(out, "results.jsonl"), "a") as f:
                f.write(json.dumps(row) + "\n")
    medians = {}
    for mode in MODES:
        times = [r["recovery_s"] for r in rows
                 if r["mode"] == mode and "recovery_s" in r]
        medians[mode] = statistics.median(times) if times else None
    lines = [f"# NCCL reset after a kill: {gpus} GPUs, {repeats} repeats, "
             f"{torch.cuda.get_device_name(0)}", "",
             "| communicator after the kill | recovery (median s) |",
             "|---|---|"]
    lines += [f"| {m} | {medians[m]} |" for m in MODES]
    if medians["shrink"] and medians["new"]:
        ratio = medians["new"] / medians["shrink"]
        lines += ["", f"new / shrink: {ratio:.2f}"]
    report = "\n".join(lines) + "\n"
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(report)
    print(report)
    return 0 if all("recovery_s" in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
