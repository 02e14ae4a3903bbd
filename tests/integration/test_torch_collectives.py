"""hvd.torch's alltoall, reducescatter, grouped ops, join and process sets,
through hvdrun at 2 and 3 ranks.

workers/torch_collectives_worker.py runs every collective once per job and
records what hvd.torch returned; each rank's input is a function of its
rank, so the expected values are computed here, with numpy, from the same
formulas (never from hvd's own output). One job per world size serves all
the tests of this module (a module-scoped fixture), so the module costs
two hvdrun runs.
"""

import numpy as np
import pytest

from conftest import ROOT, run_worker_job

WORKER = ROOT / "tests" / "integration" / "workers" / \
    "torch_collectives_worker.py"
PYTHON = "/usr/bin/python3"


@pytest.fixture(scope="module", params=[2, 3], ids=["np2", "np3"])
def job(request):
    """(size, {rank: results}) of one worker run at `size` ranks."""
    size = request.param
    results = run_worker_job([PYTHON, WORKER, size], size, timeout=120)
    return size, results


# -- the worker's inputs, recomputed ----------------------------------------

def rows_of(n, cols, base):
    return np.arange(n * cols, dtype=np.float64).reshape(n, cols) + base


def uneven_splits(rank, size):
    return [(rank + 2 * d) % 3 for d in range(size)]


def alltoall(inputs, splits, rank):
    """What `rank` receives: (rows, received splits)."""
    parts, received = [], []
    for s, (x, sp) in enumerate(zip(inputs, splits)):
        start = sum(sp[:rank])
        parts.append(x[start:start + sp[rank]])
        received.append(sp[rank])
    return np.concatenate(parts), received


def blocks(rows, size):
    """[(start, count)] of each rank's reducescatter block."""
    counts = [rows // size + (1 if r < rows % size else 0)
              for r in range(size)]
    starts = np.cumsum([0] + counts[:-1]).tolist()
    return list(zip(starts, counts))


def scatter(total, size, rank):
    start, count = blocks(total.shape[0], size)[rank]
    return total[start:start + count]


def weights(rank, n, cols):
    return np.repeat((np.arange(n) + 100 * rank + 1.0)[:, None], cols, 1)


def same(got, want):
    want = np.asarray(want)
    got = np.asarray(got, dtype=want.dtype)
    return got.shape == want.shape and np.allclose(got, want)


def check(got, want, what):
    assert same(got, want), f"{what}: got {got}, want {np.asarray(want)}"


# -- alltoall -----------------------------------------------------------------

def test_alltoall_even_and_uneven_splits(job):
    size, r = job
    for rank in range(size):
        got = r[rank]
        even = [rows_of(2 * size, 3, 100 * s) for s in range(size)]
        want, _ = alltoall(even, [[2] * size] * size, rank)
        check(got["a2a_even"], want, "even")
        assert got["a2a_input_unchanged"] is True

        splits = [uneven_splits(s, size) for s in range(size)]
        assert any(0 in sp for sp in splits)  # a zero split is covered
        inputs = [rows_of(sum(sp), 2, 100 * s) for s, sp in
                  enumerate(splits)]
        want, received = alltoall(inputs, splits, rank)
        for key, dtype in (("a2a_uneven_tensor_splits", "torch.int32"),
                           ("a2a_uneven_list_splits", "torch.int32"),
                           ("a2a_async", "torch.int64")):
            rows, recv, recv_dtype = got[key]
            check(rows, want, key)
            assert recv == received, key
            assert recv_dtype == dtype, key

        splits = [[0] * size] + [[d + 1 for d in range(size)]
                                 for _ in range(1, size)]
        inputs = [rows_of(sum(sp), 2, 100 * s) for s, sp in
                  enumerate(splits)]
        want, received = alltoall(inputs, splits, rank)
        check(got["a2a_empty_sender"][0], want, "empty sender")
        assert got["a2a_empty_sender"][1] == received

        # Horovod raises ValueError for every kind of bad splits.
        for key in ("float_tensor", "float_list", "bool_tensor", "two_dim",
                    "negative", "count", "sum", "indivisible"):
            result = got[f"a2a_bad_{key}"]
            assert result != "no error", key
            assert result[1] is True, (key, result)
            assert "split" in result[2] or "divide" in result[2], \
                (key, result)


