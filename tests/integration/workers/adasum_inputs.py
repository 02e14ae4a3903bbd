"""Every rank's inputs to workers/adasum_worker.py, from seeds: the worker
feeds them to hvd, test_adasum.py recomputes them for its reference. No hvd
here."""

import zlib

import numpy as np
import torch

# (name, shape, shared part, noise): each tensor is a part common to all
# ranks plus a rank's own noise, so that the ranks' vectors are far from
# orthogonal (random vectors alone nearly are, and Adasum of orthogonal
# vectors is their sum). The mixes differ, so each tensor of a fused unit
# gets different factors than the unit as a whole would.
FUSED = [("fused.a", (3,), 1.0, 0.2), ("fused.b", (2, 4), 0.1, 2.0),
         ("fused.c", (1,), 3.0, 0.0), ("fused.d", (0,), 1.0, 1.0)]
ASYNC = [("async.0", (7,), 1.0, 0.5), ("async.1", (2, 3), 0.5, 1.0),
         ("async.2", (4,), 2.0, 0.1)]


def tensor(rank, key, shape, dtype, shared=1.0, noise=0.5):
    common = np.random.default_rng(zlib.crc32(key.encode()))
    own = np.random.default_rng([rank, zlib.crc32(key.encode())])
    x = (shared * common.standard_normal(shape)
         + noise * own.standard_normal(shape))
    return x.astype(dtype)


def reducescatter_rows(size):
    return 2 * size + 1


def make_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(),
                               torch.nn.Linear(8, 1))


def make_optimizer(params):
    return torch.optim.SGD(params, lr=0.05, momentum=0.9)


_W_TRUE = np.array([[1.0], [-2.0], [0.5], [3.0]])


def batch(rank, step):
    """Rank's training batch at `step`: 16 samples of y = x w + noise."""
    rng = np.random.default_rng([7, rank, step])
    x = rng.standard_normal((16, 4))
    y = x @ _W_TRUE + 0.1 * rng.standard_normal((16, 1))
    return (torch.tensor(x, dtype=torch.float32),
            torch.tensor(y, dtype=torch.float32))


def loss_of(model, x, y):
    return torch.nn.functional.mse_loss(model(x), y)
