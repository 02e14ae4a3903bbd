"""Process sets of every shape, with collectives in flight in several sets
at once, then (argv[1] == "dynamic") sets added and removed at run time.
Run with 4 ranks. Expected values are computed here from the ranks."""

import sys

import numpy as np

import hvd


def check(what, got, want):
    if not (np.asarray(got).shape == np.asarray(want).shape and
            np.array_equal(got, want)):
        raise AssertionError(f"{what}: got {got!r}, want {want!r}")


def expect_error(what, error_type, fn):
    try:
        fn()
    except error_type as e:
        print(f"refused {what}: {e}", flush=True)
        return
    raise AssertionError(f"{what} was not refused")


def run_in_sets(rank, sets, tag):
    """Starts one of each collective in every set this rank is in (and in
    the global set) before synchronizing any; checks them all."""
    pending = []
    for ps in [hvd.global_process_set] + sets:
        ranks = list(range(hvd.size())) if ps is hvd.global_process_set \
            else ps.ranks
        if rank not in ranks:
            continue
        n = len(ranks)
        me = ranks.index(rank)
        # The same names in every set: each set has its own queue.
        pending.append(("allreduce", ps, hvd.allreduce_async(
            np.full(3, rank + 1.0), name=f"{tag}.ar", op=hvd.Sum,
            process_set=ps), np.full(3, float(sum(r + 1 for r in ranks)))))
        pending.append(("allgather", ps, hvd.allgather_async(
            np.full((1, 2), rank), name=f"{tag}.ag", process_set=ps),
            np.array([[r, r] for r in ranks])))
        pending.append(("broadcast", ps, hvd.broadcast_async(
            np.full(2, rank), ranks[-1], name=f"{tag}.bc", process_set=ps),
            np.full(2, ranks[-1])))
        pending.append(("alltoall", ps, hvd.alltoall_async(
            np.arange(n) + 100 * rank, name=f"{tag}.a2a", process_set=ps),
            np.array([100 * r + me for r in ranks])))
        pending.append(("reducescatter", ps, hvd.reducescatter_async(
            np.ones((n, 2)) * (rank + 1), op=hvd.Sum, name=f"{tag}.rs",
            process_set=ps), np.full((1, 2), float(sum(r + 1 for r in ranks)))))
    for what, ps, handle, want in pending:
        check(f"{what} in {ps}", hvd.synchronize(handle), want)
    for ps in sets:
        if ps.included():
            hvd.barrier(process_set=ps)
    return len(pending)


def main():
    dynamic = sys.argv[1] == "dynamic"
    sets = [hvd.ProcessSet([0, 1]), hvd.ProcessSet([2, 3]),   # disjoint
            hvd.ProcessSet([1, 2, 3]),                       # overlapping
            hvd.ProcessSet([3])]                             # one rank
    hvd.init(process_sets=sets)
    rank = hvd.rank()
    assert [ps.process_set_id for ps in sets] == [1, 2, 3, 4], sets
    table = hvd.get_process_set_ids_and_ranks()
    assert table == {0: [0, 1, 2, 3], 1: [0, 1], 2: [2, 3], 3: [1, 2, 3],
                     4: [3]}, table
    assert sets[2].rank() == ([None, 0, 1, 2][rank])
    checked = 0
    for step in range(3):
        checked += run_in_sets(rank, sets, f"s{step}")
    outsider = sets[1] if rank < 2 else sets[0]
    expect_error("an op in a set without this rank", ValueError,
                 lambda: hvd.allreduce(np.ones(1), process_set=outsider))
    expect_error("a broadcast root outside the set", ValueError,
                 lambda: hvd.broadcast(np.ones(1), 0, process_set=sets[2])
                 if rank in sets[2].ranks else
                 hvd.broadcast(np.ones(1), 3, process_set=sets[0]))
    expect_error("an unregistered set", ValueError,
                 lambda: hvd.allreduce(np.ones(1),
                                       process_set=hvd.ProcessSet([0, 1])))
    if dynamic:
        added = hvd.add_process_set([0, 2])
        assert added.process_set_id == 5, added
        expect_error("a set that exists", ValueError,
                     lambda: hvd.add_process_set(hvd.ProcessSet([2, 0])))
        checked += run_in_sets(rank, sets + [added], "dyn")
        assert hvd.remove_process_set(sets[1])
        assert 2 not in hvd.get_process_set_ids_and_ranks()
        expect_error("an op in a removed set", ValueError,
                     lambda: hvd.allreduce(np.ones(1), process_set=2))
        again = hvd.add_process_set([2, 3])
        # Horovod gives a removed set's id again first.
        assert again.process_set_id == 2, again
        checked += run_in_sets(rank, [sets[0], sets[2], sets[3], added, again],
                               "re")
    else:
        expect_error("adding a set without HOROVOD_DYNAMIC_PROCESS_SETS",
                     ValueError, lambda: hvd.add_process_set([0, 2]))
    # As in Horovod, shutdown removes every set but the global one; after
    # init, the same ranks can be added again and are numbered from 1. A
    # shutdown stops every rank's collectives, so first wait for the others.
    hvd.barrier()
    hvd.shutdown()
    kept = [ps for ps in sets + ([added, again] if dynamic else [])
            if ps.process_set_id is not None]
    assert not kept, kept
    if dynamic:
        hvd.init()
        assert hvd.get_process_set_ids_and_ranks() == {0: [0, 1, 2, 3]}
        for ps in sets:
            hvd.add_process_set(ps)
    else:
        hvd.init(process_sets=sets)
    assert [ps.process_set_id for ps in sets] == [1, 2, 3, 4], sets
    checked += run_in_sets(rank, sets, "reinit")
    print(f"rank {rank}: {checked} checks passed", flush=True)
    hvd.barrier()
    hvd.shutdown()


if __name__ == "__main__":
    main()
