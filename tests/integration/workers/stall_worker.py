"""Rank 0 submits a collective that rank 1 does not for a while (rank 1 is
'stuck' outside hvd). With a stall shutdown time set, every rank's
collectives fail with HorovodInternalError. argv[1] == "cached": both ranks
run the collective once first, so that rank 0's second submission is a
response cache hit that only rank 0 has."""

import sys
import time

import numpy as np

import hvd

hvd.init()
rank = hvd.rank()
if sys.argv[1] == "cached":
    hvd.allreduce(np.ones(3), name="stuck", op=hvd.Sum)
start = time.monotonic()
try:
    if rank == 0:
        hvd.allreduce(np.ones(3), name="stuck", op=hvd.Sum)
    else:
        time.sleep(float(sys.argv[2]))
        hvd.allreduce(np.ones(3), name="after.sleep", op=hvd.Sum)
    print("no error", flush=True)
except hvd.HorovodInternalError as e:
    print(f"internal error after {time.monotonic() - start:.1f} s: {e}",
          flush=True)
