"""hvd side of the allreduce benchmark (run.sh): hvd's own allreduce of a
float32 numpy array, in place; "hvd-flat" in the results when
HOROVOD_HIERARCHICAL_ALLREDUCE=0 keeps it off shared memory. Started by
hvdrun:

    hvdrun -np N python3 hvd_allreduce_bench.py [--sizes B,...] \\
        [--min-seconds S]

The method is bench_method.py's; one JSON line per size from rank 0. Each
size reuses one tensor name, as a training loop does, so hvd's response
cache sees what it sees in training.
"""

import os
import sys

import numpy as np

import hvd

import bench_method


class HvdBackend:
    def buffer(self, elements: int, value: float) -> np.ndarray:
        return np.full(elements, value, dtype=np.float32)

    def zero(self, buf: np.ndarray) -> None:
        buf.fill(0)

    def ends(self, buf: np.ndarray):
        return [float(buf[0]), float(buf[-1])]

    def allreduce(self, buf: np.ndarray, name: str) -> None:
        hvd.allreduce_(buf, op=hvd.Sum, name=name)


def main() -> None:
    flat = os.environ.get("HOROVOD_HIERARCHICAL_ALLREDUCE") == "0"
    impl = "hvd-flat" if flat else "hvd"
    args = bench_method.parse_args(impl, sys.argv[1:])
    hvd.init()
    bench_method.run(impl, HvdBackend(), hvd.rank(), hvd.size(), args)
    hvd.shutdown()


if __name__ == "__main__":
    main()
