"""torch.distributed (backend gloo) side of the fusion benchmark (run.sh).
Started by hvdrun, which gives each worker HOROVOD_RANK and HOROVOD_SIZE;
torch meets through its own store at --init-method:

    hvdrun -np N python3 torch_fusion_bench.py --init-method tcp://H:P \\
        [--variant per-tensor|buckets] [--workload ...] [--steps S]

per-tensor: dist.all_reduce(async_op=True) on every tensor, then wait all.
buckets:    DDP's way: tensors in reverse order packed into flat buckets (the
            first --first-bucket-mb, then --bucket-mb each, as DDP's
            bucket_cap_mb=25 assigns them), each copied in, reduced with one
            async all_reduce, and copied back out after all are done.
The method is step_method.py's; rank 0 prints one JSON line.
"""

import os
import sys

import torch
import torch.distributed as dist

import step_method
from resnet50_shapes import elements


class PerTensor:
    def buffers(self, shapes, value):
        return [torch.full(s, value, dtype=torch.float32) for s in shapes]

    def zero(self, bufs):
        for b in bufs:
            b.zero_()

    def ends(self, buf):
        flat = buf.view(-1)
        return [flat[0].item(), flat[-1].item()]

    def step(self, bufs):
        works = [dist.all_reduce(b, async_op=True) for b in bufs]
        for w in works:
            w.wait()


class Buckets(PerTensor):
    def __init__(self, shapes, first_bucket_bytes: int, bucket_bytes: int):
        # DDP's assignment: reverse order, a bucket closes once it reaches
        # its limit. Entries: [flat buffer (made by buffers()), indices].
        self.buckets = []
        members, nbytes = [], 0
        for i in reversed(range(len(shapes))):
            members.append(i)
            nbytes += 4 * elements(shapes[i])
            limit = bucket_bytes if self.buckets else first_bucket_bytes
            if nbytes >= limit or i == 0:
                self.buckets.append([None, members])
                members, nbytes = [], 0

    def buffers(self, shapes, value):
        bufs = super().buffers(shapes, value)
        for bucket in self.buckets:
            n = sum(bufs[i].numel() for i in bucket[1])
            bucket[0] = torch.empty(n, dtype=torch.float32)
        return bufs

    def step(self, bufs):
        works = []
        for flat, members in self.buckets:
            offset = 0
            for i in members:
                n = bufs[i].numel()
                flat[offset:offset + n].copy_(bufs[i].view(-1))
                offset += n
            works.append(dist.all_reduce(flat, async_op=True))
        for w in works:
            w.wait()
        for flat, members in self.buckets:
            offset = 0
            for i in members:
                n = bufs[i].numel()
                bufs[i].view(-1).copy_(flat[offset:offset + n])
                offset += n


def main() -> None:
    def extra(p):
        p.add_argument("--init-method", required=True,
                       help="torch.distributed init method, tcp://HOST:PORT")
        p.add_argument("--variant", choices=("per-tensor", "buckets"),
                       default="per-tensor")
        p.add_argument("--bucket-mb", type=float, default=25)
        p.add_argument("--first-bucket-mb", type=float, default=1)

    args = step_method.parse_args("torch", sys.argv[1:], extra)
    rank = int(os.environ["HOROVOD_RANK"])
    size = int(os.environ["HOROVOD_SIZE"])
    dist.init_process_group("gloo", init_method=args.init_method, rank=rank,
                            world_size=size)
    fields = {}
    if args.variant == "buckets":
        backend = Buckets(step_method.workload_shapes(args),
                          int(args.first_bucket_mb * 2**20),
                          int(args.bucket_mb * 2**20))
        fields["buckets"] = len(backend.buckets)
    else:
        backend = PerTensor()
    step_method.run(backend, rank, size, args, **fields)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
