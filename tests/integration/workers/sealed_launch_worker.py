"""A worker of the sealed-launch test (test_slurm_sealed.py): writes what
reached it only through the launch message (its HVD_WORKER_KEY and the
job's HVD_TEST_CANARY) to a file of its own in the working directory,
never to its output (a step's output crosses the network in clear), then
takes part in one allreduce."""

import json
import os
import sys

given = {name: os.environ.get(name)
         for name in ("HVD_WORKER_KEY", "HVD_TEST_CANARY")}

import hvd  # noqa: E402

hvd.init()
path = f"given.{hvd.rank()}.json"
with open(path + ".part", "w") as out:
    json.dump(given, out)
os.replace(path + ".part", path)
total = hvd.allreduce([1.0], op=hvd.Sum, name="count")
print(f"rank {hvd.rank()}/{hvd.size()}: sum {list(total)}", flush=True)
hvd.shutdown()
sys.exit(0)
