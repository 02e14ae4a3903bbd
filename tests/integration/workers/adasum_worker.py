"""hvd.torch's op=hvd.Adasum: allreduce, grouped and concurrent (fused)
allreduces, reducescatter, integer refusal, a joined rank, and
DistributedOptimizer(op=hvd.Adasum).

Run by test_adasum.py under hvdrun at 1 to 4 ranks. Every input comes from
adasum_inputs.py (seeded by rank), so the test recomputes the expected
values itself; this worker only records what hvd returned, in a dict
printed as one ``RESULT <json>`` line.
"""

import json
import os
import sys

import numpy as np
import torch

import hvd.torch as hvd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import adasum_inputs as inputs  # noqa: E402


def out(t):
    return t.tolist()


def t(rank, key, shape, dtype, shared=1.0, noise=0.5):
    return torch.from_numpy(inputs.tensor(rank, key, shape, dtype, shared,
                                          noise))


def allreduce_section(R, rank):
    for key, dtype in (("f32", np.float32), ("f64", np.float64),
                       ("f16", np.float16)):
        x = t(rank, key, (5, 7), dtype)
        R[key] = out(hvd.allreduce(x, op=hvd.Adasum, name=key))
    x = t(rank, "scaled", (4, 3), np.float64)
    R["scaled"] = out(hvd.allreduce(x, op=hvd.Adasum, name="scaled",
                                    prescale_factor=2.0,
                                    postscale_factor=0.25))
    fused = [t(rank, key, shape, np.float32, shared, noise)
             for key, shape, shared, noise in inputs.FUSED]
    R["fused"] = [out(y) for y in hvd.grouped_allreduce(
        fused, op=hvd.Adasum, name="fused")]
    handles = [hvd.allreduce_async(t(rank, key, shape, np.float64, shared,
                                     noise), op=hvd.Adasum, name=key)
               for key, shape, shared, noise in inputs.ASYNC]
    R["async"] = [out(hvd.synchronize(h)) for h in handles]


def reducescatter_section(R, rank, size):
    rows = inputs.reducescatter_rows(size)
    for key, dtype in (("rs32", np.float32), ("rs64", np.float64)):
        x = t(rank, key, (rows, 3), dtype)
        R[key] = out(hvd.reducescatter(x, op=hvd.Adasum, name=key))


def refusal_section(R):
    for key, call in (
            ("refuse_allreduce", lambda: hvd.allreduce(
                torch.ones(3, dtype=torch.int32), op=hvd.Adasum)),
            ("refuse_reducescatter", lambda: hvd.reducescatter(
                torch.ones(4, 2, dtype=torch.int64), op=hvd.Adasum))):
        try:
            call()
            R[key] = None
        except RuntimeError as e:  # what Horovod's tests catch
            R[key] = [str(e), isinstance(e, ValueError)]


def join_section(R, rank, size):
    # The last rank joins at once; the others reduce with its zeros.
    if rank < size - 1:
        R["join"] = out(hvd.allreduce(t(rank, "join", (6,), np.float64),
                                      op=hvd.Adasum, name="join"))
    R["join_last"] = hvd.join()


def optimizer_section(R, rank, steps=6):
    model = inputs.make_model()
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    opt = hvd.DistributedOptimizer(
        inputs.make_optimizer(model.parameters()),
        named_parameters=model.named_parameters(), op=hvd.Adasum)
    R["opt_type"] = [type(opt).__name__,
                     isinstance(opt, torch.optim.SGD)]
    params = []  # before each step, and after the last
    for step in range(steps):
        params.append([out(p.detach()) for p in model.parameters()])
        x, y = inputs.batch(rank, step)
        opt.zero_grad()
        inputs.loss_of(model, x, y).backward()
        opt.step()
    params.append([out(p.detach()) for p in model.parameters()])
    R["opt_params"] = params


def main():
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    R = {}
    allreduce_section(R, rank)
    reducescatter_section(R, rank, size)
    refusal_section(R)
    if size > 1:
        join_section(R, rank, size)
    optimizer_section(R, rank)
    hvd.barrier()
    print("RESULT " + json.dumps(R), flush=True)


if __name__ == "__main__":
    main()
