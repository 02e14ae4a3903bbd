"""init/shutdown many times in one process: every cycle works and none
leaks a thread or a file descriptor."""

import os

import numpy as np

import hvd


def resources():
    threads = len(os.listdir("/proc/self/task"))
    fds = len(os.listdir("/proc/self/fd"))
    return threads, fds


baseline = None
for cycle in range(12):
    hvd.init()
    total = hvd.allreduce(np.array([cycle + hvd.rank()], np.int64), op=hvd.Sum)
    want = sum(cycle + r for r in range(hvd.size()))
    assert total.tolist() == [want], (cycle, total)
    hvd.shutdown()
    assert not hvd.is_initialized()
    if cycle == 1:  # after the first cycle's lazily created helpers
        baseline = resources()
    elif cycle > 1:
        assert resources() == baseline, (cycle, resources(), baseline)
print(f"rank {os.environ.get('HOROVOD_RANK', '0')}: 12 cycles, threads and "
      f"fds {baseline}", flush=True)
