"""hvd.torch's alltoall, reducescatter, grouped ops, join and process sets.

Run by test_torch_collectives.py under hvdrun at 2 and 3 ranks. Every
input is derived from the rank, so the test recomputes every expected value
on its own; this worker only records what hvd.torch returned, in a dict
printed as one ``RESULT <json>`` line. It registers the process set
[0, size - 1] (rank 1 is outside it at 3 ranks).

The job ends with a global barrier, after the set's unnamed ops: no rank
may shut hvd down (at exit) while the others still work, as in horovod.
"""

import json
import sys

import torch

import hvd.torch as hvd


def rows_of(n, cols, base, dtype=torch.float64):
    """An (n, cols) tensor: base + 0, 1, 2, ... row by row."""
    return (torch.arange(n * cols, dtype=torch.float64).view(n, cols)
            + base).to(dtype)


def uneven_splits(rank, size):
    """Rows rank sends to each rank: (rank + 2 d) % 3 (zeros included)."""
    return [(rank + 2 * d) % 3 for d in range(size)]


def out(t):
    return t.tolist()


def alltoall_section(R, rank, size):
    x = rows_of(2 * size, 3, 100 * rank, torch.float32)
    R["a2a_even"] = out(hvd.alltoall(x))
    R["a2a_input_unchanged"] = out(x) == out(
        rows_of(2 * size, 3, 100 * rank, torch.float32))

    splits = uneven_splits(rank, size)
    x = rows_of(sum(splits), 2, 100 * rank)
    y, received = hvd.alltoall(x, splits=torch.tensor(splits,
                                                      dtype=torch.int32))
    R["a2a_uneven_tensor_splits"] = [out(y), out(received),
                                     str(received.dtype)]
    y, received = hvd.alltoall(x, splits=splits, name="a2a.list")
    R["a2a_uneven_list_splits"] = [out(y), out(received),
                                   str(received.dtype)]
    h = hvd.alltoall_async(x, splits=torch.tensor(splits), name="a2a.async")
    y, received = hvd.synchronize(h)
    R["a2a_async"] = [out(y), out(received), str(received.dtype)]

    # Rank 0 sends nothing at all; the others send d + 1 rows to rank d.
    splits = [0] * size if rank == 0 else [d + 1 for d in range(size)]
    x = rows_of(sum(splits), 2, 100 * rank)
    y, received = hvd.alltoall(x, splits=splits)
    R["a2a_empty_sender"] = [out(y), out(received)]

    splits = uneven_splits(rank, size)
    n = sum(splits)
    b = (torch.arange(n, dtype=torch.float32) + 10 * rank).to(torch.bfloat16)
    y, _ = hvd.alltoall(b, splits=splits)
    R["a2a_bfloat16"] = [str(y.dtype), out(y)]
    flags = torch.tensor([(i + rank) % 2 == 0 for i in range(n)])
    y, _ = hvd.alltoall(flags, splits=splits)
    R["a2a_bool"] = [str(y.dtype), out(y)]
    i16 = (torch.arange(n) + 1000 * rank).to(torch.int16)
    y, _ = hvd.alltoall(i16, splits=splits)
    R["a2a_int16"] = [str(y.dtype), out(y)]

    # Bad splits, the same on every rank: each is a ValueError, as in
    # horovod. The first five are refused before anything is sent, the
    # last three by the core.
    rows = torch.zeros(size, 1)
    bad = {
        "float_tensor": (rows, torch.ones(size)),
        "float_list": (rows, [1.0] * size),
        "bool_tensor": (rows, torch.ones(size, dtype=torch.bool)),
        "two_dim": (rows, torch.ones(1, size, dtype=torch.int32)),
        "negative": (rows, [-1, 2] + [1] * (size - 2)),
        "count": (rows, [1] * (size + 1)),
        "sum": (rows, [2] + [1] * (size - 1)),
        "indivisible": (torch.zeros(size + 1, 1), None),
    }
    for key, (tensor, splits) in bad.items():
        try:
            hvd.alltoall(tensor, splits=splits, name=f"a2a.bad.{key}")
            R[f"a2a_bad_{key}"] = "no error"
        except Exception as e:  # noqa: BLE001 - the type is the result
            R[f"a2a_bad_{key}"] = [type(e).__name__,
                                   isinstance(e, ValueError), str(e)]


