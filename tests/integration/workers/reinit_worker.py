"""init/shutdown many times in one process: every cycle works and none
leaks a thread or a file descriptor."""

import os

import numpy as np

import hvd


# The task is in do_exit() (include/linux/sched.h).
PF_EXITING = 0x4


def live_threads():
    """Threads of this process that are not exiting. pthread_join returns
    once the kernel clears the thread's tid, in the middle of its exit, so a
    joined thread can stay listed in /proc/self/task for a moment; it has
    been PF_EXITING since its exit began."""
    count = 0
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue  # gone while we looked
        if not int(fields[6]) & PF_EXITING:  # field 9, flags
            count += 1
    return count


def resources():
    return live_threads(), len(os.listdir("/proc/self/fd"))


baseline = None
for cycle in range(12):
    hvd.init()
    total = hvd.allreduce(np.array([cycle + hvd.rank()], np.int64), op=hvd.Sum)
    want = sum(cycle + r for r in range(hvd.size()))
    assert total.tolist() == [want], (cycle, total)
    hvd.shutdown()
    assert not hvd.is_initialized()
    # shutdown() has joined every thread and closed every descriptor of the
    # runtime; the first cycle leaves lazily created helpers behind.
    if cycle == 1:
        baseline = resources()
    elif cycle > 1:
        assert resources() == baseline, (cycle, resources(), baseline)
print(f"rank {os.environ.get('HOROVOD_RANK', '0')}: 12 cycles, threads and "
      f"fds {baseline}", flush=True)
