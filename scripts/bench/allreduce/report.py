"""Summarises scripts/bench/allreduce/run.sh output (JSON lines) as the
Markdown tables of docs/benchmarks.md: per rank count, the median busbw of
each implementation per size, the ratios to raw Gloo, hvd's busbw as a
fraction of one core's memcpy bandwidth (measured in the same run), and
the 4 KiB latency."""

import collections
import json
import os
import statistics
import sys

IMPLS = ("gloo", "torch", "hvd", "hvd-flat")
# Ratios to raw Gloo, in this order.
RATIOS = ("hvd", "hvd-flat", "torch")
LATENCY_BYTES = 4096


def size_text(nbytes: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale and nbytes % scale == 0:
            return f"{nbytes // scale} {unit}"
    return f"{nbytes} B"


def main(path: str) -> None:
    runs = collections.defaultdict(list)
    copies = []
    with open(path) as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                if row["impl"] == "memcpy":
                    copies.append(row["copy_gbs"])
                else:
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
    copy = statistics.median(copies) if copies else None
    if copy:
        print(f"One core's memcpy: {copy:.1f} GB/s (median of "
              f"{len(copies)}); hvd / memcpy is hvd's busbw over it.")
        print()
    for np in sorted({k[0] for k in runs}):
        impls = [i for i in IMPLS if any(k[0] == np and k[2] == i
                                         for k in runs)]
        repeats = max(len(v) for k, v in runs.items() if k[0] == np)
        note = f", oversubscribed on {cores} cores" if np > cores else ""
        runs_text = f"{repeats} run" + ("s" if repeats != 1 else "")
        print(f"### N = {np} (median of {runs_text}{note})")
        print()
        ratios = [i for i in RATIOS if i in impls]
        print("| size | " + " | ".join(f"{i} busbw GB/s" for i in impls)
              + "".join(f" | {i} / gloo" for i in ratios)
              + (" | hvd / memcpy" if copy else "") + " |")
        print("|---" * (len(impls) + len(ratios) + 1 + bool(copy)) + "|")
        for nbytes in sorted({k[1] for k in runs if k[0] == np}):
            bw = {i: median(np, nbytes, i, "busbw_gbs") for i in IMPLS}
            print(f"| {size_text(nbytes)} | "
                  + " | ".join(num(bw[i], ".3f") for i in impls)
                  + "".join(f" | {ratio(bw[i], bw['gloo'])}" for i in ratios)
                  + (f" | {ratio(bw['hvd'], copy)}" if copy else "") + " |")
        lat = {i: median(np, LATENCY_BYTES, i, "latency_us") for i in IMPLS}
        if any(v is not None for v in lat.values()):
            print()
            print("| 4 KiB latency | " + " | ".join(f"{i} µs" for i in impls)
                  + "".join(f" | {i} / gloo" for i in ratios) + " |")
            print("|---" * (len(impls) + len(ratios) + 1) + "|")
            print(f"| N = {np} | "
                  + " | ".join(num(lat[i], ".0f") for i in impls)
                  + "".join(f" | {ratio(lat[i], lat['gloo'])}"
                            for i in ratios) + " |")
        print()


if __name__ == "__main__":
    main(sys.argv[1])
