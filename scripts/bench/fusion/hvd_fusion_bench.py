"""hvd side of the fusion benchmark (run.sh): numpy float32 tensors summed
in place through the whole runtime. Started by hvdrun:

    hvdrun -np N python3 hvd_fusion_bench.py [--variant async|grouped] \\
        [--workload resnet50|tiny] [--steps S] [--tail T] [--label L]

async:   every tensor submitted with hvd.allreduce_async_ (named grad.<i>,
         the same names every step, as in training), then all synchronized:
         fusion and the response cache do the batching.
grouped: one hvd.grouped_allreduce_ (or grouped_allreduce) call per step;
         exits with a note when this hvd has no grouped allreduce.
views:   as async, but the tensors are views of one flat buffer, laid out
         in the order they are submitted: the layout DistributedOptimizer
         gives gradients after its first step, which fused allreduces
         reduce in place.
Tuning (cache, autotune) comes from the environment hvdrun gives. The method
is step_method.py's; rank 0 prints one JSON line.
"""

import os
import sys

import numpy as np

import hvd

import step_method


class HvdBackend:
    def __init__(self, variant: str):
        self.variant = variant
        self.grouped_in_place = getattr(hvd, "grouped_allreduce_", None)
        self.grouped = getattr(hvd, "grouped_allreduce", None)

    def buffers(self, shapes, value):
        if self.variant != "views":
            return [np.full(s, value, dtype=np.float32) for s in shapes]
        sizes = [int(np.prod(s)) for s in shapes]
        flat = np.full(sum(sizes), value, dtype=np.float32)
        offsets = np.cumsum([0] + sizes)
        return [flat[a:b].reshape(s)
                for a, b, s in zip(offsets, offsets[1:], shapes)]

    def zero(self, bufs):
        for b in bufs:
            b.fill(0)

    def negotiation_seconds(self):
        return hvd.negotiation_stats()["negotiation_seconds"]

    def ends(self, buf):
        flat = buf.reshape(-1)
        return [float(flat[0]), float(flat[-1])]

    def step(self, bufs):
        if self.variant in ("async", "views"):
            handles = [hvd.allreduce_async_(b, name=f"grad.{i}", op=hvd.Sum)
                       for i, b in enumerate(bufs)]
            for h in handles:
                hvd.synchronize(h)
        elif self.grouped_in_place is not None:
            self.grouped_in_place(bufs, name="grads", op=hvd.Sum)
        else:  # out of place: the results become the gradients
            bufs[:] = self.grouped(bufs, name="grads", op=hvd.Sum)


def main() -> None:
    args = step_method.parse_args(
        "hvd", sys.argv[1:],
        lambda p: p.add_argument("--variant", choices=("async", "grouped", "views"),
                                 default="async"))
    if args.variant == "grouped" and not hasattr(hvd, "grouped_allreduce"):
        print("note: this hvd has no grouped_allreduce; variant skipped",
              file=sys.stderr)
        return
    fields = {}
    log = os.environ.get("HOROVOD_AUTOTUNE_LOG")
    if os.environ.get("HOROVOD_AUTOTUNE") and log:
        fields["autotune_log"] = os.path.basename(log)
    hvd.init()
    step_method.run(HvdBackend(args.variant), hvd.rank(), hvd.size(), args,
                    **fields)
    hvd.shutdown()


if __name__ == "__main__":
    main()
