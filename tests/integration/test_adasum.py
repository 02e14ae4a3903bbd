"""op=hvd.Adasum through hvdrun at 1, 2, 3 and 4 ranks: allreduce (float16,
float32, float64, scaled, fused), reducescatter, integers refused, a
joined rank, and DistributedOptimizer(op=hvd.Adasum); and the synthetic
benchmark of examples/ with --use-adasum at 2 ranks.

workers/adasum_worker.py records what hvd returned; every rank's input
comes from seeds (workers/adasum_inputs.py), so the expected values are
computed here, with numpy and a plain torch optimizer, from the published
rule: pairs (1 - a.b / 2|a|^2) a + (1 - a.b / 2|b|^2) b up a binary tree of
neighbours, the odd node of a level moving up unchanged. One job per world
size serves all the tests of this module (four hvdrun runs).
"""

import sys

import numpy as np
import pytest
import torch

from conftest import ROOT, rank_lines, run_worker_job

WORKERS = ROOT / "tests" / "integration" / "workers"
sys.path.insert(0, str(WORKERS))
import adasum_inputs as inputs  # noqa: E402

PYTHON = "/usr/bin/python3"
TOLERANCE = {np.float16: dict(rtol=2e-3, atol=2e-3),
             np.float32: dict(rtol=1e-5, atol=1e-6),
             np.float64: dict(rtol=1e-12, atol=1e-12)}


@pytest.fixture(scope="module", params=[1, 2, 3, 4],
                ids=["np1", "np2", "np3", "np4"])
def job(request):
    """(size, {rank: results}) of one worker run at `size` ranks."""
    size = request.param
    results = run_worker_job(
        [PYTHON, WORKERS / "adasum_worker.py"], size, timeout=120)
    return size, results


# -- the reference ----------------------------------------------------------

def pair(a, b):
    """The pair rule in double, rounded once to the inputs' dtype."""
    x, y = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    dot, xx, yy = float(x @ y), float(x @ x), float(y @ y)
    fa = 1.0 - dot / (2.0 * xx) if xx > 0 else 1.0
    fb = 1.0 - dot / (2.0 * yy) if yy > 0 else 1.0
    return (fa * x + fb * y).astype(a.dtype).reshape(a.shape)


