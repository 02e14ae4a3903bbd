"""An elastic worker for test_control_plane_attack.py.

argv[1] is a JSON file: {"log": "<dir>", "stop_file": "<path>"}. The worker
trains in small steps (an allreduce, a commit) until the stop file exists,
and appends JSON lines to <log>/<slot>.<pid>.jsonl, each with the wall-clock
time:
  "push"      its notification server has just heard of a generation it
              has not joined (a HostsUpdated from the driver);
  "interrupt" state.commit() raised HostsUpdatedInterrupt;
  "reset"     hvd.init() of the next generation is done (reset callback);
  "done"      the job is over for this worker.
The test measures push and re-init times from these records.
"""

import json
import os
import sys
import threading
import time

import numpy as np

import hvd
from hvd._core import core

config = json.load(open(sys.argv[1]))
slot = f"{os.environ['HOROVOD_HOSTNAME']}:{os.environ['HOROVOD_LOCAL_RANK']}"
log_path = os.path.join(config["log"], f"{slot}.{os.getpid()}.jsonl")
log_lock = threading.Lock()


def log(event, **fields):
    record = dict(event=event, slot=slot, time=time.time(), **fields)
    with log_lock, open(log_path, "a") as f:
        f.write(json.dumps(record) + "\n")


def watch_pushes():
    """Notes when a HostsUpdated arrives; polls a counter the notification
    server sets, every 5 ms, for the life of the process."""
    seen = 0
    while True:
        announced = core.pending_hosts_update()
        if announced > seen:
            log("push", generation=announced)
            seen = announced
        time.sleep(0.005)


hvd.init()
log("init", rank=hvd.rank(), size=hvd.size())
threading.Thread(target=watch_pushes, daemon=True).start()

state = hvd.elastic.ObjectState(step=0)
state.register_reset_callbacks(
    [lambda: log("reset", rank=hvd.rank(), size=hvd.size())])


@hvd.elastic.run
def train(state):
    while True:
        hvd.allreduce(np.ones(1, np.float32), name="grad")
        state.step += 1
        stop = hvd.allreduce(
            np.array([os.path.exists(config["stop_file"])], np.int64),
            op=hvd.Max, name="stop")
        if stop[0]:
            return
        time.sleep(0.02)
        try:
            state.commit()
        except hvd.HostsUpdatedInterrupt:
            log("interrupt")
            raise


train(state)
log("done", step=state.step)
