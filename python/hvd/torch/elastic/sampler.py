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

Timing, as Horovod's: ``reset()`` (at construction, ``set_epoch``,
``load_state_dict`` and so at every restore and sync, and after every reset
of the job) works out what is left of the epoch for the current world
(``remaining_indices``, ``num_samples``); the rank's share (``indices``) is
cut from that when the loader is next iterated. Until then ``record_batch``
refers to the share in use, the one the running iteration yields, so a
batch recorded right after a restore is the batch the loop processed. The
one exception is a new epoch (``set_epoch``, or a state of another epoch
loaded): a share of another epoch's order does not apply, and
``record_batch`` before the first iteration refers to the share that
iteration will yield.

Progress is a set of indices, not Horovod's count: ``TorchState`` merges
every rank's recorded indices at each commit, so that whatever the ranks
did (a different number of batches each, ``record_indices`` of any
samples, a restart on another number of workers), each sample of an epoch
is in exactly one committed share. Horovod counts ``batch_size *
num_replicas`` per ``record_batch`` and assumes that the first that many
samples of the epoch's order are done, which holds only while every rank
records the same batches in step. ``processed_num`` is therefore the
number of distinct samples this rank knows as processed (the job's at the
last commit, plus this rank's own since), never more than the data set:
Horovod's counts the padding at the end of an epoch too.

``TorchState`` saves, restores and syncs the sampler through
``state_dict()`` / ``load_state_dict()``, and calls ``reset()`` after
every reset of the job.
"""

import math
import random
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
            (the same on every rank, and Horovod's: ``range(len(dataset))``
            shuffled by ``random.Random(seed + epoch)``), or in index order.
        seed: the base of the shuffling seed; equal on every rank.

    Attributes (read-only for users):
        epoch: the current epoch (``set_epoch``).
        processed_indices: the indices recorded as processed this epoch.
        processed_num: ``len(processed_indices)`` (see the module doc).
        remaining_indices: the epoch's indices not processed at the last
            ``reset()``, in the epoch's order.
        num_replicas, rank: the world of the last ``reset()``, which the
            next share is cut for.
        num_samples: the length of that share (``len(sampler)``);
            total_size: ``num_samples * num_replicas``.
        indices: the share in use: what the last iteration yielded, and
            what ``record_batch`` refers to.

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
        self.num_samples = 0
        self.total_size = 0
        self.indices: List[int] = []
        # The epoch `indices` was cut for; None: no share cut yet.
        self._share_epoch = None

        self.reset()

    @property
    def processed_num(self) -> int:
        """How many samples of this epoch are recorded as processed."""
        return len(self.processed_indices)

    def set_epoch(self, epoch: int) -> None:
        """Starts epoch ``epoch``: nothing processed, a new order. Call it
        at the end of an epoch, on every rank alike."""
        self.epoch = epoch
        self.processed_indices = set()
        self._share_epoch = None
        self.reset()

    def record_batch(self, batch_idx: int, batch_size: int) -> None:
        """Records batch ``batch_idx`` of the share in use (the samples
        ``indices[batch_idx * batch_size : (batch_idx + 1) * batch_size]``)
        as processed. ``batch_idx`` counts from the start of the current
        iteration of the loader."""
        self.record_indices(self.get_indices(batch_idx, batch_size))

    def record_indices(self, indices: Iterable[Any]) -> None:
        """Records data set indices (ints, or anything ``int()`` takes) as
        processed."""
        self.processed_indices.update(int(i) for i in indices)

    def get_indices(self, batch_idx: int, batch_size: int) -> List[int]:
        """The data set indices of batch ``batch_idx`` of the share in use
        (fewer than ``batch_size`` for the last batch, none past the end)."""
        share = self._share()
        start = batch_idx * batch_size
        end = min(start + batch_size, len(share))
        return share[start:end]

    def state_dict(self) -> Dict[str, Any]:
        """The epoch and the progress: Horovod's keys ``epoch`` and
        ``processed_num``, and hvd's ``processed_indices`` (a copy)."""
        return {"epoch": self.epoch,
                "processed_num": self.processed_num,
                "processed_indices": set(self.processed_indices)}

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Goes back to ``state_dict`` and works out what is left for the
        current world. With ``processed_indices`` (hvd's state_dict) those
        are the processed samples; without (a Horovod checkpoint), the first
        ``processed_num`` of the epoch's order are, as in Horovod. The share
        in use stays until the loader is next iterated, unless the epoch
        changed."""
        self.epoch = state_dict["epoch"]
        if "processed_indices" in state_dict:
            self.processed_indices = set(state_dict["processed_indices"])
        else:
            done = self._epoch_order()[:state_dict["processed_num"]]
            self.processed_indices = set(done)
        self.reset()

    def reset(self) -> None:
        """Works out the epoch's unprocessed indices and the length of the
        next share for the current ``hvd.rank()`` / ``hvd.size()``. Called
        when the world or the progress changed (TorchState does it after
        every reset, restore and sync); the share itself is cut when the
        loader is next iterated."""
        self.num_replicas = _hvd.size()
        self.rank = _hvd.rank()
        self.remaining_indices = [i for i in self._epoch_order()
                                  if i not in self.processed_indices]
        self.num_samples = math.ceil(len(self.remaining_indices) /
                                     self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas

    def _share(self) -> List[int]:
        """The share in use, cut now if none was for this epoch."""
        if self._share_epoch != self.epoch:
            self._cut()
        return self.indices

    def _cut(self) -> None:
        # Cut from remaining_indices as of the last reset(), not from the
        # records since: TorchState resets only where every rank holds the
        # same progress, so the shares of one world never overlap.
        self.indices = _shard(self.remaining_indices, self.rank,
                              self.num_replicas)
        self._share_epoch = self.epoch

    def _epoch_order(self) -> List[int]:
        """Every index of the data set in this epoch's order."""
        order = list(range(len(self.dataset)))
        if self.shuffle:
            random.Random(self.seed + self.epoch).shuffle(order)
        return order

    def __iter__(self) -> Iterator[int]:
        self._cut()
        return iter(self.indices)

    def __len__(self) -> int:
        return self.num_samples
