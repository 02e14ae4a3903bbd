"""hvd.torch's tensor collectives and helpers, on two workers under hvdrun.

Each test writes a worker script that records what it saw in a dict ``R``
(printed as one ``RESULT <json>`` line per rank); the test asserts on the
values. A failing worker (an exception, a failed assert) makes hvdrun exit
non-zero, and the test fails showing hvdrun's output.
"""


import numpy as np
import pytest


from conftest import run_torch_workers



def test_allreduce_ops_and_dtypes(hvdrun, tmp_path):
    r = run_torch_workers(hvdrun, tmp_path, """
        base = torch.arange(1, 7, dtype=torch.float32)
        x = base * (rank + 1)  # rank 0: 1..6, rank 1: 2..12
        R["sum"] = hvd.allreduce(x, op=hvd.Sum).tolist()
        R["average"] = hvd.allreduce(x).tolist()
        R["min"] = hvd.allreduce(x, op=hvd.Min).tolist()
        R["max"] = hvd.allreduce(x, op=hvd.Max).tolist()
        R["product"] = hvd.allreduce(x, op=hvd.Product).tolist()
        R["average_flag_false"] = hvd.allreduce(x, average=False).tolist()
        R["scaled"] = hvd.allreduce(x, op=hvd.Sum, prescale_factor=2.0,
                                    postscale_factor=0.25).tolist()
        R["input_unchanged"] = x.tolist() == (base * (rank + 1)).tolist()
        for dtype in (torch.uint8, torch.int8, torch.int16, torch.int32,
                      torch.int64, torch.float16, torch.bfloat16,
                      torch.float64):
            t = torch.tensor([rank + 1, 3], dtype=dtype)
            out = hvd.allreduce(t, op=hvd.Sum, name=f"dtype.{dtype}")
            R[str(dtype)] = [str(out.dtype), out.tolist()]
        try:
            hvd.allreduce(torch.tensor([True]))
        except TypeError as e:
            R["bool"] = str(e)
        R["scalar"] = hvd.allreduce(torch.tensor(float(rank + 1)),
                                    op=hvd.Sum).tolist()
    """)
    for rank in (0, 1):
        got = r[rank]
        assert got["sum"] == [3.0, 6.0, 9.0, 12.0, 15.0, 18.0]
        assert got["average"] == [1.5, 3.0, 4.5, 6.0, 7.5, 9.0]
        assert got["min"] == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
        assert got["max"] == [2.0, 4.0, 6.0, 8.0, 10.0, 12.0]
        assert got["product"] == [2.0, 8.0, 18.0, 32.0, 50.0, 72.0]
        assert got["average_flag_false"] == got["sum"]
        assert got["scaled"] == [1.5, 3.0, 4.5, 6.0, 7.5, 9.0]
        assert got["input_unchanged"] is True
        for dtype in ("uint8", "int8", "int16", "int32", "int64"):
            assert got[f"torch.{dtype}"] == [f"torch.{dtype}", [3, 6]]
        for dtype in ("float16", "bfloat16", "float64"):
            assert got[f"torch.{dtype}"] == [f"torch.{dtype}", [3.0, 6.0]]
        assert "dtype torch.bool is not supported" in got["bool"]
        assert got["scalar"] == 3.0


