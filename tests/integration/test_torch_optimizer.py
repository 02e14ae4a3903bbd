"""hvd.torch.DistributedOptimizer on two workers equals one process.

Each worker trains on its half of every global batch; the final parameters
must equal those of plain single-process training on the whole global
batch, computed here in the test process from the same code. Also:
broadcast_optimizer_state creates a fresh optimizer's state without a
collective, whatever the DistributedOptimizer's flavour.
"""

import collections
import json
import os
import sys

import pytest
import torch

from conftest import rank_results


# Model, data and loss, shared by the workers and the reference.
COMMON = r'''
import torch

STEPS, GLOBAL_BATCH, FEATURES = 6, 8, 5
LR, MOMENTUM = 0.1, 0.9


def make_model():
    torch.manual_seed(7)
    return torch.nn.Sequential(torch.nn.Linear(FEATURES, 6), torch.nn.Tanh(),
                               torch.nn.Linear(6, 1)).double()


def batches():
    g = torch.Generator().manual_seed(11)
    x = torch.randn(STEPS, GLOBAL_BATCH, FEATURES, generator=g,
                    dtype=torch.float64)
    y = x.sum(dim=2, keepdim=True).sin()
    return x, y


def loss_fn(model, x, y):
    return torch.nn.functional.mse_loss(model(x), y)
'''

WORKER = COMMON + r'''
import json
import sys

import hvd.torch as hvd

passes = int(sys.argv[1])
compression = getattr(hvd.Compression, sys.argv[2])
predivide = float(sys.argv[3])
out_dir = sys.argv[4]
views = sys.argv[5] == "views"
set_to_none = sys.argv[6] == "set_to_none"

hvd.init()
assert hvd.size() == 2, hvd.size()
model = make_model()
if hvd.rank() == 1:  # start from different weights: broadcast must fix it
    with torch.no_grad():
        for p in model.parameters():
            p.add_(1.0)
hvd.broadcast_parameters(model.state_dict(), root_rank=0)
opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters(),
                               compression=compression,
                               backward_passes_per_step=passes,
                               gradient_predivide_factor=predivide,
                               gradients_as_buffer_views=views)
x, y = batches()
half = GLOBAL_BATCH // 2
for step in range(STEPS):
    xs = x[step, hvd.rank() * half:(hvd.rank() + 1) * half]
    ys = y[step, hvd.rank() * half:(hvd.rank() + 1) * half]
    opt.zero_grad(set_to_none=set_to_none)
    # Gradients of the micro-batches are summed before the allreduce.
    for xm, ym in zip(xs.chunk(passes), ys.chunk(passes)):
        (loss_fn(model, xm, ym) / passes).backward()
    opt.step()
state = {k: v.tolist() for k, v in model.state_dict().items()}
# How many storages the gradients live in: one buffer, or one each.
state["storages"] = len({p.grad.storage().data_ptr()
                         for p in model.parameters()})
with open(f"{out_dir}/rank{hvd.rank()}.json", "w") as f:
    json.dump(state, f)
print("done", flush=True)
'''


def reference_state():
    """Plain SGD on the whole global batch in this process."""
    ns = {}
    exec(COMMON, ns)
    model = ns["make_model"]()
    opt = torch.optim.SGD(model.parameters(), lr=ns["LR"],
                          momentum=ns["MOMENTUM"])
    x, y = ns["batches"]()
    for step in range(ns["STEPS"]):
        opt.zero_grad()
        ns["loss_fn"](model, x[step], y[step]).backward()
        opt.step()
    initial = ns["make_model"]().state_dict()
    return model.state_dict(), initial


def run_workers(hvdrun, tmp_path, passes, compression, predivide, views,
                zeroing, env=None):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    result = hvdrun(["-np", "2", sys.executable, str(script), str(passes),
                     compression, str(predivide), str(tmp_path), views,
                     zeroing], timeout=120,
                    env=dict(os.environ, **(env or {})))
    assert result.returncode == 0, (
        f"hvdrun exited {result.returncode}\n--- stdout\n{result.stdout}"
        f"\n--- stderr\n{result.stderr}")
    for rank in (0, 1):
        assert f"[{rank}]<stdout>:done" in result.stdout.splitlines(), (
            result.stdout, result.stderr)
    states = [json.loads((tmp_path / f"rank{r}.json").read_text())
              for r in (0, 1)]
    storages = [state.pop("storages") for state in states]
    return [{k: torch.tensor(v, dtype=torch.float64) for k, v in
             state.items()} for state in states], storages


