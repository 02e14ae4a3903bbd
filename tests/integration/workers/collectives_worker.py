"""Runs every collective on every dtype and checks it against numpy.

Each rank can compute every other rank's input (they are derived from the
rank), so each rank checks the full expected result by itself. Any
difference raises, which fails the worker and hvdrun.
"""

import numpy as np

import hvd

DTYPES = [np.uint8, np.int8, np.int32, np.int64, np.float16, np.float32,
          np.float64]
OPS = {hvd.Sum: "sum", hvd.Average: "average", hvd.Min: "min",
       hvd.Max: "max", hvd.Product: "product"}


def input_of(rank, dtype, shape=(3, 4)):
    # Small values: int8 products and sums of four ranks stay in range,
    # float16 represents every result exactly.
    values = (np.arange(np.prod(shape)).reshape(shape) + rank) % 3 + 1
    if np.issubdtype(dtype, np.signedinteger) and rank % 2:
        values = -values
    return values.astype(dtype)


def expected_allreduce(size, dtype, op, prescale=1.0, postscale=1.0):
    inputs = [input_of(r, dtype).astype(np.float64) * prescale
              for r in range(size)]
    if np.issubdtype(dtype, np.integer):
        inputs = [np.trunc(x) for x in inputs]
    stacked = np.stack(inputs)
    result = {hvd.Sum: stacked.sum(0), hvd.Average: stacked.sum(0),
              hvd.Min: stacked.min(0), hvd.Max: stacked.max(0),
              hvd.Product: stacked.prod(0)}[op]
    if op == hvd.Average:
        result = result * postscale / size
    else:
        result = result * postscale
    if np.issubdtype(dtype, np.integer):
        result = np.trunc(result)
    return result.astype(dtype)


def expected_allreduce_of(size, dtype, shape):
    total = sum(input_of(r, dtype, shape).astype(np.float64)
                for r in range(size))
    return np.asarray(total).astype(dtype)


def check(what, got, want):
    if got.dtype != want.dtype or got.shape != want.shape or \
            not np.array_equal(got, want):
        raise AssertionError(f"{what}: got {got.dtype}{got.shape} {got!r}, "
                             f"want {want.dtype}{want.shape} {want!r}")


