"""One core's memory copy bandwidth, the yardstick of same-host busbw
(run.sh): numpy's copy of a 256 MiB float32 array into another (one
memcpy), best of a few. Prints one JSON line: impl "memcpy", np 1,
copy_gbs (bytes copied per second / 1e9)."""

import json
import time

import numpy as np

NBYTES = 256 << 20


def main() -> None:
    src = np.ones(NBYTES // 4, np.float32)
    dst = np.zeros_like(src)
    np.copyto(dst, src)  # faults the pages in
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - start)
    print(json.dumps({"impl": "memcpy", "np": 1, "bytes": NBYTES,
                      "seconds": best, "copy_gbs": NBYTES / best / 1e9}))


if __name__ == "__main__":
    main()
