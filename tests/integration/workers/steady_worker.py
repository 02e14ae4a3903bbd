"""A training loop's collectives: every step allreduces the same named
gradients. Prints this rank's negotiation counters over the steps after
warm-up as JSON."""

import json

import numpy as np

import hvd

STEPS, WARMUP, TENSORS = 30, 3, 10

hvd.init()
rank, size = hvd.rank(), hvd.size()
grads = [np.full(16 * (i + 1), rank + i, np.float32) for i in range(TENSORS)]
for step in range(STEPS):
    if step == WARMUP:
        before = hvd.negotiation_stats()
    work = [g.copy() for g in grads]
    handles = [hvd.allreduce_async_(w, name=f"grad.{i}", op=hvd.Sum)
               for i, w in enumerate(work)]
    for i, handle in enumerate(handles):
        got = hvd.synchronize(handle)
        want = np.full(16 * (i + 1), sum(r + i for r in range(size)),
                       np.float32)
        assert np.array_equal(got, want), (step, i, got, want)
after = hvd.negotiation_stats()
print("STATS " + json.dumps({k: after[k] - before[k] for k in after}),
      flush=True)
hvd.shutdown()
