"""An elastic training loop driven by a scenario file (JSON, argv[1]):

    {"epochs": 4, "batches": 5, "log": "<dir>",
     "hosts_file": "<file the discovery script prints>",
     "discovery": {"<epoch>": "<hosts text>" | "<fail>", ...},  # by rank 0
     "exits": [{"slot": "127.0.0.1:0", "epoch": 1, "batch": 2,
                "how": "exception" | "kill" | "stop" | "pause"},
               {"slot": "localhost:0", "size": 4, "entries": 3,
                "how": ...}],
     "sleep": 0.05, "print": false, "payload": 0, "hold_until_size": 0,
     "hold_before_epoch": {"<epoch>": <size>, ...}}

Each process appends JSON lines to <log>/<slot>.<pid>.jsonl: one per batch
(after its allreduce), per half step once its allreduce is submitted,
commit, reset and the end, with its slot, start rank,
current rank and size, epoch, batch and how often it entered the elastic
loop. A scenario exit fires once per job (a marker file), so a restarted
slot does not fail again. The "model" is a running sum of allreduced ones:
after the job every survivor must hold the same value. A second "model",
`w`, must end equal to a single process applying the same steps once each
(model_after() below): step k's batch is samples k*B..k*B+B-1 whatever the
world size, each rank sums its share, the allreduce adds the shares, and
the update is order-sensitive and exact (integers modulo a prime).

"hold_until_size" keeps the trained-out job open until the world has that
many workers; "hold_before_epoch" holds the same way before an epoch starts
(before rank 0 writes that epoch's discovery), so that a scenario's host
change waits for the workers it counts on, however slowly they start.

With "payload" (elements), every batch first allreduces that many float32
values (rank + 1 from each rank) and logs whether the sum was right; an
exit with "during": "payload" fires while that allreduce is in flight
(after this rank submitted it), not after the step's first half. With
"cuda" too, the payload is a CUDA tensor reduced through NCCL, on device
(start rank modulo the GPUs), so that no two processes share one.

An exit with "size" instead of "epoch" and "batch" fires at the first
batch the slot trains in a world of that size after entering the elastic
loop "entries" times (it came back into that world after resets).

With "hold_until_size", the job does not end before the world has that
many workers: after the last epoch every rank keeps committing (a host
update can reach it there) until it has, at most 60 s.

With "print", each process also says "pid <pid> started" on stderr, "batch
<epoch>.<batch>" on stdout after each batch and "done" at the end.
"""

import json
import os
import signal
import sys
import time

import numpy as np

import hvd

scenario = json.load(open(sys.argv[1]))
slot = f"{os.environ['HOROVOD_HOSTNAME']}:{os.environ['HOROVOD_LOCAL_RANK']}"
start_rank = int(os.environ["HOROVOD_RANK"])
log_path = os.path.join(scenario["log"], f"{slot}.{os.getpid()}.jsonl")
entries = 0


def log(event, **fields):
    record = dict(event=event, slot=slot, start_rank=start_rank,
                  rank=hvd.rank(), size=hvd.size(), entries=entries,
                  time=time.time(), **fields)
    with open(log_path, "a") as f:
        f.write(json.dumps(record) + "\n")


def say(text, stream=sys.stdout):
    if scenario.get("print"):
        print(text, file=stream, flush=True)


def wait_for_resume(directory):
    """Writes <directory>/paused, then waits until <directory>/resume
    exists: the test cuts this host off meanwhile."""
    open(os.path.join(directory, "paused"), "w").close()
    while not os.path.exists(os.path.join(directory, "resume")):
        time.sleep(0.05)


def maybe_exit(epoch, batch, point="step"):
    for i, spec in enumerate(scenario.get("exits", [])):
        if spec["slot"] != slot or spec.get("during", "step") != point:
            continue
        if "epoch" in spec and (spec["epoch"], spec["batch"]) != (epoch, batch):
            continue
        if "size" in spec and (hvd.size() != spec["size"] or
                               entries < spec["entries"]):
            continue
        marker = os.path.join(scenario["log"], f"exit.{i}")
        if os.path.exists(marker):
            continue
        open(marker, "w").close()
        log("exit", how=spec["how"], epoch=epoch, batch=batch)
        if spec["how"] == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if spec["how"] == "stop":  # hung: alive, silent
            os.kill(os.getpid(), signal.SIGSTOP)
        if spec["how"] == "pause":  # until the test writes <log>/resume
            wait_for_resume(scenario["log"])
            continue
        raise SystemExit(17)


PRIME = 1_000_003
BATCH = 8


def sample(i):
    return (i * 7919) % 104729


