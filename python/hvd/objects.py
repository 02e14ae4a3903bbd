"""Collectives on picklable Python objects, built on the array ones."""

import io
import pickle

import numpy as np

from .basics import rank
from .ops import allgather, broadcast_
from .process_sets import global_process_set


def _part(name, suffix):
    return None if name is None else f"{name}.{suffix}"


def broadcast_object(obj, root_rank=0, name=None,
                     process_set=global_process_set):
    """Returns root_rank's `obj` on every rank of the set; only the root's
    `obj` is read."""
    if rank() == root_rank:
        payload = np.frombuffer(pickle.dumps(obj), dtype=np.uint8).copy()
        length = np.array([payload.size], dtype=np.int64)
    else:
        length = np.zeros(1, dtype=np.int64)
    broadcast_(length, root_rank, _part(name, "length"),
               process_set=process_set)
    if rank() != root_rank:
        payload = np.empty(int(length[0]), dtype=np.uint8)
    broadcast_(payload, root_rank, _part(name, "payload"),
               process_set=process_set)
    return pickle.load(io.BytesIO(payload.tobytes()))


def allgather_object(obj, name=None, process_set=global_process_set):
    """Returns the list of the set's ranks' `obj`, in rank order."""
    payload = np.frombuffer(pickle.dumps(obj), dtype=np.uint8)
    lengths = allgather(np.array([payload.size], dtype=np.int64),
                        _part(name, "lengths"), process_set=process_set)
    gathered = allgather(payload, _part(name, "payload"),
                         process_set=process_set).tobytes()
    objects, start = [], 0
    for length in lengths.tolist():
        objects.append(pickle.loads(gathered[start:start + length]))
        start += length
    return objects