def reducescatter_section(R, rank, size):
    rows = 2 * size + 1  # not divisible by size
    x = rows_of(rows, 2, 1, torch.float32) * (rank + 1)
    R["rs_sum"] = out(hvd.reducescatter(x, op=hvd.Sum))
    R["rs_average"] = out(hvd.reducescatter(x))
    R["rs_input_unchanged"] = out(x) == out(
        rows_of(rows, 2, 1, torch.float32) * (rank + 1))
    R["rs_scaled"] = out(hvd.reducescatter(
        x.double(), op=hvd.Sum, prescale_factor=0.5, postscale_factor=3.0))
    i = (rows_of(rows, 2, 1) * (rank + 1)).to(torch.int32)
    R["rs_int32"] = [str(hvd.reducescatter(i, op=hvd.Sum).dtype),
                     out(hvd.reducescatter(i, op=hvd.Sum, name="rs.i32"))]
    for dtype in (torch.int16, torch.bfloat16):
        t = (rows_of(rows, 2, 1) * (rank + 1)).to(dtype)
        got = hvd.reducescatter(t, op=hvd.Sum, name=f"rs.{dtype}")
        R[f"rs_{dtype}"] = [str(got.dtype), out(got)]
    few = rows_of(size - 1, 2, 1) * (rank + 1)  # the last rank gets nothing
    got = hvd.reducescatter(few, op=hvd.Sum)
    R["rs_fewer_rows_than_ranks"] = [list(got.shape), out(got)]
    h = hvd.reducescatter_async(x, name="rs.async", op=hvd.Sum)
    R["rs_async"] = out(hvd.synchronize(h))
    try:
        hvd.reducescatter(torch.tensor([[True]]))
        R["rs_bool"] = "accepted"
    except TypeError as e:
        R["rs_bool"] = str(e)


def group_inputs(rank):
    return [torch.tensor([1.0, 2.0, 3.0]) * (rank + 1),
            rows_of(2, 2, rank),
            torch.tensor([rank + 1, -(rank + 2), 7, 0], dtype=torch.int32),
            (torch.tensor([0.5, 1.5]) * (rank + 1)).to(torch.bfloat16)]


def grouped_section(R, rank, size):
    tensors = group_inputs(rank)
    R["g_ar_sum"] = [out(t) for t in hvd.grouped_allreduce(tensors,
                                                           op=hvd.Sum)]
    R["g_ar_sum_dtypes"] = [str(t.dtype) for t in hvd.grouped_allreduce(
        tensors, op=hvd.Sum, name="g.dtypes")]
    R["ar_each_sum"] = [out(hvd.allreduce(t, op=hvd.Sum)) for t in tensors]
    floats = [tensors[0], tensors[1]]
    R["g_ar_average"] = [out(t) for t in hvd.grouped_allreduce(floats)]
    R["g_ar_scaled"] = [out(t) for t in hvd.grouped_allreduce(
        floats, op=hvd.Sum, prescale_factor=2.0, postscale_factor=0.25)]

    base = rows_of(3, 4, 0) * (rank + 1)
    column = base.t()[1]  # non-contiguous
    first = torch.tensor([1.0, 2.0]) * (rank + 1)
    result = hvd.grouped_allreduce_([first, column], op=hvd.Sum,
                                    name="g.in_place")
    R["g_ar_in_place"] = [result[0] is first, result[1] is column,
                          out(first), out(base)]
    handles = hvd.grouped_allreduce_async(floats, op=hvd.Max, name="g.async")
    R["g_ar_async"] = [hvd.poll(handles) in (True, False),
                       [out(t) for t in hvd.synchronize(handles)]]
    own = [t.clone() for t in floats]
    handles = hvd.grouped_allreduce_async_(own, op=hvd.Min)
    R["g_ar_async_in_place"] = [
        all(a is b for a, b in zip(hvd.synchronize(handles), own)),
        [out(t) for t in own]]
    fp16 = hvd.grouped_allreduce([torch.tensor([0.1]) * (rank + 1)],
                                 op=hvd.Sum, compression=hvd.Compression.fp16)
    R["g_ar_fp16"] = [str(fp16[0].dtype), fp16[0].item()]

    gather_in = [torch.full((rank + 1, 2), rank, dtype=torch.int64),
                 torch.tensor([rank % 2 == 0]),
                 (torch.arange(3.0) + rank).to(torch.bfloat16)]
    R["g_ag"] = [[str(t.dtype), out(t)]
                 for t in hvd.grouped_allgather(gather_in)]
    R["ag_each"] = [[str(t.dtype), out(hvd.allgather(t))] for t in gather_in]
    R["g_ag_async"] = [out(t) for t in hvd.synchronize(
        hvd.grouped_allgather_async(gather_in[:1], name="g.ag"))]

    rs_in = [rows_of(2 * size + 1, 2, 1, torch.float32) * (rank + 1),
             rows_of(size, 3, rank)]
    R["g_rs_sum"] = [out(t) for t in hvd.grouped_reducescatter(
        rs_in, op=hvd.Sum)]
    R["g_rs_average"] = [out(t) for t in hvd.grouped_reducescatter(rs_in)]
    R["rs_each_sum"] = [out(hvd.reducescatter(t, op=hvd.Sum)) for t in rs_in]
    R["g_rs_async"] = [out(t) for t in hvd.synchronize(
        hvd.grouped_reducescatter_async(rs_in, op=hvd.Sum, name="g.rs"))]


