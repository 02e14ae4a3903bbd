"""torch.distributed.TCPStore side of the rendezvous benchmark (run.sh).

Mirrors hvd_kv_bench: a master store in this process, real client processes
(forked after the master starts, each with its own TCPStore connection), and
one JSON line per measurement on stdout. TCPStore is unauthenticated and its
set is not acknowledged; see docs/benchmarks.md.

    tcpstore_bench.py get|set <clients> <seconds>
    tcpstore_bench.py barrier <clients> <rounds>
    tcpstore_bench.py round <workers>
"""

import datetime
import json
import multiprocessing
import sys
import threading
import time

from torch.distributed import TCPStore

TIMEOUT = datetime.timedelta(seconds=120)


def client(port: int) -> TCPStore:
    return TCPStore("127.0.0.1", port, is_master=False, timeout=TIMEOUT)


def barrier(store: TCPStore, name: str, me: int, count: int) -> None:
    store.set(f"{name}/{me}", "1")
    store.wait([f"{name}/{i}" for i in range(count)])


def ops_client(port: int, op: str, me: int, count: int, seconds: float) -> None:
    store = client(port)
    key, value = f"k{me}", "v" * 64
    store.set(key, value)
    barrier(store, f"{op}-start", me, count)
    end = time.monotonic() + seconds
    ops = 0
    if op == "get":
        while time.monotonic() < end:
            store.get(key)
            ops += 1
    else:
        while time.monotonic() < end:
            store.set(key, value)
            ops += 1
    store.set(f"ops/{me}", str(ops))


def barrier_client(port: int, me: int, count: int, rounds: int) -> None:
    store = client(port)
    barrier(store, "warmup", me, count)
    start = time.monotonic()
    for r in range(rounds):
        barrier(store, f"round{r}", me, count)
    if me == 0:
        emit(bench="barrier", clients=count,
             seconds=(time.monotonic() - start) / rounds)


def emit(**fields) -> None:
    print(json.dumps({"system": "torch.TCPStore", **fields}), flush=True)


def run_processes(target, args_for) -> None:
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=target, args=args) for args in args_for]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
        if p.exitcode != 0:
            sys.exit(f"tcpstore_bench: a client process failed ({p.exitcode})")


def bench_round(master: TCPStore, port: int, workers: int) -> None:
    """N simulated workers, a thread and a connection each: set, then get
    every address one by one (TCPStore has no multi-key read here)."""
    stores = [client(port) for _ in range(workers)]
    go = threading.Event()
    failures = []

    def worker(i: int) -> None:
        go.wait()
        store = stores[i]
        store.set(f"addr/{i}", f"10.0.0.{i % 250}:{20000 + i}")
        keys = [f"addr/{j}" for j in range(workers)]
        store.wait(keys)
        if len([store.get(k) for k in keys]) != workers:
            failures.append(i)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(workers)]
    for t in threads:
        t.start()
    start = time.monotonic()
    go.set()
    for t in threads:
        t.join()
    seconds = time.monotonic() - start
    if failures:
        sys.exit("tcpstore_bench: a worker missed addresses")
    # set + wait + N gets per worker.
    emit(bench="round", workers=workers, seconds=seconds,
         requests=workers * (workers + 2))


def main() -> None:
    mode, count = sys.argv[1], int(sys.argv[2])
    master = TCPStore("127.0.0.1", 0, is_master=True, timeout=TIMEOUT,
                      wait_for_workers=False)
    port = master.port
    if mode in ("get", "set"):
        seconds = float(sys.argv[3])
        run_processes(ops_client,
                      [(port, mode, i, count, seconds) for i in range(count)])
        total = sum(int(master.get(f"ops/{i}")) for i in range(count))
        emit(bench=mode, clients=count, ops_per_s=total / seconds)
    elif mode == "barrier":
        rounds = int(sys.argv[3])
        run_processes(barrier_client,
                      [(port, i, count, rounds) for i in range(count)])
    elif mode == "round":
        bench_round(master, port, count)
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
