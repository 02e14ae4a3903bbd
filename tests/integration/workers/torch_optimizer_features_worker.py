"""DistributedOptimizer's sparse gradients and groups, and
sparse_allreduce_async, on every rank of an hvdrun job.

Each rank's inputs are a function of its rank, so every rank also computes
the expected results locally with plain torch: the gradients of every
rank's loss, averaged, applied by SGD. argv[1]: the timeline file rank 0
writes while the grouped optimizers step (the test reads which collectives
the core ran). Prints one ``RESULT <json>`` line.
"""

import json
import sys
import warnings

import torch

import hvd.torch as hvd

hvd.init()
rank, size = hvd.rank(), hvd.size()
R = {}
LR = 0.1
STEPS = 2


def close(a, b):
    return bool(torch.allclose(a, b, rtol=1e-5, atol=1e-6))


def train(model, loss_fn, opt):
    for step in range(STEPS):
        opt.zero_grad()
        loss_fn(model, rank, step).backward()
        opt.step()


def reference(make, loss_fn):
    """The parameters after STEPS steps of SGD on the average over ranks of
    each rank's dense gradient."""
    model = make()
    params = list(model.parameters())
    for step in range(STEPS):
        total = [torch.zeros_like(p) for p in params]
        for r in range(size):
            model.zero_grad()
            loss_fn(model, r, step).backward()
            for t, p in zip(total, params):
                t += p.grad.to_dense()
        with torch.no_grad():
            for t, p in zip(total, params):
                p -= LR * t / size
    return params


def named(model, prefix):
    return [(f"{prefix}.{n}", p) for n, p in model.named_parameters()]


# -- sparse gradients ---------------------------------------------------------

def make_sparse():
    torch.manual_seed(0)
    return torch.nn.ModuleDict({"emb": torch.nn.Embedding(10, 3, sparse=True),
                                "lin": torch.nn.Linear(3, 1)})


def indices(r, step):
    return torch.tensor([[r, (r + 3 * step) % 10, 7],
                         [(2 * r + step) % 10, 9 - r, r + 1]])


def sparse_loss(model, r, step):
    h = model["emb"](indices(r, step)).mean(1)
    return (model["lin"](h) ** 2).sum() * (r + 1)


want = reference(make_sparse, sparse_loss)
for variant, kwargs in (("sparse", {}),
                        ("as_dense", {"sparse_as_dense": True}),
                        ("sparse_group", {"groups": 1}),
                        ("as_dense_group", {"sparse_as_dense": True,
                                            "groups": 1})):
    model = make_sparse()
    opt = hvd.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=LR),
        named_parameters=named(model, variant), **kwargs)
    train(model, sparse_loss, opt)
    grad = model["emb"].weight.grad
    R[variant] = {
        "equal": [close(p.detach(), w) for p, w in
                  zip(model.parameters(), want)],
        "grad_sparse": grad.is_sparse,
        "nnz": grad._nnz(),
        # The rows the last step's gradient reaches, on any rank.
        "rows": sorted(set(grad.coalesce().indices()[0].tolist())),
    }
R["last_step_rows"] = sorted({i for r in range(size)
                              for i in indices(r, STEPS - 1).ravel().tolist()})
R["entries_per_rank"] = indices(0, 0).numel()


# -- sparse_allreduce_async ---------------------------------------------------

def sparse_input(r):
    """A 4x5 matrix with a repeated index (uncoalesced); the last rank
    holds no entry at all."""
    if r == size - 1:
        return torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.int64),
                                       torch.zeros(0), (4, 5))
    return torch.sparse_coo_tensor([[r, 3, r], [1, r + 2, 1]],
                                   [1.0 + r, 2.0, 3.0 * r], (4, 5))


dense_sum = sum(sparse_input(r).to_dense() for r in range(size))
mine = sparse_input(rank)
average = hvd.synchronize(hvd.sparse_allreduce_async(mine, "sp.avg",
                                                     hvd.Average))
summed = hvd.sparse_allreduce_async(mine, name="sp.sum", op=hvd.Sum)()
R["sparse_allreduce"] = {
    "average": [average.is_sparse, close(average.to_dense(),
                                         dense_sum / size)],
    "sum": [summed.is_sparse, close(summed.to_dense(), dense_sum)],
    "nnz": summed._nnz(),
    "input_nnz": [sparse_input(r)._nnz() for r in range(size)],
}
try:
    hvd.sparse_allreduce_async(mine.to_dense(), "sp.dense", hvd.Sum)
except TypeError as e:
    R["sparse_allreduce"]["dense_refused"] = str(e)


# -- groups -------------------------------------------------------------------

def make_dense():
    torch.manual_seed(1)
    return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(),
                               torch.nn.Linear(4, 2), torch.nn.Tanh(),
                               torch.nn.Linear(2, 1))


def dense_loss(model, r, step):
    x = torch.arange(6.0).view(2, 3) * (r + 1) - step
    return (model(x) ** 2).sum()


want = reference(make_dense, dense_loss)
hvd.start_timeline(sys.argv[1])
for variant in ("plain", "int2", "list", "num_groups", "both"):
    model = make_dense()
    p = list(model.parameters())  # 0.weight 0.bias 2.weight ... 4.bias
    kwargs = {"plain": {}, "int2": {"groups": 2},
              "list": {"groups": [[p[4], p[1]]]},
              "num_groups": {"num_groups": 2},
              "both": {"num_groups": 5, "groups": [[p[0], p[5]]]}}[variant]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        opt = hvd.DistributedOptimizer(
            torch.optim.SGD(model.parameters(), lr=LR),
            named_parameters=named(model, variant), **kwargs)
    train(model, dense_loss, opt)
    R[variant] = {
        "equal": [close(q.detach(), w) for q, w in
                  zip(model.parameters(), want)],
        "deprecated": [str(w.message) for w in caught
                       if issubclass(w.category, DeprecationWarning)],
    }
hvd.stop_timeline()

model = make_dense()
p = list(model.parameters())
errors = {}
for key, groups in (("zero", 0), ("negative", -1), ("text", "two"),
                    ("float", 2.5), ("repeated", [[p[0], p[0]]]),
                    ("not_tensor", [[p[0], 3]]), ("flat", [p[0], p[1]])):
    try:
        hvd.DistributedOptimizer(torch.optim.SGD(p, lr=LR),
                                 named_parameters=named(model, key),
                                 groups=groups)
        errors[key] = "no error"
    except ValueError as e:
        errors[key] = str(e)
R["group_errors"] = errors

print("RESULT " + json.dumps(R), flush=True)