def weights(rank, n, cols):
    """Row j of this rank's loss weights: 100 * rank + j + 1."""
    return (torch.arange(n, dtype=torch.float64) + 100 * rank + 1) \
        .view(n, 1).expand(n, cols)


def autograd_section(R, rank, size):
    splits = uneven_splits(rank, size)
    x = rows_of(sum(splits), 2, 0).requires_grad_()
    y, received = hvd.alltoall(x, splits=splits)
    (y * weights(rank, y.shape[0], 2)).sum().backward()
    R["grad_a2a_splits"] = out(x.grad)
    R["a2a_received_requires_grad"] = received.requires_grad

    x = rows_of(size * (rank + 1), 2, 0).requires_grad_()  # s + 1 per dest
    y = hvd.alltoall(x)
    (y * weights(rank, y.shape[0], 2)).sum().backward()
    R["grad_a2a_equal"] = out(x.grad)

    rows = 2 * size + 1
    for op, key, pre, post in ((hvd.Sum, "sum", 1.0, 1.0),
                               (hvd.Average, "average", 1.0, 1.0),
                               (hvd.Sum, "sum_post2", 1.0, 2.0),
                               (hvd.Average, "average_pre3", 3.0, 1.0)):
        x = rows_of(rows, 2, 0).requires_grad_()
        y = hvd.reducescatter(x, op=op, prescale_factor=pre,
                              postscale_factor=post)
        (y * weights(rank, y.shape[0], 2)).sum().backward()
        R[f"grad_rs_{key}"] = out(x.grad)

    for op, key in ((hvd.Sum, "sum"), (hvd.Average, "average")):
        a = torch.ones(3, dtype=torch.float64, requires_grad=True)
        b = torch.ones(2, dtype=torch.float64, requires_grad=True)
        ya, yb = hvd.grouped_allreduce([a, b], op=op)
        wa = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64) * (rank + 1)
        wb = torch.tensor([1.0, -1.0], dtype=torch.float64) * (rank + 1)
        ((ya * wa).sum() + (yb * wb).sum()).backward()
        R[f"grad_g_ar_{key}"] = [out(a.grad), out(b.grad)]

    x = torch.ones(rank + 1, 2, dtype=torch.float64, requires_grad=True)
    (y,) = hvd.grouped_allgather([x])
    (y * rows_of(y.shape[0], 2, 0) * (rank + 1)).sum().backward()
    R["grad_g_ag"] = out(x.grad)

    x = rows_of(rows, 2, 0).requires_grad_()
    (y,) = hvd.grouped_reducescatter([x], op=hvd.Sum)
    (y * weights(rank, y.shape[0], 2)).sum().backward()
    R["grad_g_rs_sum"] = out(x.grad)


def join_value(rank, step):
    return float(10 * (rank + 1) + step)


def join_section(R, rank, size):
    # Rank r runs r + 1 steps: at step k only ranks k..size-1 submit.
    sums, gathers = [], []
    for step in range(rank + 1):
        t = torch.full((3,), join_value(rank, step))
        sums.append(out(hvd.allreduce(t, op=hvd.Sum, name=f"join.{step}")))
        # Horovod refuses an allgather while a rank has joined (step >= 1).
        try:
            gathers.append(out(hvd.allgather(torch.tensor([rank]),
                                             name=f"join.ag.{step}")))
        except RuntimeError as e:
            gathers.append(str(e))
    R["join_sums"] = sums
    R["join_gathers"] = gathers
    R["join_last"] = hvd.join()
    R["after_join"] = out(hvd.allreduce(torch.ones(1), op=hvd.Sum,
                                        name="after.join"))


