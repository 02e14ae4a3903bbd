"""Alltoall, reducescatter, grouped ops and join against numpy.

Every rank derives every other rank's input from the rank, so it checks
the whole expected result by itself; any difference raises. The named ops
run three times with the same names, so that the second and third run come
from the response cache (when it is on).
"""

import sys

import numpy as np

import hvd

DTYPES = [np.uint8, np.int8, np.int32, np.int64, np.float16, np.float32,
          np.float64]


def check(what, got, want):
    """Exact for integers; floats may differ from numpy's float64 result in
    the last place (hvd averages in the tensor's own type)."""
    got = np.asarray(got)
    if np.issubdtype(want.dtype, np.floating):
        rtol = 1e-3 if want.dtype == np.float16 else 1e-6
        same = got.shape == want.shape and np.allclose(got, want, rtol=rtol)
    else:
        same = got.shape == want.shape and np.array_equal(got, want)
    if got.dtype != want.dtype or not same:
        raise AssertionError(f"{what}: got {got.dtype}{got.shape} {got!r}, "
                             f"want {want.dtype}{want.shape} {want!r}")


def value(rank, dtype, shape, salt=0):
    values = (np.arange(int(np.prod(shape))).reshape(shape) + rank + salt) % 5
    return (values + 1).astype(dtype)


def reduce(inputs, op, dtype, size):
    total = np.stack([x.astype(np.float64) for x in inputs]).sum(0)
    if op == hvd.Average:
        total = total / size
    if np.issubdtype(dtype, np.integer):
        total = np.trunc(total)
    return total.astype(dtype)


