"""DistributedOptimizer's sparse gradients (allgathered, or sparse_as_dense)
and gradient groups (groups / num_groups), and sparse_allreduce_async,
through one hvdrun job at 3 ranks (workers/torch_optimizer_features_worker.py,
which compares every result with plain torch on every rank's known
inputs). The group formation itself is also checked in-process, without a
job.
"""

import json
import sys
import warnings

import pytest
import torch

from conftest import ROOT, run_worker_job
from hvd.torch.optimizer_groups import (form_groups, resolve_groups,
                                        split_evenly)

WORKER = ROOT / "tests" / "integration" / "workers" / \
    "torch_optimizer_features_worker.py"
SIZE = 3


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    """({rank: results}, timeline rows) of one job at SIZE ranks."""
    timeline = tmp_path_factory.mktemp("features") / "timeline.json"
    results = run_worker_job([sys.executable, WORKER, timeline], SIZE)
    with open(timeline) as f:
        events = json.load(f)
    rows = {e["args"]["name"] for e in events
            if e["ph"] == "M" and e["name"] == "process_name"}
    return results, rows


def test_sparse_gradients_are_averaged(job):
    r, _ = job
    for rank in range(SIZE):
        got = r[rank]
        rows = got["last_step_rows"]
        for variant in ("sparse", "as_dense", "sparse_group",
                        "as_dense_group"):
            result = got[variant]
            assert result["equal"] == [True] * 3, (variant, result)
            assert result["grad_sparse"] is True, variant
            assert result["rows"] == rows, (variant, result)
        # Allgathered: every rank's entries, not coalesced. Densified: one
        # entry per row reached.
        for variant in ("sparse", "sparse_group"):
            assert got[variant]["nnz"] == SIZE * got["entries_per_rank"]
        for variant in ("as_dense", "as_dense_group"):
            assert got[variant]["nnz"] == len(rows)


def test_sparse_allreduce_async(job):
    r, _ = job
    for rank in range(SIZE):
        got = r[rank]["sparse_allreduce"]
        assert got["average"] == [True, True]
        assert got["sum"] == [True, True]
        assert got["nnz"] == sum(got["input_nnz"])
        assert got["input_nnz"][-1] == 0  # a rank without entries
        assert "expects a sparse COO tensor" in got["dense_refused"]


def test_grouped_gradients_equal_the_reference(job):
    r, rows = job
    for rank in range(SIZE):
        got = r[rank]
        for variant in ("plain", "int2", "list", "num_groups", "both"):
            assert got[variant]["equal"] == [True] * 6, (variant, got)
            deprecated = got[variant]["deprecated"]
            if variant in ("num_groups", "both"):
                assert len(deprecated) == 1 and "num_groups" in \
                    deprecated[0], deprecated
            else:
                assert deprecated == [], (variant, deprecated)
    # What the core ran (rank 0's timeline rows, one per tensor name).
    names = ["0.weight", "0.bias", "2.weight", "2.bias", "4.weight",
             "4.bias"]

    def grouped(variant, first, count):
        return {f"grouped_allreduce.{variant}.{first}.{i}"
                for i in range(count)}

    expected = {
        "plain": {f"allreduce.plain.{n}" for n in names},
        "int2": grouped("int2", "0.weight", 3) | grouped("int2", "2.bias",
                                                         3),
        "list": grouped("list", "4.weight", 2) | set().union(
            *(grouped("list", n, 1) for n in
              ("0.weight", "2.weight", "2.bias", "4.bias"))),
        "num_groups": grouped("num_groups", "0.weight", 3) |
        grouped("num_groups", "2.bias", 3),
        "both": grouped("both", "0.weight", 2) | set().union(
            *(grouped("both", n, 1) for n in
              ("0.bias", "2.weight", "2.bias", "4.weight"))),
    }
    for variant, want in expected.items():
        seen = {row for row in rows if f".{variant}." in row}
        assert seen == want, (variant, sorted(seen))


def test_bad_groups_are_value_errors(job):
    r, _ = job
    errors = r[0]["group_errors"]
    for key in ("zero", "negative", "text", "float", "flat"):
        assert "groups should be a positive integer or a list of lists" in \
            errors[key] or "list of lists of torch.Tensor" in errors[key], \
            (key, errors[key])
    assert "only once" in errors["repeated"]
    assert "consist of torch.Tensor" in errors["not_tensor"]


# -- group formation, in-process ----------------------------------------------

def params(n):
    return [torch.zeros(1, requires_grad=True) for _ in range(n)]


def ids(groups):
    return [[id(p) for p in g] for g in groups]


def test_split_evenly_puts_the_remainder_first():
    assert split_evenly(list(range(7)), 3) == [[0, 1, 2], [3, 4], [5, 6]]
    assert split_evenly(list(range(2)), 4) == [[0], [1]]
    assert split_evenly([], 2) == []


def test_form_groups():
    p = params(5)
    assert ids(form_groups(p, None)) == [[id(q)] for q in p]
    assert ids(form_groups(p, 2)) == ids([p[:3], p[3:]])
    other = torch.zeros(1)  # not one of the optimizer's: left out
    assert ids(form_groups(p, [[p[3], other, p[0]], [other]])) == \
        ids([[p[3], p[0]], [p[1]], [p[2]], [p[4]]])


def test_resolve_groups():
    p = params(2)
    assert resolve_groups(None, 0) is None
    assert resolve_groups(3, 0) == 3
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert resolve_groups(None, 2) == 2
        assert resolve_groups([[p[0]]], 4) == [[p[0]]]  # groups wins
    assert [w.category for w in caught] == [DeprecationWarning] * 2
    for bad in (0, -2, True, 1.5, "3", [p[0]], [[p[0]], [p[0]]], [[1]]):
        with pytest.raises(ValueError):
            resolve_groups(bad, 0)