def test_allreduce_in_place_async_and_non_contiguous(hvdrun, tmp_path):
    r = run_torch_workers(hvdrun, tmp_path, """
        t = torch.full((4,), float(rank + 1))
        ptr = t.data_ptr()
        out = hvd.allreduce_(t, op=hvd.Sum)
        R["in_place"] = [out is t, t.data_ptr() == ptr, t.tolist()]

        a = torch.arange(12, dtype=torch.float64).view(3, 4) * (rank + 1)
        nc = a.t()  # non-contiguous view of a
        out = hvd.allreduce_(nc, op=hvd.Sum, name="noncontig")
        R["non_contiguous"] = [out is nc, a.tolist()]

        h1 = hvd.allreduce_async(torch.tensor([1.0, 2.0]) * (rank + 1),
                                 name="async.a", op=hvd.Sum)
        u = torch.tensor([10, 20], dtype=torch.int32) * (rank + 1)
        h2 = hvd.allreduce_async_(u, name="async.b", op=hvd.Max)
        hvd.barrier()
        while not (hvd.poll(h1) and hvd.poll(h2)):
            pass
        R["async"] = [hvd.synchronize(h1).tolist(),
                      hvd.synchronize(h2) is u, u.tolist()]
        try:
            hvd.synchronize(h1)
        except ValueError as e:
            R["twice"] = str(e)

        f = torch.tensor([1.0, 2.0, 3.0]) * (rank + 1)
        hvd.allreduce_(f, op=hvd.Sum, compression=hvd.Compression.fp16)
        R["fp16_in_place"] = [str(f.dtype), f.tolist()]
        g = hvd.allreduce(torch.tensor([0.1]), op=hvd.Sum,
                          compression=hvd.Compression.fp16)
        R["fp16"] = [str(g.dtype), g.item()]
    """)
    for rank in (0, 1):
        got = r[rank]
        assert got["in_place"] == [True, True, [3.0] * 4]
        expected = [[3.0 * (4 * i + j) for j in range(4)] for i in range(3)]
        assert got["non_contiguous"] == [True, expected]
        assert got["async"] == [[3.0, 6.0], True, [20, 40]]
        assert "already synchronized" in got["twice"]
        assert got["fp16_in_place"] == ["torch.float32", [3.0, 6.0, 9.0]]
        # 0.1 + 0.1 in float16 is not 0.2 in float32: fp16 was really used.
        assert got["fp16"][0] == "torch.float32"
        assert got["fp16"][1] != pytest.approx(0.2, abs=1e-6)
        assert got["fp16"][1] == pytest.approx(0.2, abs=1e-3)


def test_allgather(hvdrun, tmp_path):
    r = run_torch_workers(hvdrun, tmp_path, """
        t = torch.full((rank + 1, 2), rank, dtype=torch.int64)
        R["sync"] = hvd.allgather(t).tolist()
        h = hvd.allgather_async(torch.tensor([rank + 0.5]), name="g")
        R["async"] = hvd.synchronize(h).tolist()
        nc = torch.arange(6.0).view(2, 3).t() + 10 * rank  # 3x2
        R["non_contiguous"] = hvd.allgather(nc).tolist()
        R["bool"] = hvd.allgather(torch.tensor([rank == 0])).tolist()
        b = hvd.allgather(torch.tensor([rank + 1.0], dtype=torch.bfloat16))
        R["bfloat16"] = [str(b.dtype), b.tolist()]
    """)
    for rank in (0, 1):
        got = r[rank]
        assert got["sync"] == [[0, 0], [1, 1], [1, 1]]
        assert got["async"] == [0.5, 1.5]
        assert got["non_contiguous"] == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0],
                                         [10.0, 13.0], [11.0, 14.0],
                                         [12.0, 15.0]]
        assert got["bool"] == [True, False]
        assert got["bfloat16"] == ["torch.bfloat16", [1.0, 2.0]]


def test_broadcast(hvdrun, tmp_path):
    r = run_torch_workers(hvdrun, tmp_path, """
        t = torch.full((3,), float(rank + 1))
        out = hvd.broadcast(t, root_rank=1)
        R["sync"] = [out.tolist(), t.tolist()]
        u = torch.full((2,), rank + 5, dtype=torch.int32)
        out = hvd.broadcast_(u, root_rank=1)
        R["in_place"] = [out is u, u.tolist()]
        a = torch.arange(6.0).view(2, 3) + 100 * rank
        nc = a.t()
        hvd.broadcast_(nc, root_rank=0, name="nc")
        R["non_contiguous"] = a.tolist()
        h = hvd.broadcast_async_(torch.tensor([rank * 7]), 1, name="h")
        R["async"] = hvd.synchronize(h).tolist()
        flags = torch.tensor([rank == 1, rank == 0])
        hvd.broadcast_(flags, 1)
        R["bool"] = flags.tolist()
    """)
    for rank in (0, 1):
        got = r[rank]
        assert got["sync"] == [[2.0] * 3, [float(rank + 1)] * 3]
        assert got["in_place"] == [True, [6, 6]]
        assert got["non_contiguous"] == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
        assert got["async"] == [7]
        assert got["bool"] == [True, False]


