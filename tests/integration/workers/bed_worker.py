"""A static job on the test bed's hosts: every collective and op checked
against numpy (collectives_worker, ops_worker), then one line
`ENV {json}` with what this worker's host and environment look like
(and `given_key`: the HVD_WORKER_KEY hvdrun gave it, which importing hvd
takes out of the environment)."""

import json
import os
import socket
import sys

given_key = os.environ.get("HVD_WORKER_KEY")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import collectives_worker  # noqa: E402
import ops_worker  # noqa: E402

import hvd  # noqa: E402

collectives_worker.main()
sys.argv = [sys.argv[0], "ops"]
ops_worker.main()
hvd.init()
names = ["PATH", "PYTHONPATH", "LD_LIBRARY_PATH", "HVD_TEST_USER_VARIABLE",
         "HVD_TEST_EXPORTED", "HVD_TEST_EXPORTED_BY_NAME", "HOSTNAME",
         "SSH_CONNECTION", "HOROVOD_HOSTNAME", "SLURM_JOB_ID", "SLURM_STEP_ID",
         "HVD_SECRET_KEY", "HVD_WORKER_KEY"]
print("ENV " + json.dumps(dict(
    rank=hvd.rank(), host=socket.gethostname(), cwd=os.getcwd(),
    own_name=socket.gethostbyname(socket.gethostname()), given_key=given_key,
    env={name: os.environ.get(name) for name in names})), flush=True)
hvd.shutdown()
