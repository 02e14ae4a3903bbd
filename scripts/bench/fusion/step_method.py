"""The step-time method of scripts/bench/fusion, shared by
hvd_fusion_bench.py and torch_fusion_bench.py; `hvd_gloo_allreduce_bench
--steps` (scripts/bench/allreduce) is its C++ twin for one flat buffer.

A workload is a list of float32 tensors, every one summed over the ranks in
place each step, as gradients are in training:
  resnet50  the 161 parameters of ResNet-50 (resnet50_shapes.py), 97.5 MiB
  tiny      --tiny-tensors tensors of --tiny-elements values (negotiation)
One checked step first (every rank contributes rank + 1; every tensor's first
and last value must be the sum), then zeros, `warmup` untimed steps, then
`steps` steps, each timed alone. A step ends when every tensor's result is
back on this rank; each needs every rank, so the ranks stay in step. Rank 0
prints one JSON line: the median, mean, min and max step over the timed steps
(the last `tail` of them when --tail is given), and, for a backend with
`negotiation_seconds()`, the mean negotiation time per timed step.
"""

import argparse
import json
import statistics
import sys
import time
from typing import Callable, List, Optional, Protocol, Sequence, Tuple

import resnet50_shapes

Shape = Tuple[int, ...]


class Backend(Protocol):
    """One implementation; `bufs` is the list `buffers` returned."""

    def buffers(self, shapes: Sequence[Shape], value: float) -> list:
        """New float32 tensors of these shapes, all `value`."""

    def zero(self, bufs: list) -> None:
        """Sets every element of every tensor to 0."""

    def ends(self, buf) -> Sequence[float]:
        """The first and the last element of one tensor."""

    def step(self, bufs: list) -> None:
        """Sums every tensor over the ranks; may replace list entries."""


def parse_args(
        impl: str, argv: List[str],
        extra: Optional[Callable[[argparse.ArgumentParser], None]] = None,
) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=f"{impl} gradient-set benchmark; start it with hvdrun")
    parser.add_argument("--workload", choices=("resnet50", "tiny"),
                        default="resnet50")
    parser.add_argument("--steps", type=int, default=20, help="timed steps")
    parser.add_argument("--warmup", type=int, default=3,
                        help="untimed steps after the checked one")
    parser.add_argument("--tail", type=int, default=0,
                        help="report only the last TAIL timed steps")
    parser.add_argument("--tiny-tensors", type=int, default=100)
    parser.add_argument("--tiny-elements", type=int, default=4)
    parser.add_argument("--label", default=impl,
                        help="implementation name in the JSON line")
    if extra:
        extra(parser)
    args = parser.parse_args(argv)
    if args.steps < 1 or args.warmup < 0 or not 0 <= args.tail <= args.steps:
        parser.error("need steps >= 1, warmup >= 0, 0 <= tail <= steps")
    return args


def workload_shapes(args: argparse.Namespace) -> List[Shape]:
    if args.workload == "resnet50":
        return resnet50_shapes.shapes()
    return [(args.tiny_elements,)] * args.tiny_tensors


def run(backend: Backend, rank: int, size: int, args: argparse.Namespace,
        **fields) -> None:
    """Runs the workload; rank 0 prints the JSON line, with `fields` added."""
    shapes = workload_shapes(args)
    bufs = backend.buffers(shapes, rank + 1.0)
    backend.step(bufs)
    expected = size * (size + 1) / 2.0
    for i, buf in enumerate(bufs):
        got = backend.ends(buf)
        if any(v != expected for v in got):
            sys.exit(f"{args.label}: wrong sum in tensor {i}: {got}, "
                     f"expected {expected}")
    # Zeros from here on: repeated sums would otherwise grow to infinity.
    backend.zero(bufs)
    for _ in range(args.warmup):
        backend.step(bufs)

    negotiation = getattr(backend, "negotiation_seconds", None)
    if negotiation:
        negotiated = negotiation()
    times = []
    for _ in range(args.steps):
        start = time.perf_counter()
        backend.step(bufs)
        times.append(time.perf_counter() - start)
    if negotiation:
        fields["negotiation_s_per_step"] = (
            (negotiation() - negotiated) / args.steps)
    if args.tail:
        times = times[-args.tail:]

    if rank == 0:
        print(json.dumps({
            "workload": args.workload, "impl": args.label, "np": size,
            "tensors": len(shapes),
            "bytes": 4 * sum(resnet50_shapes.elements(s) for s in shapes),
            "steps": len(times), "median_s": statistics.median(times),
            "mean_s": statistics.fmean(times), "min_s": min(times),
            "max_s": max(times), **fields,
        }), flush=True)