def test_autograd(hvdrun, tmp_path):
    r = run_torch_workers(hvdrun, tmp_path, """
        w = torch.tensor([1.0, 2.0, 3.0]) * (rank + 1)
        x = torch.tensor([1.0, 1.0, 1.0], requires_grad=True)
        (hvd.allreduce(x, op=hvd.Sum) * w).sum().backward()
        R["allreduce_sum"] = x.grad.tolist()
        x = torch.tensor([1.0, 1.0, 1.0], requires_grad=True)
        (hvd.allreduce(x) * w).sum().backward()
        R["allreduce_average"] = x.grad.tolist()

        x = torch.ones(rank + 1, 2, requires_grad=True)
        y = hvd.allgather(x)  # 3 x 2
        (y * torch.arange(6.0).view(3, 2) * (rank + 1)).sum().backward()
        R["allgather"] = x.grad.tolist()

        x = torch.ones(2, requires_grad=True)
        (hvd.broadcast(x, root_rank=0) * (rank + 1)).sum().backward()
        R["broadcast"] = x.grad.tolist()
    """)
    for rank in (0, 1):
        got = r[rank]
        # d/dx of sum_r (allreduce(x) * w_r): the gradient allreduced.
        assert got["allreduce_sum"] == [3.0, 6.0, 9.0]
        assert got["allreduce_average"] == [1.5, 3.0, 4.5]
        # horovod: the gathered gradient averaged over ranks (factor 1.5),
        # rows of this rank.
        rows = [[0.0, 1.5], [3.0, 4.5], [6.0, 7.5]]
        assert got["allgather"] == (rows[:1] if rank == 0 else rows[1:])
        # horovod: averaged on the root, zero elsewhere.
        assert got["broadcast"] == ([1.5, 1.5] if rank == 0 else [0.0, 0.0])


def test_broadcast_parameters(hvdrun, tmp_path):
    r = run_torch_workers(hvdrun, tmp_path, """
        def make():
            torch.manual_seed(rank)
            return torch.nn.Sequential(torch.nn.Linear(3, 4),
                                       torch.nn.BatchNorm1d(4))
        def dump(m):
            return {k: v.tolist() for k, v in m.state_dict().items()}
        model = make()
        model[1].running_mean.add_(rank + 1)
        model[1].num_batches_tracked.add_(rank + 3)
        R["before"] = dump(model)
        hvd.broadcast_parameters(model.state_dict(), root_rank=0)
        R["state_dict"] = dump(model)
        model = make()
        hvd.broadcast_parameters(model.named_parameters(), root_rank=1)
        R["named_parameters"] = dump(model)
        R["requires_grad"] = all(p.requires_grad for p in model.parameters())
    """)
    assert r[0]["before"] != r[1]["before"]
    assert r[1]["state_dict"] == r[0]["state_dict"] == r[0]["before"]
    assert r[0]["state_dict"]["1.num_batches_tracked"] == 3
    # Parameters come from rank 1; buffers are not parameters and stay.
    for key in ("0.weight", "0.bias", "1.weight", "1.bias"):
        assert r[0]["named_parameters"][key] == r[1]["named_parameters"][key]
    assert r[0]["named_parameters"]["0.weight"] != r[0]["before"]["0.weight"]
    assert r[0]["requires_grad"] and r[1]["requires_grad"]


