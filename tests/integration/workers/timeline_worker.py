"""Named allreduces for the timeline tests. argv[1]: "steps" runs 20 steps
(the timeline comes from HOROVOD_TIMELINE); "api" records only steps 5 to 9
with hvd.start_timeline(argv[2]) / stop_timeline(); "forever" runs until it
is killed, printing "running pid <its pid>" once the first steps are done; "views" and
"separate" run 10 in-place grouped allreduces of 4 tensors that are views
of one buffer, back to back, or arrays of their own, and check the sums."""

import os
import sys

import numpy as np

import hvd

hvd.init()
mode = sys.argv[1]
if mode in ("views", "separate"):
    sizes = [3, 5, 1, 7]
    flat = np.empty(sum(sizes))
    offsets = np.cumsum([0] + sizes)
    tensors = ([flat[a:b] for a, b in zip(offsets, offsets[1:])]
               if mode == "views" else [np.empty(n) for n in sizes])
    want = hvd.size() * (hvd.size() + 1) / 2
    for step in range(10):
        for t in tensors:
            t[:] = hvd.rank() + 1
        hvd.grouped_allreduce_(tensors, name="grad", op=hvd.Sum)
        assert all((t == want).all() for t in tensors), tensors
    print(f"rank {hvd.rank()}: 10 checks passed", flush=True)
    hvd.shutdown()
    sys.exit(0)
step = 0
while mode == "forever" or step < 20:
    if mode == "api" and step == 5:
        hvd.start_timeline(sys.argv[2], mark_cycles=True)
    if mode == "api" and step == 10:
        hvd.stop_timeline()
    name = "between" if mode == "api" and 5 <= step < 10 else "grad"
    handles = [hvd.allreduce_async(np.ones(8), name=f"{name}.{i}")
               for i in range(4)]
    handles.append(hvd.allgather_async(np.ones((1, 2)), name=f"{name}.ag"))
    for handle in handles:
        hvd.synchronize(handle)
    step += 1
    if mode == "forever" and step == 5:
        print(f"running pid {os.getpid()}", flush=True)
hvd.shutdown()
