"""Training throughput of a small conv net on synthetic images.

The run a Horovod user knows from Horovod's PyTorch synthetic benchmark:
every worker trains the same model on random images for a number of timed
iterations and prints images per second; rank 0 prints the mean over the
iterations and the total of all workers. Nothing is downloaded: the model
is a small conv net defined here and the data is random.

    build/launcher/hvdrun -np 2 /usr/bin/python3 \\
        examples/torch_synthetic_benchmark.py --use-adasum

``--use-adasum`` combines the workers' updates with Adasum instead of
averaging their gradients (docs/horovod.md, "Adasum"); ``--fp16-allreduce``
sends the gradients (or updates) as float16.
"""

import argparse
import time

import torch
import torch.nn.functional as F

import hvd.torch as hvd


class SmallConvNet(torch.nn.Module):
    """Two convolutions and a linear classifier over 3x32x32 images."""

    def __init__(self, classes: int):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 16, kernel_size=3, padding=1)
        self.conv2 = torch.nn.Conv2d(16, 32, kernel_size=3, padding=1)
        self.fc = torch.nn.Linear(32 * 8 * 8, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fp16-allreduce", action="store_true",
                        help="send gradients (or updates) as float16")
    parser.add_argument("--use-adasum", action="store_true",
                        help="combine the updates with Adasum")
    parser.add_argument("--batch-size", type=int, default=32,
                        help="images per worker per step")
    parser.add_argument("--num-warmup-batches", type=int, default=5,
                        help="steps before the timed iterations")
    parser.add_argument("--num-batches-per-iter", type=int, default=5,
                        help="steps per timed iteration")
    parser.add_argument("--num-iters", type=int, default=5,
                        help="timed iterations")
    parser.add_argument("--classes", type=int, default=10)
    args = parser.parse_args()

    hvd.init()
    torch.manual_seed(1234)
    model = SmallConvNet(args.classes)
    # Averaged gradients add up to size() times one worker's batch, hence
    # the larger rate; Adasum's combined update keeps one worker's scale.
    lr_scaler = 1 if args.use_adasum else hvd.size()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01 * lr_scaler,
                                momentum=0.9)
    optimizer = hvd.DistributedOptimizer(
        optimizer, named_parameters=model.named_parameters(),
        compression=(hvd.Compression.fp16 if args.fp16_allreduce
                     else hvd.Compression.none),
        op=hvd.Adasum if args.use_adasum else hvd.Average)
    # Every worker starts from rank 0's weights and optimizer state; the
    # optimizer has not stepped yet, so each worker creates its state
    # first, by a step of its own (no collective).
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)

    images = torch.randn(args.batch_size, 3, 32, 32)
    labels = torch.randint(0, args.classes, (args.batch_size,))

    def train_step() -> None:
        optimizer.zero_grad()
        F.cross_entropy(model(images), labels).backward()
        optimizer.step()

    def say(text: str) -> None:
        if hvd.rank() == 0:
            print(text, flush=True)

    say(f"model: SmallConvNet, batch size {args.batch_size}, "
        f"{hvd.size()} worker(s), "
        f"{'Adasum' if args.use_adasum else 'Average'}"
        f"{', fp16' if args.fp16_allreduce else ''}")
    for _ in range(args.num_warmup_batches):
        train_step()
    rates = []
    for i in range(args.num_iters):
        start = time.perf_counter()
        for _ in range(args.num_batches_per_iter):
            train_step()
        elapsed = time.perf_counter() - start
        rate = args.batch_size * args.num_batches_per_iter / elapsed
        say(f"iteration {i}: {rate:.1f} img/sec per worker")
        rates.append(rate)
    mean = sum(rates) / len(rates)
    spread = 1.96 * torch.tensor(rates).std().item() if len(rates) > 1 else 0
    say(f"img/sec per worker: {mean:.1f} +-{spread:.1f}")
    say(f"total img/sec on {hvd.size()} worker(s): {hvd.size() * mean:.1f} "
        f"+-{hvd.size() * spread:.1f}")
    hvd.shutdown()


if __name__ == "__main__":
    main()