def set_section(R, rank, size, ps):
    R["ids_and_ranks"] = {str(k): v for k, v in
                          hvd.get_process_set_ids_and_ranks().items()}
    R["set"] = [ps.process_set_id, ps.ranks, ps.included()]
    if not ps.included():
        try:
            hvd.allreduce(torch.ones(1), process_set=ps)
            R["outside"] = "accepted"
        except ValueError as e:
            R["outside"] = str(e)
        return
    last = size - 1
    me = torch.tensor([float(rank + 1)])
    R["ps_allreduce"] = out(hvd.allreduce(me, op=hvd.Sum, process_set=ps))
    R["ps_allreduce_average"] = out(hvd.allreduce(me, process_set=ps))
    t = me.clone()
    hvd.allreduce_(t, op=hvd.Sum, process_set=ps)
    R["ps_allreduce_"] = out(t)
    h = hvd.allreduce_async(me, op=hvd.Max, process_set=ps, name="ps.async")
    R["ps_allreduce_async"] = out(hvd.synchronize(h))
    R["ps_allgather"] = out(hvd.allgather(
        torch.full((rank + 1,), rank), process_set=ps))
    R["ps_broadcast"] = out(hvd.broadcast(me, last, process_set=ps))
    t = me.clone()
    hvd.broadcast_(t, last, process_set=ps)
    R["ps_broadcast_"] = out(t)
    splits = [1, 2] if rank == 0 else [2, 0]
    y, received = hvd.alltoall(rows_of(sum(splits), 1, 10 * rank),
                               splits=splits, process_set=ps)
    R["ps_alltoall"] = [out(y), out(received)]
    R["ps_reducescatter"] = out(hvd.reducescatter(
        rows_of(3, 1, 1) * (rank + 1), op=hvd.Sum, process_set=ps))
    R["ps_grouped_allreduce"] = [out(t) for t in hvd.grouped_allreduce(
        [me, me * 2], op=hvd.Sum, process_set=ps)]
    R["ps_grouped_allgather"] = [out(t) for t in hvd.grouped_allgather(
        [torch.tensor([rank])], process_set=ps)]
    R["ps_grouped_reducescatter"] = [out(t) for t in
                                     hvd.grouped_reducescatter(
                                         [rows_of(2, 1, rank)], op=hvd.Sum,
                                         process_set=ps)]

    x = torch.ones(2, requires_grad=True)
    (hvd.allreduce(x, op=hvd.Sum, process_set=ps) * (rank + 1)).sum() \
        .backward()
    R["ps_grad_allreduce"] = out(x.grad)
    x = torch.ones(rank + 1, requires_grad=True)
    y = hvd.allgather(x, process_set=ps)
    (y * torch.arange(float(y.shape[0])) * (rank + 1)).sum().backward()
    R["ps_grad_allgather"] = out(x.grad)

    R["ps_broadcast_object"] = hvd.broadcast_object(
        {"from": rank}, root_rank=last, process_set=ps)
    R["ps_allgather_object"] = hvd.allgather_object(("r", rank),
                                                    process_set=ps)
    model = torch.nn.Linear(2, 1)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[1.0, 2.0]]) * (rank + 1))
        model.bias.fill_(rank + 1)
    hvd.broadcast_parameters(model.state_dict(), root_rank=last,
                             process_set=ps)
    R["ps_broadcast_parameters"] = [out(model.weight), out(model.bias)]
    opt = torch.optim.SGD(model.parameters(), lr=0.1 * (rank + 1),
                          momentum=0.5)
    model(torch.ones(1, 2)).sum().backward()
    opt.step()
    hvd.broadcast_optimizer_state(opt, root_rank=last, process_set=ps)
    R["ps_broadcast_optimizer_state"] = opt.param_groups[0]["lr"]

    # Uneven steps inside the set, then join the set.
    sums = []
    for step in range(1 if rank == 0 else 2):
        sums.append(out(hvd.allreduce(torch.tensor([join_value(rank, step)]),
                                      op=hvd.Sum, name=f"ps.join.{step}",
                                      process_set=ps)))
    R["ps_join_sums"] = sums
    R["ps_join_last"] = hvd.join(process_set=ps)
    hvd.barrier(process_set=ps)


def optimizer_section(R, rank, size, ps):
    """Every rank trains; only the set's ranks average their gradients."""
    model = torch.nn.Linear(2, 1, bias=False).double()
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[1.0, 1.0]]))
    opt = hvd.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.1),
        named_parameters=model.named_parameters(), process_set=ps)
    for step in range(2):
        opt.zero_grad()
        x = torch.tensor([[rank + 1.0, step + 1.0]], dtype=torch.float64)
        model(x).sum().backward()  # d/dw = x
        opt.step()
    R["ps_optimizer"] = out(model.weight)


def main():
    size = int(sys.argv[1])  # the sets are registered before init
    ps = hvd.ProcessSet([0, size - 1])
    hvd.init(process_sets=[ps])
    assert hvd.size() == size, (hvd.size(), size)
    rank = hvd.rank()
    R = {}
    alltoall_section(R, rank, size)
    reducescatter_section(R, rank, size)
    grouped_section(R, rank, size)
    autograd_section(R, rank, size)
    join_section(R, rank, size)
    set_section(R, rank, size, ps)
    optimizer_section(R, rank, size, ps)
    hvd.barrier()
    print("RESULT " + json.dumps(R), flush=True)


if __name__ == "__main__":
    main()
