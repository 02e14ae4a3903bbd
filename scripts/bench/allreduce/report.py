"""Summarises scripts/bench/allreduce/run.sh output (JSON lines) as the
Markdown tables of docs/benchmarks.md: per rank count, the median busbw of
each implementation per size, the ratios to raw Gloo, and the 4 KiB
latency."""

import collections
import json
import os
import statistics
import sys

IMPLS = ("gloo", "torch", "hvd")
LATENCY_BYTES = 4096


def size_text(nbytes: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale and nbytes % scale == 0:
            return f"{nbytes // scale} {unit}"
    return f"{nbytes} B"


def main(path: str) -> None:
    runs = collections.defaultdict(list)
    with open(path) as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                runs[(row["np"], row["bytes"], row["impl"])].append(row)
    if not runs:
        sys.exit(f"report.py: no results in {path}")

    def median(np, nbytes, impl, field):
        rows = runs.get((np, nbytes, impl))
        return statistics.median(r[field] for r in rows) if rows else None

    def ratio(a, b):
        return f"{a / b:.2f}" if a is not None and b else "-"

    def num(value, fmt):
        return format(value, fmt) if value is not None else "-"

    cores = os.cpu_count()
    for np in sorted({k[0] for k in runs}):
        impls = [i for i in IMPLS if any(k[0] == np and k[2] == i
                                         for k in runs)]
        repeats = max(len(v) for k, v in runs.items() if k[0] == np)
        note = f", oversubscribed on {cores} cores" if np > cores else ""
        runs_text = f"{repeats} run" + ("s" if repeats != 1 else "")
        print(f"### N = {np} (median of {runs_text}{note})")
        print()
        print("| size | " + " | ".join(f"{i} busbw GB/s" for i in impls)
              + " | hvd / gloo | torch / gloo |")
        print("|---" * (len(impls) + 3) + "|")
        for nbytes in sorted({k[1] for k in runs if k[0] == np}):
            bw = {i: median(np, nbytes, i, "busbw_gbs") for i in IMPLS}
            print(f"| {size_text(nbytes)} | "
                  + " | ".join(num(bw[i], ".3f") for i in impls)
                  + f" | {ratio(bw['hvd'], bw['gloo'])}"
                  + f" | {ratio(bw['torch'], bw['gloo'])} |")
        lat = {i: median(np, LATENCY_BYTES, i, "latency_us") for i in IMPLS}
        if any(v is not None for v in lat.values()):
            print()
            print("| 4 KiB latency | " + " | ".join(f"{i} µs" for i in impls)
                  + " | hvd / gloo | torch / gloo |")
            print("|---" * (len(impls) + 3) + "|")
            print(f"| N = {np} | "
                  + " | ".join(num(lat[i], ".0f") for i in impls)
                  + f" | {ratio(lat['hvd'], lat['gloo'])}"
                  + f" | {ratio(lat['torch'], lat['gloo'])} |")
        print()


if __name__ == "__main__":
    main(sys.argv[1])
