"""hvd.torch.SyncBatchNorm against torch.nn.BatchNorm on the global batch.

Run by test_torch_sync_batch_norm.py under hvdrun at 1 to 4 ranks. Every
rank draws the same global batch from a fixed seed and feeds SyncBatchNorm
its own rows (uneven counts, zero in one case); it then computes locally,
with torch's own BatchNorm on the whole batch, what the layer should have
produced, and records the largest absolute difference of each quantity in
``checks`` (printed as one ``RESULT <json>`` line; the test holds them to
the tolerance). ``controls`` record how far a plain, unsynchronized
BatchNorm on the rank's rows is from the same reference: far, at more than
one rank, which shows the checks can tell the two apart.

Gradients: the loss is sum(output * G) for a fixed random G, so the input
gradient of a rank's rows is the reference's for those rows. The weight and
bias gradients are the rank's share (as in horovod): the reference's with G
zeroed outside the rank's rows, and summed over the ranks, the reference's.

The job ends with a global barrier, so that no rank shuts hvd down while
others still work.
"""

import json
import sys

import torch

import hvd.torch as hvd

SIZE = int(sys.argv[1])
# The process-set case: ranks 0 and size-1 (rank 1 is outside at 3 ranks).
SUBSET = hvd.ProcessSet([0, SIZE - 1])
hvd.init(process_sets=[SUBSET] if SIZE >= 3 else None)
rank, size = hvd.rank(), hvd.size()
assert size == SIZE, (size, SIZE)
torch.manual_seed(1234)

R = {"checks": {}, "controls": {}, "errors": {}}


def diff(a, b):
    """Largest absolute difference, 0 for empty tensors; exact shapes."""
    assert a.shape == b.shape, (a.shape, b.shape)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    if a.numel() == 0:
        return 0.0
    return float((a.double() - b.double()).abs().max())


def batch(counts, tail, dtype, index=None):
    """Global batch (sum(counts), *tail) of mean 3 (a lost mean shows), its
    gradient G, and the row range lo, hi of part `index` (default: this
    rank's)."""
    index = rank if index is None else index
    n = sum(counts)
    x = (torch.randn(n, *tail, dtype=torch.float64) * 2 + 3).to(dtype)
    g = torch.randn(n, *tail, dtype=torch.float64).to(dtype)
    lo = sum(counts[:index])
    return x, g, lo, lo + counts[index]


def reference_grads(bn, x, g, lo, hi):
    """(output, grad_input, grad_weight, grad_bias, share_weight,
    share_bias) of BatchNorm `bn` on global batch `x` with loss sum(out*g);
    the shares are with g zeroed outside rows lo:hi. Runs bn twice, so it
    takes a copy of bn's state for the second run."""
    state = {k: v.clone() for k, v in bn.state_dict().items()}
    xr = x.clone().requires_grad_(True)
    out = bn(xr)
    (out * g).sum().backward()
    full = [out.detach(), xr.grad]
    full += [p.grad.clone() if p is not None else None
             for p in (bn.weight, bn.bias)]
    after = {k: v.clone() for k, v in bn.state_dict().items()}
    if not bn.affine:
        return full + [None, None]
    bn.load_state_dict(state)
    bn.zero_grad()
    mask = torch.zeros_like(g)
    mask[lo:hi] = 1
    (bn(x) * (g * mask)).sum().backward()
    share = [p.grad.clone() if p is not None else None
             for p in (bn.weight, bn.bias)]
    bn.load_state_dict(after)
    bn.zero_grad()
    return full + share


def make_pair(channels, dtype, dims=2, **kwargs):
    """SyncBatchNorm and a torch BatchNorm for inputs of `dims` dimensions
    with the same random affine parameters (default 1 and 0 would hide a
    missing weight)."""
    ours = hvd.SyncBatchNorm(channels, **kwargs).to(dtype)
    torch_class = torch.nn.BatchNorm2d if dims == 4 else torch.nn.BatchNorm1d
    ref = torch_class(channels, **{
        k: v for k, v in kwargs.items() if k != "process_set"}).to(dtype)
    if ours.affine:
        with torch.no_grad():
            w = torch.rand(channels, dtype=torch.float64) + 0.5
            b = torch.randn(channels, dtype=torch.float64)
            for m in (ours, ref):
                m.weight.copy_(w)
                m.bias.copy_(b)
    return ours, ref


def sum_over_set(t, name, process_set):
    return hvd.allreduce(t, op=hvd.Sum, name=name, process_set=process_set)