def test_broadcast_optimizer_state(hvdrun, tmp_path):
    r = run_torch_workers(hvdrun, tmp_path, """
        def dump(opt):
            sd = opt.state_dict()
            state = {str(k): {n: (v.tolist() if torch.is_tensor(v) else v)
                              for n, v in s.items()}
                     for k, s in sd["state"].items()}
            return {"state": state, "param_groups": sd["param_groups"]}
        torch.manual_seed(0)
        model = torch.nn.Linear(3, 2)
        adam = torch.optim.Adam(model.parameters(), lr=0.01 * (rank + 1),
                                betas=(0.8 + 0.1 * rank, 0.99))
        sgd = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)
        for step in range(rank + 1):  # rank 1 takes one step more
            for opt in (adam, sgd):
                opt.zero_grad()
                (model(torch.ones(1, 3)) * (rank + 1)).sum().backward()
                opt.step()
        R["before"] = [dump(adam), dump(sgd)]
        hvd.broadcast_optimizer_state(adam, root_rank=0)
        hvd.broadcast_optimizer_state(sgd, root_rank=0)
        R["after"] = [dump(adam), dump(sgd)]
        # Never stepped, no gradients yet, weight decay (a step would move
        # the parameters): every rank creates the state by a zero-gradient
        # step that leaves the parameters as they were and, as Horovod's,
        # zero gradients in place of None.
        before = [p.tolist() for p in model.parameters()]
        R["params"] = before
        fresh = torch.optim.AdamW(model.parameters(), lr=0.5 + rank,
                                  weight_decay=0.5)
        model.zero_grad(set_to_none=True)
        hvd.broadcast_optimizer_state(fresh, root_rank=1, model=model)
        R["fresh"] = dump(fresh)
        R["fresh_kept"] = [[p.tolist() for p in model.parameters()] == before,
                           [p.grad.tolist() for p in model.parameters()]]
        # A DistributedOptimizer steps locally (no allreduce), on zero
        # gradients even where gradients exist, which it leaves as they
        # were; hvd's earlier positional process_set still works.
        dist = hvd.DistributedOptimizer(
            torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9,
                            weight_decay=0.5),
            named_parameters=model.named_parameters())
        for p in model.parameters():
            p.grad.fill_(7.0)
        hvd.broadcast_optimizer_state(dist, 0, hvd.global_process_set)
        R["dist"] = dump(dist)
        R["dist_kept"] = [[p.tolist() for p in model.parameters()] == before,
                          {v for p in model.parameters()
                           for v in p.grad.flatten().tolist()} == {7.0}]
        # Horovod's test_broadcast_state_no_grad: a parameter that does not
        # require grad keeps grad None; the other's zero gradient can be
        # broadcast at once.
        class ModelNoGrad(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.a = torch.nn.Parameter(
                    torch.tensor([1, 3], dtype=torch.int32),
                    requires_grad=False)
                self.b = torch.nn.Parameter(torch.rand(4))
        no_grad = ModelNoGrad()
        opt = hvd.DistributedOptimizer(
            torch.optim.SGD(no_grad.parameters(), lr=0.001, weight_decay=1e-6,
                            momentum=0.9, nesterov=True),
            named_parameters=no_grad.named_parameters())
        hvd.broadcast_parameters(no_grad.state_dict(), root_rank=0)
        hvd.broadcast_optimizer_state(opt, root_rank=0)
        grad = opt.param_groups[0]["params"][1].grad
        R["no_grad"] = [opt.param_groups[0]["params"][0].grad is None,
                        hvd.broadcast(grad, root_rank=0).tolist()]
    """)
    assert r[0]["before"] != r[1]["before"]
    assert r[1]["after"] == r[0]["after"] == r[0]["before"]
    adam = r[1]["after"][0]
    assert adam["param_groups"][0]["lr"] == 0.01
    assert adam["param_groups"][0]["betas"] == [0.8, 0.99]
    steps = [s["step"] for s in adam["state"].values()]
    assert steps == [1.0, 1.0]
    assert r[0]["fresh"] == r[1]["fresh"]
    assert r[0]["fresh"]["param_groups"][0]["lr"] == 1.5
    fresh = r[0]["fresh"]["state"]
    assert sorted(fresh) == ["0", "1"]  # weight and bias
    for s in fresh.values():
        assert s["step"] == 1.0
        assert set(np.ravel(s["exp_avg"])) == {0.0}
        assert set(np.ravel(s["exp_avg_sq"])) == {0.0}
    for rank in (0, 1):
        assert r[rank]["fresh_kept"] == [True, [[[0.0] * 3] * 2, [0.0] * 2]]
        assert r[rank]["dist_kept"] == [True, True]
        assert r[rank]["no_grad"] == [True, [0.0] * 4]
    assert r[0]["dist"] == r[1]["dist"]
    # Rank 0's momentum after a step on zero gradients: weight_decay * p.
    momenta = [s["momentum_buffer"] for s in r[0]["dist"]["state"].values()]
    for momentum, param in zip(momenta, r[0]["params"]):
        assert np.allclose(momentum, 0.5 * np.asarray(param))


def test_objects(hvdrun, tmp_path):
    r = run_torch_workers(hvdrun, tmp_path, """
        obj = {"rank": rank, "tensor": torch.arange(3) * rank}
        got = hvd.broadcast_object(obj, root_rank=1)
        R["broadcast"] = [got["rank"], got["tensor"].tolist()]
        R["allgather"] = [[o["rank"], o["tensor"].tolist()]
                          for o in hvd.allgather_object(obj, name="objs")]
    """)
    for rank in (0, 1):
        assert r[rank]["broadcast"] == [1, [0, 1, 2]]
        assert r[rank]["allgather"] == [[0, [0, 0, 0]], [1, [0, 1, 2]]]