def test_alltoall_dtypes(job):
    size, r = job
    splits = [uneven_splits(s, size) for s in range(size)]
    for rank in range(size):
        got = r[rank]
        n = [sum(sp) for sp in splits]
        bf16 = [np.arange(n[s]) + 10.0 * s for s in range(size)]
        flags = [np.array([(i + s) % 2 == 0 for i in range(n[s])])
                 for s in range(size)]
        i16 = [np.arange(n[s]) + 1000 * s for s in range(size)]
        assert got["a2a_bfloat16"][0] == "torch.bfloat16"
        check(got["a2a_bfloat16"][1], alltoall(bf16, splits, rank)[0],
              "bfloat16")
        assert got["a2a_bool"][0] == "torch.bool"
        assert got["a2a_bool"][1] == \
            alltoall(flags, splits, rank)[0].tolist()
        assert got["a2a_int16"][0] == "torch.int16"
        assert got["a2a_int16"][1] == alltoall(i16, splits, rank)[0].tolist()


# -- reducescatter ------------------------------------------------------------

def test_reducescatter_sum_and_average_with_uneven_rows(job):
    size, r = job
    rows = 2 * size + 1
    assert rows % size != 0
    total = sum(rows_of(rows, 2, 1) * (s + 1) for s in range(size))
    for rank in range(size):
        got = r[rank]
        want = scatter(total, size, rank)
        check(got["rs_sum"], want, "sum")
        check(got["rs_async"], want, "async")
        check(got["rs_average"], want / size, "average")
        check(got["rs_scaled"], want * 0.5 * 3.0, "scaled")
        assert got["rs_input_unchanged"] is True
        assert got["rs_int32"] == ["torch.int32", want.astype(int).tolist()]
        for dtype in ("int16", "bfloat16"):
            out_dtype, values = got[f"rs_torch.{dtype}"]
            assert out_dtype == f"torch.{dtype}"
            check(values, want, dtype)
        few = sum(rows_of(size - 1, 2, 1) * (s + 1) for s in range(size))
        shape, values = got["rs_fewer_rows_than_ranks"]
        want_few = scatter(few, size, rank)
        assert shape == list(want_few.shape)
        check(np.reshape(values, shape), want_few, "fewer rows")
        assert "dtype torch.bool is not supported" in got["rs_bool"]


# -- grouped ------------------------------------------------------------------

def group_inputs(rank):
    return [np.array([1.0, 2.0, 3.0]) * (rank + 1), rows_of(2, 2, rank),
            np.array([rank + 1, -(rank + 2), 7, 0]),
            np.array([0.5, 1.5]) * (rank + 1)]


def test_grouped_ops_equal_the_per_tensor_results(job):
    size, r = job
    inputs = [group_inputs(s) for s in range(size)]
    sums = [sum(inp[i] for inp in inputs) for i in range(4)]
    rows = 2 * size + 1
    rs_inputs = [[rows_of(rows, 2, 1) * (s + 1), rows_of(size, 3, s)]
                 for s in range(size)]
    rs_totals = [sum(inp[i] for inp in rs_inputs) for i in range(2)]
    for rank in range(size):
        got = r[rank]
        for i in range(4):
            check(got["g_ar_sum"][i], sums[i], f"grouped allreduce {i}")
            check(got["ar_each_sum"][i], sums[i], f"allreduce {i}")
        assert got["g_ar_sum_dtypes"] == ["torch.float32", "torch.float64",
                                          "torch.int32", "torch.bfloat16"]
        for i in range(2):
            check(got["g_ar_average"][i], sums[i] / size, "average")
            check(got["g_ar_scaled"][i], sums[i] * 2.0 * 0.25, "scaled")
            check(got["g_ar_async"][1][i],
                  np.max([inp[i] for inp in inputs], axis=0), "async max")
            check(got["g_ar_async_in_place"][1][i],
                  np.min([inp[i] for inp in inputs], axis=0), "async min")
        assert got["g_ar_async_in_place"][0] is True
        first_is, column_is, first, base = got["g_ar_in_place"]
        assert first_is and column_is
        check(first, np.array([1.0, 2.0]) * sum(range(1, size + 1)),
              "in place")
        want_base = rows_of(3, 4, 0) * (rank + 1)
        want_base[:, 1] = rows_of(3, 4, 0)[:, 1] * sum(range(1, size + 1))
        check(base, want_base, "non-contiguous in place")
        fp16_total = 0.1 * sum(range(1, size + 1))
        assert got["g_ar_fp16"][0] == "torch.float32"
        assert got["g_ar_fp16"][1] == pytest.approx(fp16_total, abs=2e-3)
        assert got["g_ar_fp16"][1] != pytest.approx(fp16_total, abs=1e-6)

        gathered = [np.concatenate([np.full((s + 1, 2), s)
                                    for s in range(size)]),
                    np.array([s % 2 == 0 for s in range(size)]),
                    np.concatenate([np.arange(3.0) + s
                                    for s in range(size)])]
        dtypes = ["torch.int64", "torch.bool", "torch.bfloat16"]
        for key in ("g_ag", "ag_each"):
            for (dtype, values), want, want_dtype in zip(got[key], gathered,
                                                         dtypes):
                assert dtype == want_dtype, key
                assert values == want.tolist(), key
        assert got["g_ag_async"] == [gathered[0].tolist()]

        for key, scale in (("g_rs_sum", 1), ("rs_each_sum", 1),
                           ("g_rs_async", 1), ("g_rs_average", 1 / size)):
            for i in range(2):
                check(got[key][i], scatter(rs_totals[i], size, rank) * scale,
                      f"{key} {i}")


