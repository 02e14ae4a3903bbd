"""ElasticSampler through a real failure: logs, per step, the sample
indices this rank trained on and whether that step was committed. argv:
log directory, the slot to fail, the step (global batch count) to fail it
at, and how (default "kill": SIGKILL; "pause": write <log>/paused and wait
for <log>/resume, while the test cuts the host off). One commit per step,
so a step is committed exactly when the next "commit" record follows it."""

import json
import os
import signal
import sys
import time

import torch

import hvd.torch as hvd

log_dir, victim, kill_at = sys.argv[1], sys.argv[2], int(sys.argv[3])
how = sys.argv[4] if len(sys.argv) > 4 else "kill"
slot = f"{os.environ['HOROVOD_HOSTNAME']}:{os.environ['HOROVOD_LOCAL_RANK']}"
log_path = os.path.join(log_dir, f"{slot}.{os.getpid()}.jsonl")
N, BATCH, EPOCHS = 96, 4, 2


def log(**record):
    with open(log_path, "a") as f:
        f.write(json.dumps(dict(slot=slot, pid=os.getpid(), **record)) + "\n")


hvd.init()
dataset = torch.utils.data.TensorDataset(torch.arange(N))
sampler = hvd.elastic.ElasticSampler(dataset, shuffle=True, seed=3)
loader = torch.utils.data.DataLoader(dataset, batch_size=BATCH,
                                     sampler=sampler)
model = torch.nn.Linear(1, 1)
state = hvd.elastic.TorchState(model, sampler=sampler, epoch=0, steps=0)


@hvd.elastic.run
def train(state):
    while state.epoch < EPOCHS:
        for i, (x,) in enumerate(loader):
            hvd.allreduce(torch.ones(1), name="step")
            if slot == victim and state.steps == kill_at and \
                    not os.path.exists(os.path.join(log_dir, "killed")):
                open(os.path.join(log_dir, "killed"), "w").close()
                if how == "kill":
                    os.kill(os.getpid(), signal.SIGKILL)
                open(os.path.join(log_dir, "paused"), "w").close()
                while not os.path.exists(os.path.join(log_dir, "resume")):
                    time.sleep(0.05)
            log(event="step", epoch=state.epoch, size=hvd.size(),
                indices=x.tolist())
            state.sampler.record_batch(i, BATCH)
            state.steps += 1
            time.sleep(0.02)
            state.commit()
            log(event="commit", epoch=state.epoch)
        state.epoch += 1
        state.sampler.set_epoch(state.epoch)
        state.commit()


train(state)
log(event="done")
