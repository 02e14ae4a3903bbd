"""Elastic benchmark worker, run by scenario.py under hvdrun.

    elastic_worker.py CONFIG.json

CONFIG (written by scenario.py):

    {"mode": "recovery" | "scaleup" | "commit",
     "log": "<dir>",                  # one JSON-lines file per process here
     "compute": 0.02,                 # seconds of "compute" (sleep) per step
     "grad_floats": 65536,            # allreduced per step (recovery, scaleup)
     "victims": ["127.0.0.1:0"],      # recovery: slots that SIGKILL themselves
     "kill_step": 30,                 # ... once, right after this commit
     "hosts_file": "...", "hosts_after": "...",   # scaleup: rank 0 writes
     "join_step": 30,                 # ... hosts_after at this step
     "joiner_imports_torch": true,    # the new worker imports torch first
     "final_size": 3,                 # stop 'tail_steps' after reaching it
     "tail_steps": 15, "max_steps": 3000,
     "state": "object" | "torch",     # commit mode
     "warmup": 5, "steps": 30, "hidden": 1024}  # commit mode

Every record is one JSON line with the wall-clock time (time.time()), the
slot, the pid, the generation's rank and size, and the event:

* proc_start (first line of the script, before any import), imported,
  init_done (first hvd.init() returned);
* step (after the step's allreduce), commit (its duration, and for commit
  mode the save() and host-update-check parts);
* error (HorovodInternalError caught: restore() called), shutdown_start,
  shutdown_done, init_done, reset (reset callbacks), sync_start, sync_done;
* kill (a victim, just before it SIGKILLs itself), hosts_written (rank 0,
  scaleup, just after the hosts file is rewritten), done.

The instrumentation wraps hvd.basics.shutdown/init and the state's
restore/sync/save/check_host_updates; hvd.elastic.run itself is unchanged.
"""

import time

T_PROC_START = time.time()

import json  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402

CONFIG = json.load(open(sys.argv[1]))
MODE = CONFIG["mode"]
USE_TORCH = MODE == "commit"
# Scale-up: the joiner (started after rank 0 rewrote the hosts file)
# imports torch first, as a torch job's new worker would; the workers that
# were there from the start skip it, which changes no measured figure.
JOINER = MODE == "scaleup" and os.path.exists(
    CONFIG["hosts_file"] + ".written")
if USE_TORCH or (JOINER and CONFIG.get("joiner_imports_torch")):
    import torch  # noqa: E402
if USE_TORCH:
    import hvd.torch as hvd  # noqa: E402
    torch.set_num_threads(1)
else:
    import hvd  # noqa: E402
import hvd.basics as hvd_basics  # noqa: E402

T_IMPORTED = time.time()

SLOT = f"{os.environ['HOROVOD_HOSTNAME']}:{os.environ['HOROVOD_LOCAL_RANK']}"
LOG_PATH = os.path.join(CONFIG["log"], f"{SLOT}.{os.getpid()}.jsonl")
_log_file = open(LOG_PATH, "a", buffering=1)


def log(event, t=None, **fields):
    try:
        rank, size = hvd.rank(), hvd.size()
    except Exception:  # not initialized (between shutdown and init)
        rank, size = -1, -1
    record = dict(event=event, time=time.time() if t is None else t,
                  slot=SLOT, pid=os.getpid(), rank=rank, size=size, **fields)
    _log_file.write(json.dumps(record) + "\n")


# --- instrumentation of the reset path (hvd.elastic.run calls
# basics.shutdown() and basics.init() through the module) ---------------
_orig_shutdown, _orig_init = hvd_basics.shutdown, hvd_basics.init


def _timed_shutdown():
    log("shutdown_start")
    _orig_shutdown()
    log("shutdown_done")


def _timed_init():
    _orig_init()
    log("init_done")


hvd_basics.shutdown = _timed_shutdown
hvd_basics.init = _timed_init


