"""ElasticSampler: a data sampler that resumes an epoch after a reset.

Like ``torch.utils.data.distributed.DistributedSampler``, it gives each of
``hvd.size()`` ranks its share of a data set, padded so that every rank gets
the same number of samples. Unlike it, it remembers which samples of the
current epoch have been processed (``record_batch`` / ``record_indices``)
and shards only the *remaining* ones, so that after a reset (a worker lost
or added) the epoch goes on where the last commit left it, over the new set
of ranks, and no committed sample is seen twice.

Calling protocol, per rank (horovod.torch.elastic's)::

    sampler = hvd.elastic.ElasticSampler(dataset, shuffle=True)
    loader = torch.utils.data.DataLoader(dataset, batch_size=bs,
                                         sampler=sampler)
    state = hvd.elastic.TorchState(model, optimizer, sampler=sampler,
                                   epoch=0, batch=0)

    @hvd.elastic.run
    def train(state):
        while state.epoch < epochs:
            for i, (x, y) in enumerate(loader):   # this rank's remaining share
                ...step...
                state.sampler.record_batch(i, bs)
                state.batch += 1
                if state.batch % 10 == 0:
                    state.commit()
            state.epoch += 1
            state.batch = 0
            state.sampler.set_epoch(state.epoch)
            state.commit()

``TorchState`` saves, restores and syncs the sampler through
``state_dict()`` / ``load_state_dict()``, merges every rank's processed
indices at each commit and calls ``reset()`` after every reset of the job,
which re-shards the remaining indices over the new ranks.
"""

import math
from typing import Any, Dict, Iterable, Iterator, List, Set, Sized

import torch

import hvd as _hvd


def _shard(remaining: List[int], rank: int, size: int) -> List[int]:
    """The share of ``rank`` among ``size`` ranks of ``remaining``.

    ``remaining`` is padded by repeating it from its start until its length
    is a multiple of ``size`` (as DistributedSampler pads); rank ``r`` takes
    the elements at ``r, r + size, r + 2 * size, ...``. Every rank's share
    has ``ceil(len(remaining) / size)`` elements; an empty ``remaining``
    gives every rank an empty share.
    """
    if not remaining:
        return []
    per_rank = math.ceil(len(remaining) / size)
    padding = per_rank * size - len(remaining)
    padded = list(remaining)
    while padding > 0:
        padded += remaining[:padding]
        padding -= min(padding, len(remaining))
    return padded[rank::size]


class ElasticSampler(torch.utils.data.Sampler):
    """Shards the samples of an epoch not processed yet over ``hvd.size()``.

    Args:
        dataset: anything with ``len()``; indices ``0 .. len(dataset) - 1``
            are sampled.
        shuffle: whether each epoch visits the indices in a random order
            (the same on every rank: a permutation seeded with
            ``seed + epoch``), or in index order.
        seed: the base of the shuffling seed; equal on every rank.

    Attributes (read-only for users):
        epoch: the current epoch (``set_epoch``).
        processed_indices: the indices recorded as processed this epoch.
        remaining_indices: the epoch's indices not processed at the last
            ``reset()``, in the epoch's order.
        indices: this rank's share of ``remaining_indices``, what ``iter``
            yields and what ``record_batch`` refers to.
        num_replicas, rank: the world the share was cut for.
        num_samples: ``len(indices)``; total_size: ``num_samples *
            num_replicas``.

    hvd must be initialized before the sampler is built or reset. Not
    thread-safe; used by the training thread.
    """

    def __init__(self, dataset: Sized, shuffle: bool = True, seed: int = 0):
        # torch.utils.data.Sampler.__init__ does nothing, and its argument is
        # deprecated in newer torch releases, so it is not called.
        self.dataset = dataset
        self.shuffle = shuffle
        self.seed = seed

        self.epoch = 0
        self.processed_indices: Set[int] = set()

        self.num_replicas = 0
        self.rank = 0
        self.remaining_indices: List[int] = []
        self.indices: List[int] = []
        self.num_samples = 0
        self.total_size = 0

        self.reset()

    def set_epoch(self, epoch: int) -> None:
        """Starts epoch ``epoch``: nothing processed, a new order."""
        self.epoch = epoch
        self.processed_indices = set()
        self.reset()

    def record_batch(self, batch_idx: int, batch_size: int) -> None:
        """Records batch ``batch_idx`` of this rank's share (the samples
        ``indices[batch_idx * batch_size : (batch_idx + 1) * batch_size]``)
        as processed. ``batch_idx`` counts from the start of the current
        iteration, that is since the last reset."""
        self.record_indices(self.get_indices(batch_idx, batch_size))

    def record_indices(self, indices: Iterable[Any]) -> None:
        """Records data set indices (ints, or anything ``int()`` takes) as
        processed."""
        self.processed_indices.update(int(i) for i in indices)

    def get_indices(self, batch_idx: int, batch_size: int) -> List[int]:
        """The data set indices of batch ``batch_idx`` of this rank's share
        (fewer than ``batch_size`` for the last batch, none past the end)."""
        start = batch_idx * batch_size
        end = min(start + batch_size, len(self.indices))
        return self.indices[start:end]

    def state_dict(self) -> Dict[str, Any]:
        """The epoch and the processed indices (a copy)."""
        return {"epoch": self.epoch,
                "processed_indices": set(self.processed_indices)}

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Goes back to ``state_dict`` (from ``state_dict()``) and re-shards
        for the current world."""
        self.epoch = state_dict["epoch"]
        self.processed_indices = set(state_dict["processed_indices"])
        self.reset()

    def reset(self) -> None:
        """Re-shards the epoch's unprocessed indices for the current
        ``hvd.rank()`` / ``hvd.size()``. Called after the world changed
        (TorchState does it after every reset, restore and sync)."""
        self.num_replicas = _hvd.size()
        self.rank = _hvd.rank()
        self.remaining_indices = [i for i in self._epoch_order()
                                  if i not in self.processed_indices]
        self.num_samples = math.ceil(len(self.remaining_indices) /
                                     self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        self.indices = _shard(self.remaining_indices, self.rank,
                              self.num_replicas)

    def _epoch_order(self) -> List[int]:
        """Every index of the data set in this epoch's order."""
        n = len(self.dataset)
        if not self.shuffle:
            return list(range(n))
        generator = torch.Generator()
        generator.manual_seed(self.seed + self.epoch)
        return torch.randperm(n, generator=generator).tolist()

    def __iter__(self) -> Iterator[int]:
        return iter(self.indices)

    def __len__(self) -> int:
        return self.num_samples
