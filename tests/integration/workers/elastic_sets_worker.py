"""Process sets across an elastic reset. Three slots (ranks 0 and 1 on
localhost, 2 on 127.0.0.1) register the sets given as JSON in argv[2]; at
step 5 of the first generation rank 2 removes its host from the hosts file
(argv[1]), so the job shrinks to two ranks and hvd.init() re-creates the
sets for the new world. Every step checks an allreduce in each set this
rank is in against the sum of the set's ranks."""

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


@hvd.elastic.run
def train(state):
    while state.step < 20:
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
        time.sleep(0.2)  # so that the driver sees the change before the end
        state.commit()


try:
    train(state)
except hvd.RemovedFromJobError:
    sys.exit(0)
print(f"done size {hvd.size()} sets "
      f"{[(ps.process_set_id, ps.ranks) for ps in sets]}", flush=True)
