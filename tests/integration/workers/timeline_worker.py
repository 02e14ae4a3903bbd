"""Named allreduces for the timeline tests. argv[1]: "steps" runs 20 steps
(the timeline comes from HOROVOD_TIMELINE); "api" records only steps 5 to 9
with hvd.start_timeline(argv[2]) / stop_timeline(); "forever" runs until it
is killed, printing "running" once the first steps are done."""

import sys

import numpy as np

import hvd

hvd.init()
mode = sys.argv[1]
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
        print("running", flush=True)
hvd.shutdown()
