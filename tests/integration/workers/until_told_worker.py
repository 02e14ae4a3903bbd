"""Allreduces until told to stop: argv[1] is a folder; each rank writes
<folder>/steps.<rank> (its step count, rewritten every step). Rank 0 looks
for <folder>/stop and its step's allreduce tells every rank, so all stop
after the same step. Every sum is checked."""

import os
import sys

import numpy as np

import hvd

folder = sys.argv[1]
hvd.init()
rank, size = hvd.rank(), hvd.size()
steps = 0
while True:
    stop = rank == 0 and os.path.exists(os.path.join(folder, "stop"))
    got = hvd.allreduce(np.array([rank, stop], np.float64), op=hvd.Sum,
                        name="step")
    assert got[0] == size * (size - 1) / 2, got
    steps += 1
    tmp = os.path.join(folder, f".steps.{rank}")
    with open(tmp, "w") as f:
        f.write(str(steps))
    os.replace(tmp, os.path.join(folder, f"steps.{rank}"))
    if got[1]:
        break
print(f"rank {rank}: {steps} steps", flush=True)
hvd.shutdown()