def run_case(name, counts, tail, dtype=torch.float64, steps=2,
             process_set=hvd.global_process_set, **kwargs):
    """`steps` training steps then one eval step of SyncBatchNorm against
    BatchNorm on the concatenated batch; records checks[name.step.what].
    `counts` are the rows of the set's ranks, in set order."""
    set_rank = process_set.ranks.index(rank)
    channels = tail[0]
    ours, ref = make_pair(channels, dtype, 1 + len(tail),
                          process_set=process_set, **kwargs)
    for step in range(1, steps + 1):
        x, g, lo, hi = batch(counts, tail, dtype, set_rank)
        ref_out, ref_gx, ref_gw, ref_gb, share_w, share_b = \
            reference_grads(ref, x, g, lo, hi)
        xs = x[lo:hi].clone().requires_grad_(True)
        out = ours(xs)
        (out * g[lo:hi]).sum().backward()
        key = f"{name}.step{step}"
        checks = R["checks"]
        checks[f"{key}.output"] = diff(out.detach(), ref_out[lo:hi])
        checks[f"{key}.grad_input"] = diff(xs.grad, ref_gx[lo:hi])
        if ours.affine:
            checks[f"{key}.grad_weight_share"] = diff(ours.weight.grad,
                                                      share_w)
            checks[f"{key}.grad_bias_share"] = diff(ours.bias.grad, share_b)
            checks[f"{key}.grad_weight_sum"] = diff(sum_over_set(
                ours.weight.grad, f"{key}.gw", process_set), ref_gw)
            checks[f"{key}.grad_bias_sum"] = diff(sum_over_set(
                ours.bias.grad, f"{key}.gb", process_set), ref_gb)
            ours.zero_grad()
        if ours.track_running_stats:
            checks[f"{key}.running_mean"] = diff(ours.running_mean,
                                                 ref.running_mean)
            checks[f"{key}.running_var"] = diff(ours.running_var,
                                                ref.running_var)
            checks[f"{key}.num_batches_tracked"] = float(
                int(ours.num_batches_tracked) != int(ref.num_batches_tracked)
                or int(ref.num_batches_tracked) != step)
        if name == "3d" and step == 1:
            # What an unsynchronized BatchNorm makes of this rank's rows.
            plain = torch.nn.functional.batch_norm(
                x[lo:hi], None, None, ref.weight, ref.bias, True)
            R["controls"][f"{key}.output"] = diff(plain.detach(),
                                                  ref_out[lo:hi])
    ours.eval()
    ref.eval()
    x, _, lo, hi = batch(counts, tail, dtype, set_rank)
    with torch.no_grad():
        R["checks"][f"{name}.eval.output"] = diff(ours(x[lo:hi]),
                                                  ref(x)[lo:hi])


def run_two_layers():
    """Two layers of different widths in a row: (N, 3, 4) -> (N, 12),
    forward and backward interleaving their collectives."""
    counts = [r + 2 for r in range(size)]
    bn1, ref1 = make_pair(3, torch.float64)
    bn2, ref2 = make_pair(12, torch.float64)
    for step in (1, 2):
        x, g, lo, hi = batch(counts, (3, 4), torch.float64)
        g = g.reshape(-1, 12)
        xr = x.clone().requires_grad_(True)
        ref_out = ref2(ref1(xr).reshape(-1, 12))
        (ref_out * g).sum().backward()
        xs = x[lo:hi].clone().requires_grad_(True)
        out = bn2(bn1(xs).reshape(-1, 12))
        (out * g[lo:hi]).sum().backward()
        key = f"two_layers.step{step}"
        R["checks"][f"{key}.output"] = diff(out.detach(), ref_out[lo:hi])
        R["checks"][f"{key}.grad_input"] = diff(xs.grad, xr.grad[lo:hi])
        R["checks"][f"{key}.running_var"] = max(
            diff(bn1.running_var, ref1.running_var),
            diff(bn2.running_var, ref2.running_var))
        R["checks"][f"{key}.grad_weight_sum"] = max(
            diff(hvd.allreduce(bn.weight.grad, op=hvd.Sum,
                               name=f"{key}.{i}"), r.weight.grad)
            for i, (bn, r) in enumerate(((bn1, ref1), (bn2, ref2))))
        for m in (bn1, bn2, ref1, ref2):
            m.zero_grad()


def run_too_few_values():
    """One value per channel in the whole batch: every rank raises
    ValueError (none waits for the others), as BatchNorm does."""
    layer = hvd.SyncBatchNorm(2)
    x = torch.ones(1 if rank == 0 else 0, 2, dtype=torch.float64)
    try:
        layer(x)
        R["errors"]["too_few_values"] = "no error"
    except ValueError as e:
        R["errors"]["too_few_values"] = str(e)


uneven = [r + 1 for r in range(size)]
run_case("3d", uneven, (3, 4))
# Two rows at least: one value per channel is too few (see below).
run_case("2d_cumulative", [r + 2 for r in range(size)], (5,), momentum=None)
run_case("4d_no_affine", uneven, (2, 3, 2), affine=False)
run_case("no_running_stats", uneven, (3, 2), track_running_stats=False)
run_case("float32", uneven, (3, 4), dtype=torch.float32)
if size >= 2:
    # Rank 1 has no rows at all.
    run_case("empty_rank", [0 if r == 1 else r + 2 for r in range(size)],
             (3, 4))
run_two_layers()
if size >= 3:
    if SUBSET.included():
        run_case("process_set", [2, 3], (3, 4), process_set=SUBSET)
    else:
        try:
            hvd.SyncBatchNorm(3, process_set=SUBSET)(torch.ones(2, 3))
            R["errors"]["outside_set"] = "no error"
        except ValueError as e:
            R["errors"]["outside_set"] = str(e)
run_too_few_values()
hvd.barrier()
print("RESULT " + json.dumps(R), flush=True)