def test_zero_grad_with_pending_allreduce_raises(hvdrun, tmp_path):
    r = run_torch_workers(hvdrun, tmp_path, """
        torch.manual_seed(0)
        model = torch.nn.Linear(2, 1)
        opt = hvd.DistributedOptimizer(
            torch.optim.SGD(model.parameters(), lr=0.1),
            named_parameters=model.named_parameters())
        model(torch.ones(1, 2) * (rank + 1)).sum().backward()
        try:
            opt.zero_grad()
            R["zero_grad"] = "allowed"
        except AssertionError as e:
            R["zero_grad"] = str(e)
        opt.step()
        R["grad"] = model.weight.grad.tolist()
        opt.zero_grad()  # allowed once nothing is pending
        R["after_step"] = model.weight.grad.abs().sum().item()
    """)
    for rank in (0, 1):
        assert "zero_grad() was called after loss.backward()" in \
            r[rank]["zero_grad"]
        assert r[rank]["grad"] == [[1.5, 1.5]]  # the average of 1 and 2
        assert r[rank]["after_step"] == 0.0


def test_mismatch_error_passes_through(hvdrun, tmp_path):
    r = run_torch_workers(hvdrun, tmp_path, """
        try:
            hvd.allreduce(torch.zeros(rank + 1), name="bad")
            R["error"] = None
        except hvd.MismatchError as e:
            R["error"] = [type(e).__name__, isinstance(e, ValueError),
                          isinstance(e, RuntimeError),
                          isinstance(e, hvd.HorovodInternalError)]
        R["after"] = hvd.allreduce(torch.ones(2), op=hvd.Sum).tolist()
    """)
    for rank in (0, 1):
        # A RuntimeError as in Horovod, but not one an elastic loop retries.
        assert r[rank]["error"] == ["MismatchError", True, True, False]
        assert r[rank]["after"] == [2.0, 2.0]


def test_every_collective_takes_cuda_arrays_and_says_why_none_runs(
        hvdrun, tmp_path):
    r = run_torch_workers(hvdrun, tmp_path, """
        import importlib, os
        import numpy as np
        core = importlib.import_module("hvd")  # the numpy API

        class HostAsCuda:  # a CUDA array's interface over host memory
            def __init__(self):
                self.host = np.ones(2, np.float32)
                self.device = 0
                self.__cuda_array_interface__ = {
                    "shape": (2,), "typestr": "<f4", "strides": None,
                    "data": (self.host.ctypes.data, False), "version": 3,
                    "stream": None}
        R["gpu_here"] = os.path.exists("/dev/nvidia0")
        core_calls = {
            "allreduce_async_": lambda a: core.allreduce_async_(a),
            "grouped_allreduce_async_":
                lambda a: core.grouped_allreduce_async_([a]),
            "broadcast_async_": lambda a: core.broadcast_async_(a, 0),
            "allgather_async": lambda a: core.allgather_async(a),
            "grouped_allgather_async":
                lambda a: core.grouped_allgather_async([a]),
            "alltoall_async": lambda a: core.alltoall_async(a, [2]),
            "reducescatter_async": lambda a: core.reducescatter_async(a),
            "grouped_reducescatter_async":
                lambda a: core.grouped_reducescatter_async([a]),
        }
        for name, call in core_calls.items():
            if R["gpu_here"]:
                break  # host memory is no CUDA memory there
            try:
                call(HostAsCuda())
                R[name] = "accepted"
            except Exception as e:
                R[name] = [type(e).__name__, str(e)]
        R["nccl"] = core.nccl_built()
    """, np=1)
    got = r[0]
    if got["gpu_here"]:
        return  # tests/gpu/ runs CUDA tensors on a GPU machine
    # The core takes the CUDA array where a numpy one goes, for every
    # collective; the runtime says why no GPU runs it here.
    for name in ("allreduce_async_", "grouped_allreduce_async_",
                 "broadcast_async_", "allgather_async",
                 "grouped_allgather_async", "alltoall_async",
                 "reducescatter_async", "grouped_reducescatter_async"):
        kind, message = got[name]
        assert kind == "InvalidArgumentError", got[name]
        if got["nccl"]:
            assert "a CUDA tensor: no CUDA device is usable here: " \
                "cudaGetDeviceCount says" in message, message
        else:
            assert "built without NCCL" in message, message
