"""CUDA tensors through NCCL on a machine with GPUs, through the real
hvdrun. scripts/test.sh's gpu stage runs this file when nvidia-smi sees a
GPU and names its tests as not run elsewhere; the pytest stage leaves it
out (docs/gpu.md). What can be checked without a GPU runs in
test_torch_api.py and tests/runtime/nccl_*_test.cc."""

import time

import pytest

from conftest import run_torch_workers
from test_elastic import Scenario, check_consistent_finish

torch = pytest.importorskip("torch")
GPUS = torch.cuda.device_count() if torch.cuda.is_available() else 0
pytestmark = pytest.mark.skipif(GPUS == 0, reason="no CUDA device here")


def test_cuda_collectives_match_the_cpu(hvdrun, tmp_path):
    """Every op and scaling, grouped, allgather, broadcast, alltoall,
    reducescatter and DistributedOptimizer on CUDA tensors give what the
    same calls give on CPU tensors. One rank per GPU (NCCL takes a device
    once per communicator), at most two."""
    r = run_torch_workers(hvdrun, tmp_path, """
        torch.cuda.set_device(hvd.local_rank())
        torch.manual_seed(hvd.rank())
        x = torch.randn(5, 3)
        same = {}
        def check(name, cpu, gpu):
            assert gpu.is_cuda, name
            same[name] = bool(torch.allclose(cpu, gpu.cpu(), rtol=1e-5,
                                             atol=1e-5))
        for op in ("Sum", "Average", "Min", "Max", "Product"):
            o = getattr(hvd, op)
            check(op, hvd.allreduce(x, op=o, name="c" + op),
                  hvd.allreduce(x.cuda(), op=o, name="g" + op))
        for op in ("Sum", "Average"):
            o = getattr(hvd, op)
            check(op + " scaled",
                  hvd.allreduce(x, op=o, prescale_factor=0.5,
                                postscale_factor=3, name="cs" + op),
                  hvd.allreduce(x.cuda(), op=o, prescale_factor=0.5,
                                postscale_factor=3, name="gs" + op))
        ints = torch.arange(6, dtype=torch.int64) * (hvd.rank() + 1)
        check("int64 sum", hvd.allreduce(ints, op=hvd.Sum, name="ci"),
              hvd.allreduce(ints.cuda(), op=hvd.Sum, name="gi"))
        half = x.half()
        check("float16 average", hvd.allreduce(half, name="ch").float(),
              hvd.allreduce(half.cuda(), name="gh").float())
        group = [x, x[0].clone(), torch.ones(4)]
        for c, g in zip(
                hvd.grouped_allreduce(group, op=hvd.Sum, name="cg"),
                hvd.grouped_allreduce([t.cuda() for t in group], op=hvd.Sum,
                                      name="gg")):
            check("grouped", c, g)
        root = hvd.size() - 1
        check("broadcast", hvd.broadcast(x, root, name="cb"),
              hvd.broadcast(x.cuda(), root, name="gb"))
        rows = x[:hvd.rank() + 1]  # unequal parts
        check("allgather", hvd.allgather(rows, name="ca"),
              hvd.allgather(rows.cuda(), name="ga"))
        for c, g in zip(
                hvd.grouped_allgather([rows, ints], name="cga"),
                hvd.grouped_allgather([rows.cuda(), ints.cuda()],
                                      name="gga")):
            check("grouped allgather", c, g)
        # Rank r sends r + k rows to rank k (none from rank 0 to rank 0).
        splits = [hvd.rank() + k for k in range(hvd.size())]
        payload = torch.randn(sum(splits), 3)
        c_rows, c_got = hvd.alltoall(payload, splits, name="cat")
        g_rows, g_got = hvd.alltoall(payload.cuda(), splits, name="gat")
        check("alltoall", c_rows, g_rows)
        same["alltoall splits"] = c_got.tolist() == g_got.tolist()
        for op in ("Sum", "Average"):  # 5 rows: unequal blocks on 2 ranks
            o = getattr(hvd, op)
            check("reducescatter " + op,
                  hvd.reducescatter(x, op=o, postscale_factor=2,
                                    name="cr" + op),
                  hvd.reducescatter(x.cuda(), op=o, postscale_factor=2,
                                    name="gr" + op))
        even = torch.randn(4, 2)
        for c, g in zip(
                hvd.grouped_reducescatter([x, even], op=hvd.Sum, name="cgr"),
                hvd.grouped_reducescatter([x.cuda(), even.cuda()],
                                          op=hvd.Sum, name="ggr")):
            check("grouped reducescatter", c, g)

        def train(device):
            torch.manual_seed(7)
            model = torch.nn.Linear(3, 2).to(device)
            opt = hvd.DistributedOptimizer(
                torch.optim.SGD(model.parameters(), lr=0.1),
                named_parameters=[(f"{device}.{n}", p)
                                  for n, p in model.named_parameters()])
            hvd.broadcast_parameters(
                {f"{device}.{k}": v for k, v in model.state_dict().items()},
                0)
            for step in range(3):
                opt.zero_grad()
                model(x.to(device)).square().sum().backward()
                opt.step()
            return model.weight.detach()
        check("optimizer", train("cpu"), train("cuda"))
        R["same"] = same
        R["nccl"] = hvd.nccl_built()
    """, np=min(GPUS, 2))
    for rank, got in r.items():
        assert got["nccl"] >= 22700, got
        assert all(got["same"].values()), (rank, got["same"])


