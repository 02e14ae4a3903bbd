"""torch.distributed (backend gloo) side of the allreduce benchmark
(run.sh). Started by hvdrun, which gives each worker HOROVOD_RANK and
HOROVOD_SIZE; torch meets through its own store at --init-method:

    hvdrun -np N python3 torch_allreduce_bench.py \\
        --init-method tcp://127.0.0.1:PORT [--sizes B,...] [--min-seconds S]

The method is bench_method.py's; one JSON line per size from rank 0.
"""

import os
import sys

import torch
import torch.distributed as dist

import bench_method


class TorchBackend:
    def buffer(self, elements: int, value: float) -> torch.Tensor:
        return torch.full((elements,), value, dtype=torch.float32)

    def zero(self, buf: torch.Tensor) -> None:
        buf.zero_()

    def ends(self, buf: torch.Tensor):
        return [buf[0].item(), buf[-1].item()]

    def allreduce(self, buf: torch.Tensor, name: str) -> None:
        dist.all_reduce(buf)


def main() -> None:
    args = bench_method.parse_args(
        "torch", sys.argv[1:],
        lambda p: p.add_argument(
            "--init-method", required=True,
            help="torch.distributed init method, e.g. tcp://127.0.0.1:PORT"))
    rank = int(os.environ["HOROVOD_RANK"])
    size = int(os.environ["HOROVOD_SIZE"])
    dist.init_process_group("gloo", init_method=args.init_method, rank=rank,
                            world_size=size)
    bench_method.run("torch", TorchBackend(), rank, size, args)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
