"""Summarises scripts/bench/rendezvous/run.sh output (JSON lines) as the
Markdown tables of docs/benchmarks.md: medians over repeats and the
hvd / TCPStore ratios."""

import collections
import json
import statistics
import sys

HVD, TCP, ETCD = "hvd", "torch.TCPStore", "hvd-etcd"


def main(path: str) -> None:
    runs = collections.defaultdict(list)
    with open(path) as f:
        for line in f:
            row = json.loads(line)
            size = row.get("clients", row.get("workers"))
            runs[(row["bench"], size, row["system"])].append(row)

    def median(bench, size, system, field):
        rows = runs.get((bench, size, system))
        return statistics.median(r[field] for r in rows) if rows else None

    if any(k[0] == "watched round" for k in runs):
        print_watched(runs)
    if any(k[0] == "worker-key round" for k in runs):
        print_keys(runs)
    if any(k[2] == ETCD for k in runs):
        print_etcd(runs, median)
    if not any(k[0] == "get" for k in runs):
        return
    print()
    print("| operation | clients | hvd ops/s | TCPStore ops/s | hvd / TCPStore |")
    print("|---|---|---|---|---|")
    for bench in ("get", "set"):
        for size in sorted({k[1] for k in runs if k[0] == bench}):
            h = median(bench, size, HVD, "ops_per_s")
            t = median(bench, size, TCP, "ops_per_s")
            print(f"| {bench} | {size} | {h:,.0f} | {t:,.0f} | {h / t:.2f} |")
    print()
    print("| barrier | clients | hvd ms | TCPStore ms | TCPStore / hvd |")
    print("|---|---|---|---|---|")
    for size in sorted({k[1] for k in runs if k[0] == "barrier"}):
        h = median("barrier", size, HVD, "seconds") * 1e3
        t = median("barrier", size, TCP, "seconds") * 1e3
        print(f"| barrier | {size} | {h:.1f} | {t:.1f} | {t / h:.2f} |")
    print()
    print("| rendezvous round | workers | hvd s | hvd requests | "
          "TCPStore s | TCPStore requests |")
    print("|---|---|---|---|---|---|")
    for size in sorted({k[1] for k in runs if k[0] == "round"}):
        h = median("round", size, HVD, "seconds")
        hr = median("round", size, HVD, "requests")
        t = median("round", size, TCP, "seconds")
        tr = median("round", size, TCP, "requests")
        tcp = f"{t:.3f} | {tr:,.0f}" if t is not None else "not run | -"
        print(f"| round | {size} | {h:.3f} | {hr:,.0f} | {tcp} |")


def print_etcd(runs, median) -> None:
    """The round, and a Gloo full mesh's connect, through etcd against
    the embedded server (issue 32): medians, every run's time for the
    spread, and the ratio."""
    print("| round | workers | runs | embedded s | etcd s | etcd spread s | "
          "etcd requests | etcd / embedded |")
    print("|---|---|---|---|---|---|---|---|")
    for bench in ("round", "connect"):
        for size in sorted({k[1] for k in runs
                            if k[2] == ETCD and k[0] == bench}):
            e = median(bench, size, ETCD, "seconds")
            h = median(bench, size, HVD, "seconds")
            times = sorted(r["seconds"] for r in runs[(bench, size, ETCD)])
            requests = median(bench, size, ETCD, "requests")
            print(f"| {bench} | {size} | {len(times)} | {h:.3f} | {e:.3f} | "
                  f"{times[0]:.3f}–{times[-1]:.3f} | {requests:,.0f} | "
                  f"{e / h:.2f} |")


def print_keys(runs) -> None:
    """The round signed with the job secret and with workers' own keys, and
    one signature check each way (issue 33): medians, spreads, ratios."""
    print("| 1024-worker round | runs | median s | spread s |")
    print("|---|---|---|---|")
    medians = {}
    for bench, label in (("round", "job secret"),
                         ("worker-key round", "each worker's own key")):
        times = sorted(r["seconds"] for r in runs[(bench, 1024, HVD)])
        medians[bench] = statistics.median(times)
        print(f"| {label} | {len(times)} | {medians[bench]:.3f} | "
              f"{times[0]:.3f}–{times[-1]:.3f} |")
    checks = runs[("verify", 1, HVD)]
    secret = statistics.median(r["secret_ns"] for r in checks)
    worker = statistics.median(r["worker_key_ns"] for r in checks)
    print()
    print("| one signature check | runs | median ns |")
    print("|---|---|---|")
    print(f"| job secret | {len(checks)} | {secret:,.0f} |")
    print(f"| worker key (derived, then checked) | {len(checks)} | "
          f"{worker:,.0f} |")
    print()
    print(f"round, worker keys / job secret (medians): "
          f"{medians['worker-key round'] / medians['round']:.3f}; "
          f"signature check: {worker / secret:.2f}")


def print_watched(runs) -> None:
    """The round with and without a status poller (issue 14): medians, the
    ratio, and every run's time for the spread."""
    print("| round at 1024 workers | runs | median s | spread s | "
          "status polls per round |")
    print("|---|---|---|---|---|")
    medians = {}
    for bench in ("round", "watched round"):
        rows = runs.get((bench, 1024, HVD), [])
        times = sorted(r["seconds"] for r in rows)
        medians[bench] = statistics.median(times)
        polls = statistics.median(r.get("polls", 0) for r in rows)
        label = ("watched (page, status.json, /metrics at "
                 f"{rows[0]['polls_per_s']:g}/s)" if bench != "round"
                 else "unwatched")
        print(f"| {label} | {len(rows)} | {medians[bench]:.3f} | "
              f"{times[0]:.3f}–{times[-1]:.3f} | {polls:.0f} |")
    ratio = medians["watched round"] / medians["round"]
    print()
    print(f"watched / unwatched (medians): {ratio:.3f} "
          f"({(ratio - 1) * 100:+.1f} %)")


if __name__ == "__main__":
    main(sys.argv[1])
