"""Rank 1 stops itself (SIGSTOP) mid-training: rank 0's pending collective
must fail with HorovodInternalError once the Gloo timeout passes, naming the
timeout. Rank 0 then kills rank 1, whose pid it reads from argv[1]."""

import os
import signal
import sys
import time

import numpy as np

import hvd

pid_file = sys.argv[1]
hvd.init()
rank = hvd.rank()
for step in range(1000):
    if rank == 1 and step == 3:
        with open(pid_file, "w") as f:
            f.write(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGSTOP)
    started = time.monotonic()
    try:
        hvd.allreduce(np.ones(10), name="grad")
    except hvd.HorovodInternalError as e:
        print(f"rank {rank} step {step}: HorovodInternalError after "
              f"{time.monotonic() - started:.1f} s: {e}", flush=True)
        with open(pid_file) as f:
            os.kill(int(f.read()), signal.SIGKILL)
        sys.exit(0)
sys.exit("rank 0 never noticed the stopped peer")
