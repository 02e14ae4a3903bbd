"""hvd.torch.SyncBatchNorm equals torch.nn.BatchNorm on the global batch.

workers/sync_batch_norm_worker.py runs, at 1, 2, 3 and 4 ranks (one hvdrun
per size), SyncBatchNorm on each rank's uneven share of a seeded global
batch and compares it with torch's BatchNorm on the whole batch, computed
on the rank itself: outputs, input gradients, weight and bias gradients,
running mean and variance and num_batches_tracked over two training steps
and an eval step, for 2-, 3- and 4-D float64 inputs, float32,
affine=False, momentum=None, track_running_stats=False, a rank with no
rows, two layers in a row and a process set. It reports the largest
absolute difference of each quantity; this test holds them to the
tolerance, checks that every expected quantity was reported, and that an
unsynchronized BatchNorm would have failed (the controls).

The pure statistics combination is tested here directly, without hvdrun.
"""

import pytest
import torch

from conftest import ROOT, run_worker_job
from hvd.torch.sync_batch_norm import combine_moments, local_moments

WORKER = ROOT / "tests" / "integration" / "workers" / \
    "sync_batch_norm_worker.py"
PYTHON = "/usr/bin/python3"

F64_TOLERANCE = 1e-10
F32_TOLERANCE = 5e-6
# An unsynchronized BatchNorm on a rank's rows misses by far more.
CONTROL_MINIMUM = 0.05

STEP_QUANTITIES = ["output", "grad_input"]
AFFINE_QUANTITIES = ["grad_weight_share", "grad_bias_share",
                     "grad_weight_sum", "grad_bias_sum"]
RUNNING_QUANTITIES = ["running_mean", "running_var", "num_batches_tracked"]


def case_names(size, rank):
    """{case: (affine, track_running_stats)} the worker ran on `rank`."""
    cases = {"3d": (True, True), "2d_cumulative": (True, True),
             "4d_no_affine": (False, True),
             "no_running_stats": (True, False), "float32": (True, True)}
    if size >= 2:
        cases["empty_rank"] = (True, True)
    if size >= 3 and rank in (0, size - 1):
        cases["process_set"] = (True, True)
    return cases


def expected_checks(size, rank):
    names = set()
    for case, (affine, track) in case_names(size, rank).items():
        for step in (1, 2):
            quantities = STEP_QUANTITIES + (AFFINE_QUANTITIES if affine
                                            else []) + \
                (RUNNING_QUANTITIES if track else [])
            names |= {f"{case}.step{step}.{q}" for q in quantities}
        names.add(f"{case}.eval.output")
    for step in (1, 2):
        names |= {f"two_layers.step{step}.{q}" for q in
                  ("output", "grad_input", "running_var", "grad_weight_sum")}
    return names


@pytest.fixture(scope="module", params=[1, 2, 3, 4],
                ids=["np1", "np2", "np3", "np4"])
def job(request):
    """(size, {rank: results}) of one worker run at `size` ranks."""
    size = request.param
    results = run_worker_job([PYTHON, WORKER, size], size)
    return size, results


def test_matches_batch_norm_on_the_global_batch(job):
    size, results = job
    for rank, got in results.items():
        checks = got["checks"]
        assert set(checks) == expected_checks(size, rank), rank
        for name, difference in checks.items():
            tolerance = (F32_TOLERANCE if name.startswith("float32.")
                         else F64_TOLERANCE)
            assert difference <= tolerance, (rank, name, difference)


def test_unsynchronized_batch_norm_would_fail(job):
    size, results = job
    for rank, got in results.items():
        control = got["controls"]["3d.step1.output"]
        if size == 1:
            assert control <= F64_TOLERANCE, (rank, control)
        else:
            assert control >= CONTROL_MINIMUM, (rank, control)


def test_errors_raised_on_every_rank(job):
    size, results = job
    for rank, got in results.items():
        errors = got["errors"]
        # One value per channel in the whole batch: ValueError everywhere,
        # as torch's BatchNorm raises (none of the ranks waits forever).
        assert "more than 1 value per channel" in \
            errors["too_few_values"].lower(), (rank, errors)
        outside = size >= 3 and rank not in (0, size - 1)
        assert ("outside_set" in errors) == outside, (rank, errors)
        if outside:
            assert f"rank {rank} is not in" in errors["outside_set"]


@pytest.mark.parametrize("tail", [(4,), (3, 5), (2, 3, 2)])
def test_combined_moments_equal_the_concatenated_batch(tail):
    """Ranks' rows (one empty) combine to the mean and biased variance of
    their concatenation, also far from zero (offset 1e6), where a sum of
    squares would lose the variance."""
    generator = torch.Generator().manual_seed(7)
    parts = [torch.randn(n, *tail, generator=generator,
                         dtype=torch.float64) + 1e6 for n in (3, 0, 1, 5)]
    count, mean, var = combine_moments(
        torch.cat([local_moments(p) for p in parts]))
    whole = torch.cat(parts).transpose(0, 1).reshape(tail[0], -1)
    assert count == whole.size(1)
    assert torch.allclose(mean, whole.mean(1), rtol=0, atol=1e-9)
    assert torch.allclose(var, whole.var(1, unbiased=False), rtol=1e-10,
                          atol=0)


def test_combined_moments_of_an_empty_batch_are_nan():
    count, mean, var = combine_moments(
        torch.cat([local_moments(torch.empty(0, 2)) for _ in range(2)]))
    assert count == 0
    assert torch.isnan(mean).all() and torch.isnan(var).all()


def test_wrong_inputs_raise_what_batch_norm_raises():
    """Checked before any collective, so without hvd.init()."""
    import hvd.torch as hvd
    layer = hvd.SyncBatchNorm(3)
    with pytest.raises(RuntimeError, match="expected 3 channels"):
        layer(torch.ones(4, 5))
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        layer(torch.ones(4))