def block(rows, size, rank):
    """Rows of dimension 0 reducescatter leaves on `rank`."""
    counts = [rows // size + (1 if r < rows % size else 0) for r in range(size)]
    start = sum(counts[:rank])
    return slice(start, start + counts[rank])


def splits_of(sender, size):
    """Uneven alltoall splits, with zeros: rows `sender` sends to each."""
    return [(sender + receiver) % 3 for receiver in range(size)]


def alltoall_input(sender, size, dtype):
    rows = []
    for receiver, count in enumerate(splits_of(sender, size)):
        for j in range(count):
            rows.append([sender, receiver, j])
    return np.array(rows, dtype=dtype).reshape(-1, 3)


def new_ops(rank, size):
    checked = 0
    for dtype in DTYPES:
        name = np.dtype(dtype).name
        # Alltoall in equal parts, then with uneven splits.
        even = np.repeat(np.arange(size * 2) + 10 * rank, 2).reshape(-1, 2)
        got = hvd.alltoall(even.astype(dtype), name=f"a2a.even.{name}")
        want = np.concatenate(
            [(np.repeat(np.arange(size * 2) + 10 * s, 2).reshape(-1, 2))
             [rank * 2:rank * 2 + 2] for s in range(size)])
        check(f"alltoall even {name}", got, want.astype(dtype))
        got, received = hvd.alltoall(alltoall_input(rank, size, dtype),
                                     splits=splits_of(rank, size),
                                     name=f"a2a.uneven.{name}")
        want = np.concatenate(
            [alltoall_input(s, size, dtype)[
                sum(splits_of(s, size)[:rank]):
                sum(splits_of(s, size)[:rank + 1])] for s in range(size)])
        check(f"alltoall uneven {name}", got, want.reshape(-1, 3))
        check(f"alltoall received splits {name}", received,
              np.array([splits_of(s, size)[rank] for s in range(size)],
                       dtype=np.int32))
        checked += 3
        # Reducescatter over rows that do not divide evenly.
        rows = 2 * size + 1
        for op in (hvd.Sum, hvd.Average):
            inputs = [value(r, dtype, (rows, 3)) for r in range(size)]
            got = hvd.reducescatter(inputs[rank], op=op,
                                    name=f"rs.{name}.{op}")
            check(f"reducescatter {name} op {op}", got,
                  reduce(inputs, op, dtype, size)[block(rows, size, rank)])
            checked += 1
        # Grouped ops equal the per-tensor results.
        shapes = [(2, 3), (5,), (1, 1, 4)]
        inputs = [[value(r, dtype, s, i) for i, s in enumerate(shapes)]
                  for r in range(size)]
        got = hvd.grouped_allreduce(inputs[rank], op=hvd.Sum,
                                    name=f"gar.{name}")
        for i in range(len(shapes)):
            check(f"grouped allreduce {name} {i}", got[i],
                  reduce([inputs[r][i] for r in range(size)], hvd.Sum, dtype,
                         size))
        mine = [x.copy() for x in inputs[rank]]
        hvd.grouped_allreduce_(mine, op=hvd.Average, name=f"gar_.{name}")
        for i in range(len(shapes)):
            check(f"grouped allreduce_ {name} {i}", mine[i],
                  reduce([inputs[r][i] for r in range(size)], hvd.Average,
                         dtype, size))
        parts = [[np.full((r + i, 2), r * 10 + i, dtype) for i in range(2)]
                 for r in range(size)]
        got = hvd.grouped_allgather(parts[rank], name=f"gag.{name}")
        for i in range(2):
            check(f"grouped allgather {name} {i}", got[i],
                  np.concatenate([parts[r][i] for r in range(size)]))
        big = [[value(r, dtype, (size + i, 2), i) for i in range(2)]
               for r in range(size)]
        got = hvd.grouped_reducescatter(big[rank], op=hvd.Sum,
                                        name=f"grs.{name}")
        for i in range(2):
            check(f"grouped reducescatter {name} {i}", got[i],
                  reduce([big[r][i] for r in range(size)], hvd.Sum, dtype,
                         size)[block(size + i, size, rank)])
        checked += 4
    # A group of mixed data types splits into one fused unit per type.
    mixed = hvd.grouped_allreduce(
        [np.full(3, rank, np.float32), np.full(2, rank, np.int64)],
        op=hvd.Sum, name="mixed.group")
    check("mixed group float32", mixed[0],
          np.full(3, sum(range(size)), np.float32))
    check("mixed group int64", mixed[1], np.full(2, sum(range(size)), np.int64))
    return checked + 2


def changing_shapes(rank, size):
    """One name whose shape and dtype change between steps: the cached
    response must not be reused for the new request."""
    for step, (rows, dtype) in enumerate([(3, np.float32), (3, np.float32),
                                          (5, np.float32), (5, np.int64),
                                          (2, np.float64), (2, np.float64)]):
        got = hvd.allreduce(np.full((rows, 2), rank + step, dtype),
                            name="changing", op=hvd.Sum)
        check(f"changing shape, step {step}", got,
              np.full((rows, 2), sum(r + step for r in range(size)), dtype))
        gathered = hvd.allgather(np.full((rank + step % 2, 1), rank, dtype),
                                 name="changing.rows")
        check(f"changing rows, step {step}", gathered,
              np.concatenate([np.full((r + step % 2, 1), r, dtype)
                              for r in range(size)]))
    return 12


def refused_under_join(what, call):
    """Horovod's rule: with a rank joined, this op fails on the ranks that
    called it, with an error naming the op and the join."""
    try:
        call()
    except RuntimeError as e:
        if "have joined (hvd.join)" not in str(e):
            raise AssertionError(f"{what}: unexpected error {e}") from e
        return
    raise AssertionError(f"{what} ran although a rank had joined")


def join(rank, size):
    """Rank r runs r + 1 steps, then joins: step k's allreduce sums over
    the ranks that still submit (joined ranks add zeros); its allgather and
    reducescatter run at step 0 (nobody joined yet) and are refused after,
    as in Horovod."""
    for step in range(rank + 1):
        got = hvd.allreduce(np.ones(4, np.float32), op=hvd.Sum,
                            name=f"join.ar.{step}")
        check(f"allreduce during joins, step {step}", got,
              np.full(4, size - step, np.float32))
        gather = lambda: hvd.allgather(np.full((1, 2), rank, np.int32),
                                       name=f"join.ag.{step}")
        scatter = lambda: hvd.reducescatter(np.ones((size, 2), np.float64),
                                            op=hvd.Sum, name=f"join.rs.{step}")
        if step == 0:
            check("allgather before joins", gather(),
                  np.array([[r, r] for r in range(size)], np.int32))
            check("reducescatter before joins", scatter(),
                  np.full((1, 2), size, np.float64))
        else:
            refused_under_join(f"allgather during joins, step {step}", gather)
            refused_under_join(f"reducescatter during joins, step {step}",
                               scatter)
    last = hvd.join()
    if last != size - 1:
        raise AssertionError(f"join returned {last}, want {size - 1}")
    # After everyone joined, collectives work as before.
    check("allreduce after join", hvd.allreduce(np.ones(2), op=hvd.Sum),
          np.full(2, size, np.float64))
    return 3 * (rank + 1) + 2


def main():
    mode = sys.argv[1]
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    checked = 0
    if mode == "ops":
        for step in range(3):
            checked += new_ops(rank, size)
        checked += changing_shapes(rank, size)
    elif mode == "join":
        checked += join(rank, size)
        checked += join(rank, size)  # a second round of joins
    print(f"rank {rank}/{size}: {checked} checks passed", flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