def main():
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    checked = 0
    for dtype in DTYPES:
        name = np.dtype(dtype).name
        for op, op_name in OPS.items():
            mine = input_of(rank, dtype)
            got = hvd.allreduce(mine, op=op, name=f"ar.{name}.{op_name}")
            check(f"allreduce {name} {op_name}", got,
                  expected_allreduce(size, dtype, op))
            check("allreduce leaves its input alone", mine,
                  input_of(rank, dtype))
            in_place = input_of(rank, dtype)
            hvd.allreduce_(in_place, op=op)
            check(f"allreduce_ {name} {op_name}", in_place,
                  expected_allreduce(size, dtype, op))
            checked += 2
        if np.issubdtype(dtype, np.floating):
            got = hvd.allreduce(input_of(rank, dtype), op=hvd.Sum,
                                prescale_factor=0.5, postscale_factor=3.0)
            check(f"allreduce {name} scaled", got,
                  expected_allreduce(size, dtype, hvd.Sum, 0.5, 3.0))
            got = hvd.allreduce(input_of(rank, dtype), op=hvd.Average,
                                postscale_factor=2.0)
            check(f"allreduce {name} average scaled", got,
                  expected_allreduce(size, dtype, hvd.Average, 1.0, 2.0))
            checked += 2

        # Allgather with a different first dimension on every rank, rank 0
        # contributing nothing.
        rows = [np.full((r, 2, 3), r + 1, dtype=dtype) for r in range(size)]
        got = hvd.allgather(rows[rank], name=f"ag.{name}")
        check(f"allgather {name}", got, np.concatenate(rows))
        checked += 1

        for root in range(size):
            mine = input_of(rank, dtype)
            got = hvd.broadcast(mine, root, name=f"bc.{name}.{root}")
            check(f"broadcast {name} from {root}", got, input_of(root, dtype))
            check("broadcast leaves its input alone", mine,
                  input_of(rank, dtype))
            in_place = input_of(rank, dtype)
            hvd.broadcast_(in_place, root)
            check(f"broadcast_ {name} from {root}", in_place,
                  input_of(root, dtype))
            checked += 2

    # Sizes around the shared-memory stage's slices and chunks
    # (HVD_SHM_CHUNK_BYTES): empty, odd, not divisible by the local size,
    # several chunks.
    for count in (0, 1, 7, 1001, 12347):
        for dtype in (np.float32, np.int32, np.float16, np.float64):
            name = np.dtype(dtype).name
            got = hvd.allreduce(input_of(rank, dtype, (count,)), op=hvd.Sum,
                                name=f"sized.{count}.{name}")
            check(f"allreduce of {count} {name}", got,
                  expected_allreduce_of(size, dtype, (count,)))
            rows = [np.full((r * count // 7, 3), r + 1, dtype=dtype)
                    for r in range(size)]
            check(f"allgather of {count} {name}",
                  hvd.allgather(rows[rank], name=f"sized.ag.{count}.{name}"),
                  np.concatenate(rows))
            root = count % size
            check(f"broadcast of {count} {name}",
                  hvd.broadcast(input_of(rank, dtype, (count,)), root,
                                name=f"sized.bc.{count}.{name}"),
                  input_of(root, dtype, (count,)))
            checked += 3
    # Async handles complete in any order of synchronize().
    handles = [hvd.allreduce_async(np.full(5, rank + i, np.float64),
                                   op=hvd.Sum) for i in range(8)]
    for i, handle in reversed(list(enumerate(handles))):
        want = np.full(5, sum(r + i for r in range(size)), np.float64)
        check(f"async allreduce {i}", hvd.synchronize(handle), want)
    # Many allreduces in flight at once, mixed so that fusion must split
    # them by dtype, op and scale, and by the threshold.
    specs = [(DTYPES[i % len(DTYPES)], list(OPS)[i % len(OPS)], (i % 7) + 1)
             for i in range(40)]
    handles = [hvd.allreduce_async(input_of(rank, dtype, (rows, 4)), op=op,
                                   name=f"mixed.{i}")
               for i, (dtype, op, rows) in enumerate(specs)]
    for i, ((dtype, op, rows), handle) in enumerate(zip(specs, handles)):
        got = hvd.synchronize(handle)
        stacked = np.stack([input_of(r, dtype, (rows, 4)).astype(np.float64)
                            for r in range(size)])
        want = {hvd.Sum: stacked.sum(0), hvd.Min: stacked.min(0),
                hvd.Max: stacked.max(0), hvd.Product: stacked.prod(0),
                hvd.Average: stacked.sum(0) / size}[op]
        if np.issubdtype(dtype, np.integer):
            want = np.trunc(want)
        check(f"mixed async allreduce {i}", got, want.astype(dtype))
        checked += 1
    # Non-contiguous in-place input is written back.
    matrix = np.arange(12, dtype=np.float32).reshape(3, 4) * (rank + 1)
    column = matrix[:, 1]
    hvd.allreduce_(column, op=hvd.Sum)
    check("non-contiguous allreduce_", matrix[:, 1],
          np.arange(12, dtype=np.float32).reshape(3, 4)[:, 1]
          * sum(range(1, size + 1)))
    # Scalars reduce too.
    check("scalar allreduce", hvd.allreduce(np.float64(rank), op=hvd.Max),
          np.array(size - 1, dtype=np.float64))
    # Objects.
    assert hvd.broadcast_object({"from": rank}, root_rank=size - 1) == \
        {"from": size - 1}
    assert hvd.allgather_object(("rank", rank)) == \
        [("rank", r) for r in range(size)]
    hvd.barrier()
    print(f"rank {rank}/{size}: {checked} checks passed", flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