def instrument(state_cls):
    """A subclass of state_cls logging restore/sync and timing commits."""

    class Timed(state_cls):
        def restore(self):
            log("error")
            super().restore()

        def sync(self):
            log("sync_start")
            super().sync()
            log("sync_done")

        def save(self):
            t = time.perf_counter()
            super().save()
            self._t_save = time.perf_counter() - t

        def check_host_updates(self):
            t = time.perf_counter()
            try:
                super().check_host_updates()
            finally:
                self._t_check = time.perf_counter() - t

    return Timed


# --- recovery and scale-up: a numpy "model" and a sleep as compute ------


def run_steps():
    grad = np.ones(CONFIG.get("grad_floats", 65536), np.float32)
    state = instrument(hvd.elastic.ObjectState)(
        step=0, weights=np.zeros_like(grad), stop_at=None)
    state.register_reset_callbacks([lambda: log("reset")])
    victims = set(CONFIG.get("victims", []))
    marker = os.path.join(CONFIG["log"], f"killed.{SLOT}")

    @hvd.elastic.run
    def train(state):
        if state.stop_at is None and hvd.size() == CONFIG["final_size"] and \
                state.step > 0:
            # Every rank computes the same value from the synced step.
            state.stop_at = state.step + CONFIG["tail_steps"]
        while state.step < CONFIG["max_steps"] and (
                state.stop_at is None or state.step < state.stop_at):
            if SLOT in victims and state.step == CONFIG["kill_step"] and \
                    not os.path.exists(marker):
                open(marker, "w").close()
                log("kill", step=state.step)
                os.kill(os.getpid(), signal.SIGKILL)
            if MODE == "scaleup" and hvd.rank() == 0 and \
                    state.step == CONFIG["join_step"] and \
                    not os.path.exists(CONFIG["hosts_file"] + ".written"):
                with open(CONFIG["hosts_file"] + ".tmp", "w") as f:
                    f.write(CONFIG["hosts_after"])
                os.replace(CONFIG["hosts_file"] + ".tmp", CONFIG["hosts_file"])
                log("hosts_written", step=state.step)
                open(CONFIG["hosts_file"] + ".written", "w").close()
            time.sleep(CONFIG["compute"])
            out = hvd.allreduce(grad, op=hvd.Average, name="grad")
            state.weights += out
            state.step += 1
            log("step", step=state.step)
            t = time.perf_counter()
            state.commit()
            log("commit", step=state.step, seconds=time.perf_counter() - t)
        log("done", step=state.step)

    train(state)


# --- commit overhead: an MLP step with DistributedOptimizer -------------


def run_commit():
    torch.manual_seed(0)
    hidden = CONFIG.get("hidden", 1024)
    model = torch.nn.Sequential(
        torch.nn.Linear(hidden, hidden), torch.nn.ReLU(),
        torch.nn.Linear(hidden, hidden), torch.nn.ReLU(),
        torch.nn.Linear(hidden, 10))
    params = sum(p.numel() for p in model.parameters())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    optimizer = hvd.DistributedOptimizer(
        optimizer, named_parameters=model.named_parameters())
    x = torch.randn(CONFIG.get("batch", 32), hidden)
    y = torch.randint(0, 10, (x.shape[0],))
    if CONFIG["state"] == "torch":
        state = instrument(hvd.elastic.TorchState)(
            model=model, optimizer=optimizer, epoch=0, batch=0)
    else:
        state = instrument(hvd.elastic.ObjectState)(epoch=0, batch=0,
                                                    loss=0.0)
    total = CONFIG["warmup"] + CONFIG["steps"]

    @hvd.elastic.run
    def train(state):
        while state.batch < total:
            t0 = time.perf_counter()
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            t1 = time.perf_counter()
            state.batch += 1
            state.commit()
            t2 = time.perf_counter()
            if state.batch > CONFIG["warmup"]:
                log("commit_step", step=state.batch, step_seconds=t1 - t0,
                    commit_seconds=t2 - t1, save_seconds=state._t_save,
                    check_seconds=state._t_check, params=params)
        log("done", step=state.batch)

    train(state)


log("proc_start", t=T_PROC_START)
log("imported", t=T_IMPORTED)
hvd.init()
log("init_done")
if MODE == "commit":
    run_commit()
else:
    run_steps()
