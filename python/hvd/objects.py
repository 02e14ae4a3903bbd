"""Collectives on picklable Python objects, built on the array ones."""

import io
import pickle

import numpy as np

from .basics import rank
from .ops import allgather, broadcast_


def _part(name, suffix):
    return None if name is None else f"{name}.{suffix}"


def broadcast_object(obj, root_rank=0, name=None):
    """Returns root_rank's `obj` on every rank."""
    if rank() == root_rank:
        payload = np.frombuffer(pickle.dumps(obj), dtype=np.uint8).copy()
        length = np.array([payload.size], dtype=np.int64)
    else:
        length = np.zeros(1, dtype=np.int64)
    broadcast_(length, root_rank, _part(name, "length"))
    if rank() != root_rank:
        payload = np.empty(int(length[0]), dtype=np.uint8)
    broadcast_(payload, root_rank, _part(name, "payload"))
    return pickle.load(io.BytesIO(payload.tobytes()))


def allgather_object(obj, name=None):
    """Returns the list of every rank's `obj`, by rank."""
    payload = np.frombuffer(pickle.dumps(obj), dtype=np.uint8)
    lengths = allgather(np.array([payload.size], dtype=np.int64),
                        _part(name, "lengths"))
    gathered = allgather(payload, _part(name, "payload")).tobytes()
    objects, start = [], 0
    for length in lengths.tolist():
        objects.append(pickle.loads(gathered[start:start + length]))
        start += length
    return objects
