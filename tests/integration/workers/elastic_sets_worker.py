"""Process sets across an elastic reset. Three slots (ranks 0 and 1 on
localhost, 2 on 127.0.0.1) register the sets given as JSON in argv[2]; at
step 5 of the first generation rank 2 removes its host from the hosts file
(argv[1]), so the job shrinks to two ranks and hvd.init() re-creates the
sets for the new world. The three ranks train on until that happens (the
driver's HostsUpdated ends their generation), then to step 20. Every step
checks an allreduce in each set this rank is in against the sum of the
set's ranks."""

import json
import os
import sys
import time

import numpy as np

import hvd

hosts_file = sys.argv[1]
sets = [hvd.ProcessSet(ranks) for ranks in json.loads(sys.argv[2])]
hvd.init(process_sets=sets)
state = hvd.elastic.ObjectState(step=0)


# Bounds the wait for the driver to shrink the job (steps of ~0.05 s).
MAX_STEPS = 1000


@hvd.elastic.run
def train(state):
    # Every rank sees the same step and size, so all leave together.
    while state.step < 20 or hvd.size() == 3:
        if state.step == MAX_STEPS:
            sys.exit(f"rank {hvd.rank()}: still {hvd.size()} ranks after "
                     f"{MAX_STEPS} steps: the driver never removed the host "
                     f"that rank 2 took out of {hosts_file} at step 5")
        for ps in sets:
            if ps.included():
                got = hvd.allreduce(np.array([hvd.rank() + 1.0]), op=hvd.Sum,
                                    name="in.set", process_set=ps)
                want = sum(r + 1.0 for r in ps.ranks)
                assert got[0] == want, (ps, got, want)
        hvd.allreduce(np.ones(1), name="global")
        if state.step == 5 and hvd.size() == 3 and hvd.rank() == 2:
            with open(hosts_file + ".tmp", "w") as f:
                f.write("localhost:2\n")
            os.replace(hosts_file + ".tmp", hosts_file)
        state.step += 1
        time.sleep(0.05)  # paces the loop: simulated work
        state.commit()


try:
    train(state)
except hvd.RemovedFromJobError:
    sys.exit(0)
print(f"done size {hvd.size()} sets "
      f"{[(ps.process_set_id, ps.ranks) for ps in sets]}", flush=True)
