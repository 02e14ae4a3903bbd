"""An elastic job whose state overrides on_hosts_updated, as a Horovod
user's State subclass may, for test_elastic.py.

    host_update_listener_worker.py <log dir> <hosts file> <grown hosts>

The job starts on 2 slots. Rank 0 of that world writes <grown hosts> (two
more slots) into the file the discovery script prints after its first
commit; every rank keeps committing until the driver's update interrupts
it, then joins the grown world and ends there. Each process writes
<log dir>/<slot>.<pid>.json at its end: its slot, what its state saw in
order (["update", timestamp, update_res] for each on_hosts_updated call,
["interrupt", commits] for each HostsUpdatedInterrupt) and its last world
size.
"""

import json
import os
import sys

import numpy as np

import hvd

log_dir, hosts_file, grown_hosts = sys.argv[1:4]
GROWN_SIZE = 4
slot = f"{os.environ['HOROVOD_HOSTNAME']}:{os.environ['HOROVOD_LOCAL_RANK']}"
seen = []


class ListeningState(hvd.elastic.ObjectState):
    def on_hosts_updated(self, timestamp, update_res):
        seen.append(["update", timestamp, int(update_res)])
        super().on_hosts_updated(timestamp, update_res)


@hvd.elastic.run
def train(state):
    while hvd.size() < GROWN_SIZE:
        hvd.allreduce(np.ones(1), name="step")
        state.commits += 1
        if state.commits == 1 and hvd.rank() == 0:
            with open(hosts_file, "w") as f:
                f.write(grown_hosts)
        try:
            state.commit()
        except hvd.HostsUpdatedInterrupt:
            seen.append(["interrupt", state.commits])
            raise


hvd.init()
train(ListeningState(commits=0))
with open(os.path.join(log_dir, f"{slot}.{os.getpid()}.json"), "w") as f:
    json.dump({"slot": slot, "seen": seen, "size": hvd.size()}, f)