def tree(tensors):
    level = list(tensors)
    while len(level) > 1:
        up = [pair(level[i], level[i + 1])
              for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            up.append(level[-1])
        level = up
    return level[0]


def close(got, want):
    want = np.asarray(want)
    np.testing.assert_allclose(np.asarray(got, dtype=want.dtype), want,
                               **TOLERANCE[want.dtype.type])


def same_on_every_rank(results, key):
    first = results[0][key]
    for rank, got in results.items():
        assert got[key] == first, f"rank {rank}'s {key} differs from rank 0's"


# -- collectives --------------------------------------------------------------

def test_allreduce_matches_the_tree(job):
    size, results = job
    for key, dtype in (("f32", np.float32), ("f64", np.float64),
                       ("f16", np.float16)):
        xs = [inputs.tensor(r, key, (5, 7), dtype) for r in range(size)]
        want = tree(xs)
        if size > 1 and dtype == np.float64:
            # The inputs tell Adasum from a sum and from an average.
            assert not np.allclose(want, sum(xs), rtol=1e-3)
            assert not np.allclose(want, sum(xs) / size, rtol=1e-3)
        for rank in range(size):
            close(results[rank][key], want)
        same_on_every_rank(results, key)


def test_prescale_and_postscale_apply_as_for_sum(job):
    size, results = job
    xs = [2.0 * inputs.tensor(r, "scaled", (4, 3), np.float64)
          for r in range(size)]
    for rank in range(size):
        close(results[rank]["scaled"], 0.25 * tree(xs))


def test_fused_tensors_each_get_their_own_dot_products(job):
    size, results = job
    for group, dtype in (("fused", np.float32), ("async", np.float64)):
        specs = inputs.FUSED if group == "fused" else inputs.ASYNC
        for i, (key, shape, shared, noise) in enumerate(specs):
            want = tree([inputs.tensor(r, key, shape, dtype, shared, noise)
                         for r in range(size)])
            for rank in range(size):
                close(results[rank][group][i], want)
        same_on_every_rank(results, group)


def test_reducescatter_keeps_each_ranks_block_of_the_whole(job):
    size, results = job
    rows = inputs.reducescatter_rows(size)
    counts = [rows // size + (1 if r < rows % size else 0)
              for r in range(size)]
    starts = np.cumsum([0] + counts[:-1])
    for key, dtype in (("rs32", np.float32), ("rs64", np.float64)):
        whole = tree([inputs.tensor(r, key, (rows, 3), dtype)
                      for r in range(size)])
        for rank in range(size):
            block = whole[starts[rank]:starts[rank] + counts[rank]]
            close(results[rank][key], block)


def test_integers_are_refused_on_every_rank(job):
    """A RuntimeError, as Horovod refuses Adasum for reducescatter, and a
    ValueError, hvd's kind for a bad call (hvd.InvalidArgumentError)."""
    size, results = job
    for rank in range(size):
        for key, dtype in (("refuse_allreduce", "int32"),
                           ("refuse_reducescatter", "int64")):
            refusal = results[rank][key]
            assert refusal is not None, f"rank {rank}: {key} was accepted"
            message, is_value_error = refusal
            assert is_value_error, refusal
            assert "Adasum" in message and dtype in message, message
            assert "floating-point" in message, message


def test_a_joined_rank_contributes_nothing(job):
    size, results = job
    if size == 1:
        assert "join" not in results[0]
        return
    xs = [inputs.tensor(r, "join", (6,), np.float64) for r in range(size - 1)]
    want = tree(xs + [np.zeros(6)])
    for rank in range(size - 1):
        close(results[rank]["join"], want)
        assert results[rank]["join_last"] in range(size - 1)


# -- the optimizer ------------------------------------------------------------

def load(model, params):
    with torch.no_grad():
        for p, values in zip(model.parameters(), params):
            p.copy_(torch.tensor(values, dtype=p.dtype))


def test_optimizer_combines_the_local_updates(job):
    size, results = job
    same_on_every_rank(results, "opt_params")
    assert results[0]["opt_type"] == ["SGD", True]
    recorded = results[0]["opt_params"]
    # Each rank's own optimizer, replayed here from the recorded parameters
    # with its own batches (its momentum stays its own).
    models = [inputs.make_model() for _ in range(size)]
    opts = [inputs.make_optimizer(m.parameters()) for m in models]
    for step in range(len(recorded) - 1):
        before = [np.array(v, dtype=np.float32) for v in recorded[step]]
        deltas = []
        for rank, (model, opt) in enumerate(zip(models, opts)):
            load(model, recorded[step])
            x, y = inputs.batch(rank, step)
            opt.zero_grad()
            inputs.loss_of(model, x, y).backward()
            opt.step()
            deltas.append([p.detach().numpy() - b
                           for p, b in zip(model.parameters(), before)])
        for i, start in enumerate(before):
            mine = [d[i] for d in deltas]
            combined = tree(mine)
            if size > 1 and step == 0 and i == 0:
                assert not np.allclose(combined, sum(mine) / size,
                                       rtol=1e-3)
            close(recorded[step + 1][i], start + combined)
    # The loss over every rank's first batch falls.
    model = inputs.make_model()

    def loss_at(params):
        load(model, params)
        with torch.no_grad():
            return sum(float(inputs.loss_of(model, *inputs.batch(r, 0)))
                       for r in range(size))
    assert loss_at(recorded[-1]) < 0.8 * loss_at(recorded[0])


# -- a user's benchmark -------------------------------------------------------

def test_synthetic_benchmark_runs_with_adasum(hvdrun):
    """examples/torch_synthetic_benchmark.py --use-adasum, as Horovod's
    PyTorch synthetic benchmark is run: the optimizer's state is broadcast
    before its first step. A collective in the state's creation would
    deadlock the ranks; the Gloo timeout bounds how long hvd takes to
    report that."""
    result = hvdrun(["-np", "2", "--gloo-timeout-seconds", "10", PYTHON,
                     ROOT / "examples" / "torch_synthetic_benchmark.py",
                     "--use-adasum", "--batch-size", "4",
                     "--num-warmup-batches", "1",
                     "--num-batches-per-iter", "2", "--num-iters", "2"],
                    timeout=120)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    lines = rank_lines(result.stdout, 0)
    assert "model: SmallConvNet, batch size 4, 2 worker(s), Adasum" in \
        lines, output
    assert sum(l.startswith("iteration ") for l in lines) == 2, output
    assert any(l.startswith("total img/sec on 2 worker(s): ")
               for l in lines), output