# -- autograd -----------------------------------------------------------------

def test_autograd_gradients(job):
    size, r = job
    splits = [uneven_splits(s, size) for s in range(size)]
    rows = 2 * size + 1
    for rank in range(size):
        got = r[rank]
        # alltoall: my k-th row for rank d lands there at position p =
        # (rows d got from lower ranks) + k, where d's loss weighs it by
        # 100 d + p + 1.
        def a2a_grad(sp_all):
            grad = []
            for d in range(size):
                before = sum(sp_all[s][d] for s in range(rank))
                grad += [[100.0 * d + before + k + 1] * 2
                         for k in range(sp_all[rank][d])]
            return np.array(grad).reshape(-1, 2)
        check(got["grad_a2a_splits"], a2a_grad(splits), "alltoall splits")
        assert got["a2a_received_requires_grad"] is False
        equal = [[s + 1] * size for s in range(size)]
        check(got["grad_a2a_equal"], a2a_grad(equal), "alltoall equal")

        # reducescatter: my row i belongs to rank d's block at position p,
        # so d(sum of losses)/dx is d's weight there for Sum, that over size
        # for Average. Horovod's gradient is size times that (allreduce's
        # convention): times size for Sum, as is for Average, then times
        # the scale factors.
        grad = np.concatenate([weights(d, count, 2)
                               for d, (_, count) in
                               enumerate(blocks(rows, size))])
        check(got["grad_rs_sum"], grad * size, "reducescatter sum")
        check(got["grad_rs_average"], grad, "reducescatter average")
        check(got["grad_rs_sum_post2"], grad * size * 2,
              "reducescatter postscale")
        check(got["grad_rs_average_pre3"], grad * 3,
              "reducescatter prescale")
        check(got["grad_g_rs_sum"], grad * size, "grouped reducescatter")

        # grouped allreduce: the allreduce of the loss weights.
        wa = sum(np.array([1.0, 2.0, 3.0]) * (s + 1) for s in range(size))
        wb = sum(np.array([1.0, -1.0]) * (s + 1) for s in range(size))
        check(got["grad_g_ar_sum"][0], wa, "grouped allreduce a")
        check(got["grad_g_ar_sum"][1], wb, "grouped allreduce b")
        check(got["grad_g_ar_average"][0], wa / size, "average a")
        check(got["grad_g_ar_average"][1], wb / size, "average b")

        # grouped allgather: the weights averaged over ranks, my rows.
        n = sum(s + 1 for s in range(size))
        mean_w = rows_of(n, 2, 0) * np.mean([s + 1 for s in range(size)])
        start = sum(s + 1 for s in range(rank))
        check(got["grad_g_ag"], mean_w[start:start + rank + 1],
              "grouped allgather")


# -- join ---------------------------------------------------------------------

def join_value(rank, step):
    return 10.0 * (rank + 1) + step