def batch_sum(k, offset, rank=0, size=1):
    return sum(sample(i) + offset for i in range(k * BATCH, (k + 1) * BATCH)
               if i % size == rank)


def model_after(steps):
    w = 1
    for k in range(steps):
        w = (w * 3 + batch_sum(k, 0)) % PRIME
        w = (w * 5 + batch_sum(k, 1)) % PRIME
    return w


def update(w, multiplier, offset, name):
    """One half of a step: this rank's share of the batch, summed over ranks."""
    mine = batch_sum(state.step, offset, hvd.rank(), hvd.size())
    handle = hvd.allreduce_async(np.array([mine], np.int64), op=hvd.Sum,
                                 name=name)
    # Submitted: from here this rank can only wait for its peers.
    log("submitted", name=name, epoch=state.epoch, batch=state.batch)
    total = hvd.synchronize(handle)
    return (w * multiplier + int(total[0])) % PRIME


def check_payload(epoch, batch):
    if scenario.get("cuda"):
        import torch
        import hvd.torch as ht
        torch.cuda.set_device(start_rank % torch.cuda.device_count())
        mine = torch.full((scenario["payload"],), float(hvd.rank() + 1),
                          device="cuda")
        handle = ht.allreduce_async_(mine, op=ht.Sum, name="payload")
        maybe_exit(epoch, batch, "payload")
        got = ht.synchronize(handle).cpu().numpy()
    else:
        mine = np.full(scenario["payload"], hvd.rank() + 1, np.float32)
        handle = hvd.allreduce_async(mine, op=hvd.Sum, name="payload")
        maybe_exit(epoch, batch, "payload")
        got = hvd.synchronize(handle)
    want = hvd.size() * (hvd.size() + 1) / 2
    log("payload", epoch=epoch, batch=batch, ok=bool(np.all(got == want)))


say(f"pid {os.getpid()} started", sys.stderr)
hvd.init()
state = hvd.elastic.ObjectState(epoch=0, batch=0, total=0, commits=0, w=1,
                                step=0)


def on_reset():
    log("reset", epoch=state.epoch, batch=state.batch)


state.register_reset_callbacks([on_reset])


def hold_until_size(size):
    """Commits, without stepping, until the world has `size` workers, for at
    most 1200 commits (60 s): a host discovery added may take seconds to
    start on a loaded machine. A count, not a clock, bounds it, so every
    rank leaves at the same commit; a new world comes as a reset at one of
    them."""
    for _ in range(1200):
        if hvd.size() >= size:
            break
        time.sleep(0.05)
        state.commit()


@hvd.elastic.run
def train(state):
    global entries
    entries += 1
    while state.epoch < scenario["epochs"]:
        if state.batch == 0:
            hold_until_size(
                scenario.get("hold_before_epoch", {}).get(str(state.epoch), 0))
        if state.batch == 0 and hvd.rank() == 0:
            hosts = scenario.get("discovery", {}).get(str(state.epoch))
            if hosts == "<fail>":  # the discovery script's cat fails
                if os.path.exists(scenario["hosts_file"]):
                    os.remove(scenario["hosts_file"])
            elif hosts is not None:
                # Atomically: discovery must never read a half-written file
                # (an empty one means "no hosts").
                with open(scenario["hosts_file"] + ".new", "w") as f:
                    f.write(hosts)
                os.replace(scenario["hosts_file"] + ".new",
                           scenario["hosts_file"])
        while state.batch < scenario["batches"]:
            if scenario.get("payload"):
                check_payload(state.epoch, state.batch)
            ones = hvd.allreduce(np.ones(1, np.int64), op=hvd.Sum,
                                 name="grad")
            state.total += int(ones[0])
            # A failure between the two halves leaves the survivors with a
            # half-applied step that only restore() undoes.
            state.w = update(state.w, 3, 0, "model.a")
            maybe_exit(state.epoch, state.batch)
            state.w = update(state.w, 5, 1, "model.b")
            state.step += 1
            log("batch", epoch=state.epoch, batch=state.batch,
                total=state.total)
            say(f"batch {state.epoch}.{state.batch}")
            state.batch += 1
            time.sleep(scenario.get("sleep", 0.05))
            state.commits += 1
            state.commit()
        state.epoch += 1
        state.batch = 0
        state.commit()
    # Trained out, the job stays open until the world has "hold_until_size"
    # workers.
    hold_until_size(scenario.get("hold_until_size", 0))
    log("done", epoch=state.epoch, total=state.total, commits=state.commits,
        w=state.w, step=state.step,
        reference=model_after(scenario["epochs"] * scenario["batches"]))
    say("done")


train(state)
