"""The measuring method of the allreduce benchmark, shared by
torch_allreduce_bench.py and hvd_allreduce_bench.py; gloo_allreduce_bench.cc
is its C++ twin, keep the two in step.

Per size: one checked allreduce (every rank contributes rank + 1), then
`warmup` untimed ops on zeros. Then batches of 1, 2, 4, ... ops until the
ranks' mean batch time reaches a tenth of `min_seconds` (an allreduce of one
float32 after each batch: every rank sees the same mean, so all stop
together); the op time it gives fixes the iteration count, the same on every
rank. That last tiny allreduce also lines the ranks up before the clock
starts. Rank 0 times the whole loop and reports total / iterations.
"""

import argparse
import json
import math
import sys
import time
from typing import Callable, List, Optional, Protocol, Sequence

DEFAULT_SIZES = [4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20,
                 16 << 20, 64 << 20, 256 << 20]
MIN_ITERS = 5
# Iterations beyond this add nothing at the smallest sizes but time.
MAX_ITERS = 200000


class Backend(Protocol):
    """What one implementation provides; buffers are 1-D float32."""

    def buffer(self, elements: int, value: float):
        """A new buffer of `elements` float32 values, all `value`."""

    def zero(self, buf) -> None:
        """Sets every element of `buf` to 0."""

    def ends(self, buf) -> Sequence[float]:
        """The first and the last element of `buf`."""

    def allreduce(self, buf, name: str) -> None:
        """Sums `buf` over the ranks, in place."""


def parse_args(
        impl: str, argv: List[str],
        extra: Optional[Callable[[argparse.ArgumentParser], None]] = None,
) -> argparse.Namespace:
    """The flags every implementation takes (see gloo_allreduce_bench.cc)."""
    parser = argparse.ArgumentParser(
        description=f"{impl} allreduce benchmark; start it with hvdrun")
    parser.add_argument("--sizes", type=_sizes, default=DEFAULT_SIZES,
                        help="bytes per op, comma separated")
    parser.add_argument("--min-seconds", type=float, default=0.5,
                        help="timed seconds to aim for per size")
    parser.add_argument("--warmup", type=int, default=3,
                        help="warm-up ops per size")
    if extra:
        extra(parser)
    return parser.parse_args(argv)


def _sizes(text: str) -> List[int]:
    sizes = [int(s) for s in text.split(",")]
    for s in sizes:
        if s < 4 or s % 4:
            raise argparse.ArgumentTypeError(
                f"{s} is not a whole, positive number of float32 elements")
    return sizes


def run(impl: str, backend: Backend, rank: int, size: int,
        args: argparse.Namespace) -> None:
    """Measures every size of `args.sizes`; rank 0 prints a JSON line each."""
    for nbytes in args.sizes:
        _bench_size(impl, backend, rank, size, nbytes, args)


def _bench_size(impl: str, backend: Backend, rank: int, size: int,
                nbytes: int, args: argparse.Namespace) -> None:
    name = f"bench.{nbytes}"
    buf = backend.buffer(nbytes // 4, rank + 1.0)
    backend.allreduce(buf, name)
    expected = size * (size + 1) / 2.0
    got = backend.ends(buf)
    if any(v != expected for v in got):
        sys.exit(f"{impl}: wrong sum at {nbytes} bytes: {got}, "
                 f"expected {expected}")
    # Zeros from here on: repeated sums would otherwise grow to infinity.
    backend.zero(buf)

    for _ in range(args.warmup):
        backend.allreduce(buf, name)
    # A few warm-up ops misjudge a small size's op time by 2x or more.
    batch = 1
    while True:
        start = time.perf_counter()
        for _ in range(batch):
            backend.allreduce(buf, name)
        mean = backend.buffer(1, time.perf_counter() - start)
        backend.allreduce(mean, "bench.sync")
        batch_seconds = backend.ends(mean)[0] / size
        if batch_seconds >= args.min_seconds / 10 or batch >= MAX_ITERS:
            break
        batch *= 2
    iters = min(max(math.ceil(args.min_seconds * batch / batch_seconds),
                    MIN_ITERS), MAX_ITERS)

    start = time.perf_counter()
    for _ in range(iters):
        backend.allreduce(buf, name)
    seconds = (time.perf_counter() - start) / iters

    if rank == 0:
        algbw = nbytes / seconds / 1e9
        print(json.dumps({
            "impl": impl, "np": size, "bytes": nbytes, "iters": iters,
            "seconds": seconds, "latency_us": round(seconds * 1e6, 3),
            "algbw_gbs": algbw, "busbw_gbs": algbw * 2 * (size - 1) / size,
        }), flush=True)
