"""Horovod-style tests that must all pass in one process per rank, one
after the other, with unnamed collectives, as Horovod's torch tests call
them: each join test in both orders (rank 0 joins first, then rank 1),
with an allreduce that runs under the join and an allgather and a
broadcast that are refused under it; then tests whose collective every
rank's check refuses (shapes and types that differ); then process-set
tests; then a dozen other collectives. After each join and error test
every rank runs allgather_object, a barrier and an allreduce, unnamed:
hvd numbers unnamed collectives, and a rank that had joined, or whose
collective was refused, must count on with the others, or these would
never match (a deadlock error after the Gloo timeout).

Prints sequence_runner's lines.
"""

import torch

import hvd.torch as hvd
from sequence_runner import run_in_sequence


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def collectives_match_afterwards(ret):
    """What every rank runs after a join or error test."""
    gathered = hvd.allgather_object(ret)
    check(gathered == [ret] * hvd.size(),
          f"allgather_object gave {gathered}, every rank gave {ret!r}")
    hvd.barrier()
    total = hvd.allreduce(torch.ones(4), op=hvd.Sum)
    check(torch.equal(total, torch.full((4,), float(hvd.size()))),
          f"allreduce gave {total}")


def join_with_allreduce(first):
    def test():
        hvd.init()
        rank, size = hvd.rank(), hvd.size()
        x = torch.full((17, 17), 2.0)
        if rank == first:
            ret = hvd.join()
        else:
            averaged = hvd.allreduce(x)
            check(torch.allclose(averaged, x * (size - 1) / size),
                  f"allreduce under a join gave {averaged[0, :3]}")
            ret = hvd.join()
        check(0 <= ret < size, f"join returned {ret}")
        collectives_match_afterwards(ret)
    test.__name__ = f"test_join_allreduce_first_joiner_{first}"
    return test


def join_with_refused(first, what, call):
    def test():
        hvd.init()
        if hvd.rank() == first:
            ret = hvd.join()
        else:
            try:
                call()
                raise AssertionError(f"{what} under a join did not raise")
            except RuntimeError as e:
                check("join" in str(e), f"the refusal names no join: {e}")
            ret = hvd.join()
        collectives_match_afterwards(ret)
    test.__name__ = f"test_join_{what}_first_joiner_{first}"
    return test


def refused_on_every_rank(what, call):
    def test():
        hvd.init()
        try:
            call(hvd.rank())
            raise AssertionError(f"{what} that the ranks disagree on ran")
        except RuntimeError:
            pass
        collectives_match_afterwards(what)
    test.__name__ = f"test_{what}_refused_on_every_rank"
    return test


def test_process_sets():
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    alone = [hvd.add_process_set([r]) for r in range(size)]
    mine = hvd.allreduce(torch.ones(3), op=hvd.Sum,
                         process_set=alone[rank])
    check(torch.equal(mine, torch.ones(3)), f"own set's allreduce: {mine}")
    both = hvd.allgather(torch.full((1,), float(rank)),
                         process_set=hvd.global_process_set)
    check(both.tolist() == [float(r) for r in range(size)],
          f"global set allgather gave {both}")
    for process_set in alone:
        check(hvd.remove_process_set(process_set), "set not removed")
    collectives_match_afterwards("sets")


def test_a_dozen_collectives():
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    ones = torch.ones(5)
    check(torch.equal(hvd.allreduce(ones, op=hvd.Sum), ones * size),
          "allreduce")
    inplace = torch.ones(5)
    hvd.allreduce_(inplace, op=hvd.Max)
    check(torch.equal(inplace, ones), "allreduce_")
    rows = hvd.allgather(torch.full((rank + 1, 2), float(rank)))
    check(rows.shape == (size * (size + 1) // 2, 2), f"allgather {rows.shape}")
    root = hvd.broadcast(torch.full((3,), float(rank)), root_rank=size - 1)
    check(torch.equal(root, torch.full((3,), float(size - 1))), "broadcast")
    swapped = hvd.alltoall(torch.full((size,), float(rank)))
    check(swapped.tolist() == [float(r) for r in range(size)], "alltoall")
    scattered = hvd.reducescatter(torch.ones(size * 2), op=hvd.Sum)
    check(torch.equal(scattered, torch.full((2,), float(size))),
          "reducescatter")
    grouped = hvd.grouped_allreduce([ones, ones * 2], op=hvd.Sum)
    check(torch.equal(grouped[1], ones * 2 * size), "grouped_allreduce")
    gathered = hvd.grouped_allgather([torch.ones(1, 2), torch.zeros(2, 1)])
    check([g.shape for g in gathered] == [(size, 2), (2 * size, 1)],
          "grouped_allgather")
    handle = hvd.allreduce_async(ones, op=hvd.Sum)
    check(torch.equal(hvd.synchronize(handle), ones * size),
          "allreduce_async")
    check(hvd.broadcast_object({"from": rank}, root_rank=0) == {"from": 0},
          "broadcast_object")
    check(hvd.allgather_object(rank) == list(range(size)), "allgather_object")
    hvd.barrier()


TESTS = (
    [join_with_allreduce(first) for first in (0, 1)] +
    [join_with_refused(first, what, call)
     for first in (0, 1)
     for what, call in (
         ("allgather", lambda: hvd.allgather(torch.ones(17, 17))),
         ("broadcast", lambda: hvd.broadcast(torch.ones(17), root_rank=1)))] +
    [refused_on_every_rank(
        "allreduce_shapes", lambda rank: hvd.allreduce(torch.ones(rank + 1))),
     refused_on_every_rank(
         "allgather_types",
         lambda rank: hvd.allgather(
             torch.ones(2, dtype=torch.float32 if rank else torch.int32)))] +
    [test_process_sets, test_a_dozen_collectives])


if __name__ == "__main__":
    run_in_sequence(TESTS)
