"""Rank 1 SIGKILLs itself in the middle of training; every other rank must
raise HorovodInternalError from its pending collective (not hang, not abort)
and says so on stdout. SIGTERM from hvdrun is ignored so the survivors can
report before the grace period ends."""

import os
import signal
import sys
import time

import numpy as np

import hvd

signal.signal(signal.SIGTERM, signal.SIG_IGN)
hvd.init()
rank = hvd.rank()
step = 0
try:
    while True:
        if rank == 1 and step == 5:
            os.kill(os.getpid(), signal.SIGKILL)
        started = time.monotonic()
        hvd.allreduce(np.ones(1000, np.float32), name="grad")
        step += 1
except hvd.HorovodInternalError as e:
    print(f"rank {rank} step {step}: HorovodInternalError after "
          f"{time.monotonic() - started:.2f} s: {e}", flush=True)
    # Later collectives fail the same way, at once.
    try:
        hvd.allreduce(np.ones(3), name="after")
    except hvd.HorovodInternalError:
        print(f"rank {rank}: later collective failed too", flush=True)
    sys.exit(0)
