"""Process sets through their own shared-memory groups. Run with 6 ranks,
3 per host: set A = [0, 1, 3, 4] has two ranks on each host (a group with
cross contexts), B = [1, 2] two on one host (a group on one host), C =
[0, 3] one per host (flat). Every rank runs, in every set it is in,
allreduce (sum, average, min), allgather of uneven rows, broadcast and
reducescatter at sizes around the chunk (HVD_SHM_CHUNK_BYTES=4096), checked
against numpy; inputs derive from the job rank, so each rank knows all."""

import numpy as np

import hvd

SETS = [[0, 1, 3, 4], [1, 2], [0, 3]]
SIZES = [0, 1, 1001, 3 * 1024 + 7, 300_001]


def values(rank, n):
    return ((np.arange(n) + rank) % 5 - 2).astype(np.float32)


def check(what, got, want):
    got = np.asarray(got)
    if got.shape != want.shape or not np.array_equal(got, want):
        raise AssertionError(f"{what}: got {got!r}, want {want!r}")


def run_set(ps, ranks, rank, tag):
    checks = 0
    n_ranks = len(ranks)
    for n in SIZES:
        stacked = np.stack([values(r, n) for r in ranks])
        for op, want in ((hvd.Sum, stacked.sum(0)),
                         (hvd.Average, stacked.sum(0) / n_ranks),
                         (hvd.Min, stacked.min(0))):
            got = hvd.allreduce(values(rank, n), op=op, process_set=ps,
                                name=f"{tag}.ar.{n}.{op}")
            check(f"allreduce {op} of {n} in {ranks}", got,
                  want.astype(np.float32))
            checks += 1
        # Set rank k gives k + 1 rows of n // 100 + 1 columns.
        cols = n // 100 + 1
        mine = np.full((ranks.index(rank) + 1, cols), rank, np.int32)
        want = np.concatenate([np.full((k + 1, cols), r, np.int32)
                               for k, r in enumerate(ranks)])
        check(f"allgather of {n} in {ranks}",
              hvd.allgather(mine, process_set=ps, name=f"{tag}.ag.{n}"), want)
        root = ranks[-1]
        check(f"broadcast of {n} in {ranks}",
              hvd.broadcast(values(rank, n), root, process_set=ps,
                            name=f"{tag}.bc.{n}"), values(root, n))
        rows = np.stack([values(rank, n_ranks * 3)] * n_ranks)
        got = hvd.reducescatter(rows, op=hvd.Sum, process_set=ps,
                                name=f"{tag}.rs.{n}")
        want = np.stack([sum(values(r, n_ranks * 3) for r in ranks)])
        check(f"reducescatter in {ranks}", got, want)
        checks += 3
    return checks


def main():
    sets = [hvd.ProcessSet(r) for r in SETS]
    hvd.init(process_sets=sets)
    rank, size = hvd.rank(), hvd.size()
    assert size == 6, size
    checks = 0
    for ps, ranks in zip(sets, SETS):
        if rank in ranks:
            checks += run_set(ps, ranks, rank, f"set{ps.process_set_id}")
    hvd.barrier()
    print(f"rank {rank}/{size}: {checks} checks passed", flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
