"""Elastic data-parallel training: survives workers failing and hosts
joining or leaving while it trains.

    build/launcher/hvdrun -np 2 --min-np 1 --max-np 8 \
        --host-discovery-script discover.sh \
        /usr/bin/python3 examples/torch_elastic_train.py

The model, optimizer, sampler progress and counters live in a TorchState:
commit() every few steps saves them (a failure rolls back to there) and is
where every rank learns, together, that hosts changed. After each reset
the new world gets rank 0's state and the sampler re-shards what is left of
the epoch, so every sample of an epoch is trained on once.

With --trace-steps every rank prints its first step after each start and
reset: its rank, the world size, its pid and host, and the time.time() of
that step (scripts/demo.sh measures recovery from these lines).
"""

import argparse
import os
import socket
import time

import torch
import torch.nn.functional as F

import hvd.torch as hvd


def make_dataset(samples, features, classes):
    g = torch.Generator().manual_seed(1234)
    centres = torch.randn(classes, features, generator=g) * 2
    x = torch.randn(samples, features, generator=g) * 1.5
    return torch.utils.data.TensorDataset(x, torch.cdist(x, centres).argmin(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.02)
    parser.add_argument("--commit-every", type=int, default=4)
    parser.add_argument("--step-delay", type=float, default=0.0,
                        help="seconds of pretend work per step (demo)")
    parser.add_argument("--trace-steps", action="store_true",
                        help="every rank prints its first step after each "
                        "start and reset, with pid, host and time")
    args = parser.parse_args()

    hvd.init()
    dataset = make_dataset(samples=4096, features=16, classes=4)
    model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(),
                                torch.nn.Linear(64, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr * hvd.size(),
                                momentum=0.9)
    optimizer = hvd.DistributedOptimizer(
        optimizer, named_parameters=model.named_parameters())
    sampler = hvd.elastic.ElasticSampler(dataset, shuffle=True, seed=7)
    loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch_size,
                                         sampler=sampler)
    state = hvd.elastic.TorchState(model, optimizer, sampler=sampler,
                                   epoch=0, batch=0)

    def on_reset():
        # More workers, bigger global batch: scale the learning rate.
        for group in optimizer.param_groups:
            group["lr"] = args.lr * hvd.size()
        if hvd.rank() == 0:
            print(f"reset: continuing with {hvd.size()} workers at epoch "
                  f"{state.epoch}, batch {state.batch}", flush=True)

    state.register_reset_callbacks([on_reset])

    @hvd.elastic.run
    def train(state):
        traced = not args.trace_steps
        while state.epoch < args.epochs:
            started = time.monotonic()
            for i, (x, y) in enumerate(loader):
                optimizer.zero_grad()
                F.cross_entropy(model(x), y).backward()
                optimizer.step()
                if not traced:
                    traced = True
                    print(f"first step: rank {hvd.rank()} of {hvd.size()}, "
                          f"pid {os.getpid()} on {socket.gethostname()}, "
                          f"at {time.time():.3f}", flush=True)
                state.sampler.record_batch(i, args.batch_size)
                state.batch += 1
                time.sleep(args.step_delay)
                if state.batch % args.commit_every == 0:
                    state.commit()
            with torch.no_grad():
                x, y = dataset.tensors
                loss = hvd.allreduce(F.cross_entropy(model(x), y),
                                     name="epoch_loss")
            if hvd.rank() == 0:
                print(f"epoch {state.epoch}: loss {loss.item():.4f}, "
                      f"{hvd.size()} workers, "
                      f"{time.monotonic() - started:.1f} s", flush=True)
            state.epoch += 1
            state.batch = 0
            state.sampler.set_epoch(state.epoch)
            state.commit()

    train(state)
    if hvd.rank() == 0:
        print("training finished", flush=True)


if __name__ == "__main__":
    main()