def test_join_with_uneven_steps(job):
    size, r = job
    for rank in range(size):
        got = r[rank]
        assert len(got["join_sums"]) == rank + 1
        for step, values in enumerate(got["join_sums"]):
            # Ranks step..size-1 still submit; the joined ones add nothing.
            want = sum(join_value(s, step) for s in range(step, size))
            assert values == [want] * 3, (rank, step)
        for step, values in enumerate(got["join_gathers"]):
            if step == 0:  # nobody has joined yet
                assert values == list(range(size)), rank
            else:  # ranks 0..step-1 have joined: refused, as in Horovod
                name = f"allgather.join.ag.{step}"
                assert values.startswith(f"allgather '{name}' cannot run "
                                         "while rank(s) "), values
                assert "have joined (hvd.join)" in values, values
        # The rank with the most steps can only finish after the others
        # joined, so it joins last, and everyone says so.
        assert got["join_last"] == size - 1
        assert got["after_join"] == [float(size)]


# -- process sets -------------------------------------------------------------

def test_ops_on_a_process_set(job):
    size, r = job
    members = [0, size - 1]
    last = size - 1
    for rank in range(size):
        got = r[rank]
        assert got["ids_and_ranks"] == {"0": list(range(size)),
                                        "1": members}
        assert got["set"] == [1, members, rank in members]
        if rank not in members:
            assert "rank 1 is not in process set" in got["outside"]
            continue
        total = float(sum(m + 1 for m in members))
        assert got["ps_allreduce"] == [total]
        assert got["ps_allreduce_"] == [total]
        assert got["ps_allreduce_average"] == [total / 2]
        assert got["ps_allreduce_async"] == [float(last + 1)]
        assert got["ps_allgather"] == [m for m in members
                                       for _ in range(m + 1)]
        assert got["ps_broadcast"] == [float(last + 1)]
        assert got["ps_broadcast_"] == [float(last + 1)]
        # The set's alltoall: rank 0 sends [1, 2] rows, the last [2, 0].
        splits = {0: [1, 2], last: [2, 0]}
        inputs = [rows_of(sum(splits[m]), 1, 10 * m) for m in members]
        want, received = alltoall(inputs, [splits[m] for m in members],
                                  members.index(rank))
        check(got["ps_alltoall"][0], want, "set alltoall")
        assert got["ps_alltoall"][1] == received
        rs_total = sum(rows_of(3, 1, 1) * (m + 1) for m in members)
        check(got["ps_reducescatter"],
              scatter(rs_total, 2, members.index(rank)), "set rs")
        assert got["ps_grouped_allreduce"] == [[total], [2 * total]]
        assert got["ps_grouped_allgather"] == [members]
        g_total = sum(rows_of(2, 1, m) for m in members)
        check(got["ps_grouped_reducescatter"][0],
              scatter(g_total, 2, members.index(rank)), "set grouped rs")
        assert got["ps_grad_allreduce"] == [total] * 2
        n = sum(m + 1 for m in members)
        start = sum(m + 1 for m in members[:members.index(rank)])
        mean = np.mean([m + 1 for m in members])
        check(got["ps_grad_allgather"],
              np.arange(float(n))[start:start + rank + 1] * mean,
              "set allgather grad")
        assert got["ps_broadcast_object"] == {"from": last}
        assert got["ps_allgather_object"] == [["r", m] for m in members]
        assert got["ps_broadcast_parameters"] == [
            [[1.0 * (last + 1), 2.0 * (last + 1)]], [float(last + 1)]]
        assert got["ps_broadcast_optimizer_state"] == \
            pytest.approx(0.1 * (last + 1))
        # Uneven steps in the set: rank 0 one, the last two; then join.
        sums = [[join_value(0, 0) + join_value(last, 0)],
                [join_value(last, 1)]]
        assert got["ps_join_sums"] == sums[:1 if rank == 0 else 2]
        assert got["ps_join_last"] == last


def test_distributed_optimizer_on_a_process_set(job):
    size, r = job
    members = [0, size - 1]
    for rank in range(size):
        w = np.array([1.0, 1.0])
        for step in range(2):
            grads = {s: np.array([s + 1.0, step + 1.0]) for s in range(size)}
            if rank in members:
                grad = np.mean([grads[m] for m in members], axis=0)
            else:  # outside the set: its own gradient, nothing averaged
                grad = grads[rank]
            w = w - 0.1 * grad
        check(r[rank]["ps_optimizer"], [w], f"rank {rank} weights")