@pytest.mark.parametrize(
    "passes,compression,predivide,views,zeroing,atol", [
        (1, "none", 1.0, "views", "zero", 1e-10),
        (2, "none", 1.0, "views", "zero", 1e-10),
        (1, "none", 2.0, "views", "zero", 1e-10),
        (1, "fp16", 1.0, "views", "zero", 5e-3),
        (2, "fp16", 1.0, "views", "zero", 5e-3),
        (1, "none", 1.0, "no_views", "zero", 1e-10),
        (2, "none", 1.0, "views", "set_to_none", 1e-10),
        (2, "none", 1.0, "no_views", "set_to_none", 1e-10),
    ], ids=["plain", "backward_passes_2", "predivide_2", "fp16",
            "fp16_backward_passes_2", "own_gradient_tensors",
            "set_to_none", "own_gradient_tensors_set_to_none"])
def test_two_workers_equal_single_process(hvdrun, tmp_path, passes,
                                          compression, predivide, views,
                                          zeroing, atol):
    expected, initial = reference_state()
    states, storages = run_workers(hvdrun, tmp_path, passes, compression,
                                   predivide, views, zeroing)
    # With views every gradient lives in one buffer; without, one each.
    want_storages = 1 if views == "views" else len(expected)
    assert storages == [want_storages] * 2, storages
    worst = 0.0
    for key, want in expected.items():
        # The ranks agree exactly: they applied the same averaged gradients.
        assert torch.equal(states[0][key], states[1][key]), key
        got = states[0][key]
        diff = (got - want).abs().max().item()
        assert diff <= atol, f"{key}: max |diff| {diff:.3g} > {atol}"
        worst = max(worst, diff)
        # Training moved every tensor well beyond the tolerance (each moves
        # by more than 0.1), so the comparison is not vacuous.
        assert (want - initial[key]).abs().max() > 0.1, key
    if compression == "fp16":
        # The gradients really travelled as float16: not the exact result.
        assert worst > 1e-9, worst


def test_gradient_views_are_reduced_without_copies(hvdrun, tmp_path):
    """After the first step, the gradients' fused allreduces skip the fusion
    buffer: the timeline (rank 0) shows no copy into it."""
    path = tmp_path / "timeline.json"
    run_workers(hvdrun, tmp_path, 1, "none", 1.0, "views", "zero",
                env={"HOROVOD_TIMELINE": str(path)})
    with open(path) as f:
        begun = collections.Counter(e["name"] for e in json.load(f)
                                    if e["ph"] == "B")
    params = len(reference_state()[0])
    steps = 6  # COMMON's STEPS
    assert begun["ALLREDUCE"] == params * steps, begun
    # Only the first step's gradients, torch's own tensors, are copied.
    assert begun["MEMCPY_IN_FUSION_BUFFER"] <= params, begun


SINGLE = COMMON + r'''
import json
import sys

import hvd.torch as hvd

hvd.init()
assert hvd.size() == 1
model = make_model()
opt = hvd.DistributedOptimizer(
    torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM),
    named_parameters=model.named_parameters())
x, y = batches()
for step in range(STEPS):
    opt.zero_grad()
    loss_fn(model, x[step], y[step]).backward()
    opt.step()
print(json.dumps({k: v.tolist() for k, v in model.state_dict().items()}))
'''


