"""The last rank disagrees with the others on one collective at a time;
every rank must get MismatchError naming the tensor and what differs, and
the runtime must keep working afterwards."""

import sys
import time

import numpy as np

import hvd

hvd.init()
rank, size = hvd.rank(), hvd.size()
odd = rank == size - 1
cases = {
    "the shape": lambda: hvd.allreduce(np.ones(3 if odd else 4), name="t.shape"),
    "the data type": lambda: hvd.allreduce(
        np.ones(4, np.float32 if odd else np.float64), name="t.dtype"),
    "the reduce operation": lambda: hvd.allreduce(
        np.ones(4), name="t.op", op=hvd.Max if odd else hvd.Sum),
    "the root rank": lambda: hvd.broadcast(np.ones(4), 1 if odd else 0,
                                       name="t.root"),
    "the operation": lambda: (hvd.allgather if odd else hvd.allreduce)(
        np.ones(4), name="t.kind"),
    "the shape after dimension 0": lambda: hvd.allgather(
        np.ones((2, 3 if odd else 4)), name="t.rows"),
}
for what, call in cases.items():
    started = time.monotonic()
    try:
        call()
    except hvd.MismatchError as e:
        message = str(e)
        elapsed = time.monotonic() - started
        assert f"ranks disagree on {what}:" in message, message
        assert f"rank {size - 1} has" in message and "rank 0 has" in message, message
        assert elapsed < 5, f"{what}: took {elapsed:.1f} s"
        print(f"mismatch {what}: {message}", flush=True)
    else:
        sys.exit(f"rank {rank}: no MismatchError for a different {what}")
# The job goes on.
assert hvd.allreduce(np.ones(2), op=hvd.Sum).tolist() == [size, size]
print("still working", flush=True)