# NCCL takes a device once per communicator: two ranks on one GPU are
# refused ("Duplicate GPU detected"), so a test of N ranks needs N GPUs.
@pytest.mark.skipif(GPUS < 2, reason="needs two GPUs: one per rank, as NCCL "
                    "refuses two ranks of one communicator on one device")
def test_kill_mid_nccl_allreduce_recovers_within_5_s(hvdrun, tmp_path):
    """A rank dies while its 4 MiB NCCL allreduce is in flight; the
    survivor's communicator is aborted (not destroyed, Horovod's hang),
    and the next generation reduces right, within 5 s of the kill."""
    s = Scenario(tmp_path, "", epochs=2, batches=3, payload=1 << 20,
                 cuda=True,
                 exits=[{"slot": "127.0.0.1:0", "epoch": 1, "batch": 1,
                         "how": "kill", "during": "payload"}])
    started = time.monotonic()
    result = hvdrun(["-np", "2", "--min-np", "1", "-H",
                     "localhost:1,127.0.0.1:1", *s.command()], timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    check_consistent_finish(s, 1)
    records = s.records()
    payloads = [r for r in records if r["event"] == "payload"]
    assert payloads and all(r["ok"] for r in payloads), payloads
    exit_time = next(r["time"] for r in records if r["event"] == "exit")
    after = [r["time"] for r in records
             if r["event"] == "batch" and r["time"] > exit_time]
    assert after and min(after) - exit_time < 5, (exit_time, after)
    assert time.monotonic() - started < 90


@pytest.mark.skipif(GPUS < 3, reason="needs three GPUs: one per rank, as "
                    "NCCL refuses two ranks of one communicator on one "
                    "device")
def test_kill_with_three_gpus_the_survivors_shrink_their_communicator(
        hvdrun, tmp_path):
    """One of three ranks dies mid NCCL allreduce: the two survivors shrink
    the failed generation's communicator (ncclCommShrink, no new unique
    id) instead of making a new one, and go on within 5 s."""
    s = Scenario(tmp_path, "", epochs=2, batches=3, payload=1 << 20,
                 cuda=True,
                 exits=[{"slot": "127.0.0.2:0", "epoch": 1, "batch": 1,
                         "how": "kill", "during": "payload"}])
    result = hvdrun(["-np", "3", "--min-np", "2", "--log-level", "info",
                     "-H", "localhost:1,127.0.0.1:1,127.0.0.2:1",
                     *s.command()], timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    check_consistent_finish(s, 2)
    assert result.stderr.count("shrunk from 3 to 2 ranks") == 2, \
        result.stderr
    records = s.records()
    exit_time = next(r["time"] for r in records if r["event"] == "exit")
    after = [r["time"] for r in records
             if r["event"] == "batch" and r["time"] > exit_time]
    assert after and min(after) - exit_time < 5, (exit_time, after)