def test_single_worker_equals_plain_optimizer(hvdrun, tmp_path):
    script = tmp_path / "single.py"
    script.write_text(SINGLE)
    result = hvdrun(["-np", "1", sys.executable, str(script)], timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    line = [l for l in result.stdout.splitlines()
            if l.startswith("[0]<stdout>:{")]
    assert len(line) == 1, result.stdout
    got = json.loads(line[0][len("[0]<stdout>:"):])
    expected, _ = reference_state()
    for key, want in expected.items():
        assert torch.equal(torch.tensor(got[key], dtype=torch.float64),
                           want), key


DUPLICATES = r'''
import torch
import hvd.torch as hvd

hvd.init()
model = torch.nn.Linear(2, 1)
try:
    hvd.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.1),
        named_parameters=[("w", model.weight), ("w", model.bias)])
except ValueError as e:
    print("ValueError:", e)
try:
    hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                             named_parameters=[("w", model.weight)])
except ValueError as e:
    print("ValueError:", e)
'''


def test_named_parameters_checked(hvdrun, tmp_path):
    script = tmp_path / "dups.py"
    script.write_text(DUPLICATES)
    result = hvdrun(["-np", "2", sys.executable, str(script)], timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    for rank in (0, 1):
        lines = [l for l in result.stdout.splitlines()
                 if l.startswith(f"[{rank}]<stdout>:ValueError:")]
        assert len(lines) == 2, result.stdout
        assert "found duplicates: w" in lines[0]
        assert "does not name 1 of the optimizer's parameters" in lines[1]


# broadcast_optimizer_state on a DistributedOptimizer that never stepped:
# every rank creates the state by its wrapped optimizer's own step, which
# is no collective (an Adasum DistributedOptimizer's step is one: run on
# some ranks only, it deadlocked them). Rank 0 records a timeline of the
# broadcasts alone; then every optimizer trains one step.
FRESH_STATE = r'''
import json
import sys

import torch

import hvd.torch as hvd

hvd.init()
rank = hvd.rank()
FLAVOURS = {  # name: (DistributedOptimizer's arguments, root rank)
    "average": ({}, 0),
    "groups": ({"groups": 2}, 0),
    "fp16": ({"compression": hvd.Compression.fp16}, 0),
    "sparse_as_dense": ({"sparse_as_dense": True}, 0),
    "adasum": ({"op": hvd.Adasum}, 0),
    "adasum_root_1": ({"op": hvd.Adasum}, 1),
}


def dump_state(opt):
    return {str(k): {n: (v.tolist() if torch.is_tensor(v) else v)
                     for n, v in s.items()}
            for k, s in opt.state_dict()["state"].items()}


made = {}
for name, (kwargs, root) in FLAVOURS.items():
    torch.manual_seed(rank)  # different weights: the broadcast fixes them
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(),
                                torch.nn.Linear(4, 1))
    opt = hvd.DistributedOptimizer(
        torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=0.1),
        named_parameters=[(f"{name}.{n}", p)
                          for n, p in model.named_parameters()], **kwargs)
    hvd.broadcast_parameters(model.state_dict(), root_rank=root)
    made[name] = (model, opt, root)

hvd.start_timeline(sys.argv[1])
for name, (model, opt, root) in made.items():
    before = [p.tolist() for p in model.parameters()]
    hvd.broadcast_optimizer_state(opt, root_rank=root)
    R = {"state": dump_state(opt),
         "kept": [p.tolist() for p in model.parameters()] == before,
         "grads": [None if p.grad is None else
                   sorted(set(p.grad.flatten().tolist()))
                   for p in model.parameters()]}
    made[name] += (R,)
hvd.stop_timeline()

x = torch.randn(5, 3, generator=torch.Generator().manual_seed(rank))
for name, (model, opt, root, R) in made.items():
    before = [p.tolist() for p in model.parameters()]
    opt.zero_grad()
    model(x).pow(2).sum().backward()
    opt.step()
    R["trained"] = [p.tolist() for p in model.parameters()]
    R["moved"] = R["trained"] != before
print("RESULT " + json.dumps({name: made[name][3] for name in made}),
      flush=True)
'''


def test_fresh_state_is_created_by_a_local_step_of_every_flavour(
        hvdrun, tmp_path):
    script = tmp_path / "fresh_state.py"
    script.write_text(FRESH_STATE)
    timeline = tmp_path / "timeline.json"
    # A collective in the state's creation would deadlock the ranks: the
    # Gloo timeout bounds how long hvd takes to report that.
    result = hvdrun(["-np", "2", "--gloo-timeout-seconds", "10",
                     sys.executable, str(script), str(timeline)],
                    timeout=120)
    r = rank_results(result, 2)
    with open(timeline) as f:
        rows = {e["args"]["name"] for e in json.load(f)
                if e["ph"] == "M" and e["name"] == "process_name"}
    # While the states were created and broadcast: the states' broadcasts
    # only (their tensors, and the skeleton by broadcast_object).
    assert any(row.startswith("broadcast.optimizer_state.") for row in rows)
    assert all(row.startswith(("broadcast.optimizer_state.",
                               "optimizer_state.skeleton."))
               for row in rows), sorted(rows)
    for name in r[0]:
        for rank in (0, 1):
            got = r[rank][name]
            # Every rank stepped on zero gradients and kept its parameters;
            # the zero gradients stay, as Horovod leaves them.
            assert got["kept"] is True, (name, rank)
            assert got["grads"] == [[0.0]] * 4, (name, rank, got["grads"])
            assert got["moved"] is True, (name, rank)
        assert r[1][name]["state"] == r[0][name]["state"], name
        steps = {s["step"] for s in r[0][name]["state"].values()}
        assert steps == {1.0}, (name, steps)
        assert r[1][name]["trained"] == r[0][name]["trained"], name
