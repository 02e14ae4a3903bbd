"""Re-rendezvous in the same processes: hvd.shutdown() + hvd.init(), or
torch.distributed's destroy_process_group() + init_process_group("gloo").

Launched by scenario.py under a static `hvdrun -np N` (for every impl, so
that the processes start the same way; the torch impls read their rank and
size from HOROVOD_RANK / HOROVOD_SIZE and use nothing else of hvd):

    rerendezvous_worker.py --impl hvd|torch-prefix|torch-tcp --rounds K
        --log DIR [--store-port P] [--ports P1,P2,...]

* hvd: hvd.shutdown(); hvd.init() (static mode: each re-init meets the other
  ranks under fresh keys of the driver's rendezvous store).
* torch-prefix: one TCPStore for the whole run (rank 0 serves it on
  --store-port, as hvdrun serves hvd's store); round r builds the process
  group on PrefixStore("r<r>", store).
* torch-tcp: init_method tcp://127.0.0.1:<port of round r>, a fresh port each
  round (rank 0 creates a new TCPStore every round).

Each round: a collective as a barrier, t0, shutdown/destroy, tm, init, t1
(the new group is connected: init/init_process_group has returned). Every
rank appends {"round", "t0", "tm", "t1"} lines to DIR/rank.<start rank>.jsonl.
"""

import argparse
import json
import os
import time
from datetime import timedelta


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--impl", required=True,
                        choices=["hvd", "torch-prefix", "torch-tcp"])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--log", required=True)
    parser.add_argument("--store-port", type=int, default=0)
    parser.add_argument("--ports", default="")
    args = parser.parse_args()
    rank = int(os.environ["HOROVOD_RANK"])
    size = int(os.environ["HOROVOD_SIZE"])
    out = open(os.path.join(args.log, f"rank.{rank}.jsonl"), "a", buffering=1)

    def log(**fields):
        out.write(json.dumps(dict(impl=args.impl, rank=rank, size=size,
                                  **fields)) + "\n")

    if args.impl == "hvd":
        import numpy as np
        import hvd
        hvd.init()

        def barrier():
            hvd.allreduce(np.ones(1, np.float32), op=hvd.Sum, name="barrier")

        def down():
            hvd.shutdown()

        def up(r):
            hvd.init()
    else:
        import torch
        import torch.distributed as dist
        timeout = timedelta(seconds=60)
        ports = [int(p) for p in args.ports.split(",") if p]
        if args.impl == "torch-prefix":
            store = dist.TCPStore("127.0.0.1", args.store_port, size,
                                  rank == 0, timeout=timeout)

            def init(r):
                dist.init_process_group(
                    "gloo", store=dist.PrefixStore(f"r{r}", store),
                    rank=rank, world_size=size, timeout=timeout)
        else:
            def init(r):
                dist.init_process_group(
                    "gloo", init_method=f"tcp://127.0.0.1:{ports[r]}",
                    rank=rank, world_size=size, timeout=timeout)
        init(0)
        one = torch.ones(1)

        def barrier():
            dist.all_reduce(one)

        def down():
            dist.destroy_process_group()

        up = init

    for r in range(1, args.rounds + 1):
        barrier()
        t0 = time.time()
        down()
        tm = time.time()
        up(r)
        t1 = time.time()
        log(round=r, t0=t0, tm=tm, t1=t1)
    barrier()
    log(event="done")
    out.close()
    if args.impl != "hvd":
        # torch 1.13 sometimes aborts in its exit-time teardown of a
        # re-created process group ("terminate called without an active
        # exception"); the measurement is complete, so leave at once.
        dist.destroy_process_group()
        os._exit(0)


if __name__ == "__main__":
    main()
