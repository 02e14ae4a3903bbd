"""init/shutdown many times in one process: every cycle works and none
leaks a thread or a file descriptor."""

import os
import time

import numpy as np

import hvd


def resources():
    threads = len(os.listdir("/proc/self/task"))
    fds = len(os.listdir("/proc/self/fd"))
    return threads, fds


def settled_resources(want):
    """resources() once they equal `want`, or after 2 s. A joined thread
    can stay listed in /proc/self/task for a moment: the kernel wakes its
    joiner before it has finished exiting."""
    deadline = time.monotonic() + 2
    while resources() != want and time.monotonic() < deadline:
        time.sleep(0.01)
    return resources()


baseline = None
for cycle in range(12):
    hvd.init()
    total = hvd.allreduce(np.array([cycle + hvd.rank()], np.int64), op=hvd.Sum)
    want = sum(cycle + r for r in range(hvd.size()))
    assert total.tolist() == [want], (cycle, total)
    hvd.shutdown()
    assert not hvd.is_initialized()
    if cycle == 1:  # after the first cycle's lazily created helpers
        time.sleep(0.2)  # for exiting threads to leave (settled_resources)
        baseline = resources()
    elif cycle > 1:
        now = settled_resources(baseline)
        assert now == baseline, (cycle, now, baseline)
print(f"rank {os.environ.get('HOROVOD_RANK', '0')}: 12 cycles, threads and "
      f"fds {baseline}", flush=True)
