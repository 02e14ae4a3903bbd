"""Data-parallel training of a small MLP on a synthetic classification set.

Every worker builds the same data set from a fixed seed and trains on its
own shard (rank r takes every size-th sample starting at r); gradients are
averaged by hvd's DistributedOptimizer. Rank 0 prints the loss over the
whole data set after every epoch.

    build/launcher/hvdrun -np 2 /usr/bin/python3 \
        examples/torch_synthetic_train.py
"""

import argparse

import torch
import torch.nn.functional as F

import hvd.torch as hvd


def make_dataset(samples: int, features: int, classes: int):
    """Points labelled by the nearest of `classes` random centres."""
    g = torch.Generator().manual_seed(1234)
    centres = torch.randn(classes, features, generator=g) * 2
    x = torch.randn(samples, features, generator=g) * 1.5
    y = torch.cdist(x, centres).argmin(dim=1)
    return x, y


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32,
                        help="samples per worker per step")
    parser.add_argument("--lr", type=float, default=0.05,
                        help="learning rate of one worker; scaled by size")
    args = parser.parse_args()

    hvd.init()
    # Different on purpose: the broadcast below makes the models equal.
    torch.manual_seed(hvd.rank())

    x, y = make_dataset(samples=4096, features=16, classes=4)
    x_shard, y_shard = x[hvd.rank()::hvd.size()], y[hvd.rank()::hvd.size()]

    model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(),
                                torch.nn.Linear(64, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr * hvd.size(),
                                momentum=0.9)
    # Start every worker from rank 0's weights and optimizer state.
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    optimizer = hvd.DistributedOptimizer(
        optimizer, named_parameters=model.named_parameters())

    steps = len(x_shard) // args.batch_size
    for epoch in range(1, args.epochs + 1):
        order = torch.randperm(len(x_shard),
                               generator=torch.Generator().manual_seed(epoch))
        model.train()
        for step in range(steps):
            idx = order[step * args.batch_size:(step + 1) * args.batch_size]
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x_shard[idx]), y_shard[idx])
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            # Each worker's loss on its shard, averaged: the loss on all data.
            local = F.cross_entropy(model(x_shard), y_shard)
            accuracy = (model(x_shard).argmax(1) == y_shard).float().mean()
            stats = hvd.allreduce(torch.stack([local, accuracy]),
                                  name="epoch_stats", op=hvd.Average)
        if hvd.rank() == 0:
            print(f"epoch {epoch}: loss {stats[0].item():.4f} "
                  f"accuracy {stats[1].item():.3f}", flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
