"""Two ranks that diverge, run under a short Gloo timeout: each check
prints one ``CHECK <json>`` line per rank ({"check", "outcome", "detail",
"seconds", "result"}); test_deadlock.py judges them. The checks:

- names: rank 0 allreduces 'dl.a', rank 1 'dl.b' (requests the coordinator
  sees directly);
- agree: then both allreduce 'dl.a' (the runtime is usable again);
- hits: both allreduce 'dl.c' and 'dl.d' once (cached), then rank 0 waits
  on 'dl.c' and rank 1 on 'dl.d' (cache hits nobody else matches);
- barrier: rank 0 waits in a barrier, rank 1 in allreduce 'dl.e';
- slow: rank 1 sleeps longer than the Gloo timeout outside any wait before
  its allreduce, while rank 0 waits in it: no deadlock, both get the sum.
"""

import json
import sys
import time

import torch

import hvd.torch as hvd

SLOW_SECONDS = float(sys.argv[1])


def run(check, call):
    start = time.monotonic()
    result, outcome, detail, runtime_error = None, "ok", "", False
    try:
        result = call()
    except Exception as e:  # recorded; the test judges it
        outcome, detail = type(e).__name__, str(e)
        runtime_error = isinstance(e, RuntimeError)  # what Horovod raises
    print("CHECK " + json.dumps({
        "check": check, "outcome": outcome, "detail": detail,
        "runtime_error": runtime_error,
        "seconds": time.monotonic() - start, "result": result}), flush=True)


def allreduce(name, x):
    return hvd.allreduce(x, op=hvd.Sum, name=name).tolist()


def main():
    hvd.init()
    rank = hvd.rank()
    x = torch.arange(4, dtype=torch.float32) + 10 * rank
    run("names", lambda: allreduce("dl.a" if rank == 0 else "dl.b", x))
    run("agree", lambda: allreduce("dl.a", x))
    run("prime", lambda: [allreduce("dl.c", x), allreduce("dl.d", x)])
    run("hits", lambda: allreduce("dl.c" if rank == 0 else "dl.d", x))
    run("barrier", lambda: hvd.barrier() if rank == 0
        else allreduce("dl.e", x))

    def slow():
        if rank == 1:
            time.sleep(SLOW_SECONDS)  # the scenario: busy outside hvd
        return allreduce("dl.slow", x)
    run("slow", slow)
    print("DONE", flush=True)


if __name__ == "__main__":
    main()
