"""Collectives on numpy arrays (and anything numpy.asarray accepts).

Every *_async call returns a handle; synchronize(handle) waits for it (with
the GIL released) and returns the output array, raising the exception of the
failure's kind. The arrays involved are kept alive here until then.
"""

import threading

import numpy as np

from ._core import core

Sum, Average, Min, Max, Product = 0, 1, 2, 3, 4

_pending = {}
_pending_lock = threading.Lock()


class _Pending:
    __slots__ = ("keep", "output", "copy_back", "dtype")

    def __init__(self, keep, output, copy_back=None, dtype=None):
        self.keep = keep            # arrays the runtime reads or writes
        self.output = output        # what synchronize returns
        self.copy_back = copy_back  # the user's non-contiguous array
        self.dtype = dtype          # allgather: the result's dtype


def _remember(handle, pending):
    with _pending_lock:
        _pending[handle] = pending
    return handle


def _name(name):
    return "" if name is None else str(name)


def _reduce_op(op, average):
    if op is not None and average is not None:
        raise ValueError("pass either op or the deprecated average, not both")
    if op is None:
        return Sum if average is False else Average
    if op not in (Sum, Average, Min, Max, Product):
        raise ValueError(f"unknown reduce op {op!r}; use hvd.Sum, "
                         "hvd.Average, hvd.Min, hvd.Max or hvd.Product")
    return op


def _in_place_buffer(array):
    """(buffer the runtime writes, user's array to copy back into or None)."""
    if not isinstance(array, np.ndarray):
        raise TypeError("in-place collectives need a numpy array, got "
                        f"{type(array).__name__}")
    if not array.flags.writeable:
        raise ValueError("in-place collectives need a writable array")
    if array.flags.c_contiguous:
        return array, None
    return np.ascontiguousarray(array), array


def allreduce_async(array, name=None, op=None, prescale_factor=1.0,
                    postscale_factor=1.0, average=None):
    source = np.asarray(array, order="C")
    output = np.empty_like(source)
    handle = core.allreduce_async(source, output, _name(name),
                                  _reduce_op(op, average),
                                  float(prescale_factor),
                                  float(postscale_factor))
    return _remember(handle, _Pending((source, output), output))


def allreduce_async_(array, name=None, op=None, prescale_factor=1.0,
                     postscale_factor=1.0, average=None):
    buffer, copy_back = _in_place_buffer(array)
    handle = core.allreduce_async(buffer, buffer, _name(name),
                                  _reduce_op(op, average),
                                  float(prescale_factor),
                                  float(postscale_factor))
    return _remember(handle, _Pending((buffer,), array, copy_back))


def allgather_async(array, name=None):
    source = np.asarray(array, order="C")
    handle = core.allgather_async(source, _name(name))
    return _remember(handle, _Pending((source,), None, dtype=source.dtype))


def broadcast_async(array, root_rank, name=None):
    buffer = np.array(array, copy=True, order="C")
    handle = core.broadcast_async(buffer, int(root_rank), _name(name))
    return _remember(handle, _Pending((buffer,), buffer))


def broadcast_async_(array, root_rank, name=None):
    buffer, copy_back = _in_place_buffer(array)
    handle = core.broadcast_async(buffer, int(root_rank), _name(name))
    return _remember(handle, _Pending((buffer,), array, copy_back))


def poll(handle):
    """True once the collective behind `handle` has finished."""
    return core.poll(handle)


def synchronize(handle):
    """Waits for `handle` and returns its output array."""
    with _pending_lock:
        pending = _pending.pop(handle, None)
    result = core.wait(handle)
    if pending is None:
        return None
    if result is not None:  # allgather: the runtime allocated the output
        flat, shape = result
        return flat.view(pending.dtype).reshape(shape)
    if pending.copy_back is not None:
        pending.copy_back[...] = pending.keep[0]
    return pending.output


def allreduce(array, name=None, op=None, prescale_factor=1.0,
              postscale_factor=1.0, average=None):
    return synchronize(allreduce_async(array, name, op, prescale_factor,
                                       postscale_factor, average))


def allreduce_(array, name=None, op=None, prescale_factor=1.0,
               postscale_factor=1.0, average=None):
    return synchronize(allreduce_async_(array, name, op, prescale_factor,
                                        postscale_factor, average))


def allgather(array, name=None):
    return synchronize(allgather_async(array, name))


def broadcast(array, root_rank, name=None):
    return synchronize(broadcast_async(array, root_rank, name))


def broadcast_(array, root_rank, name=None):
    return synchronize(broadcast_async_(array, root_rank, name))


def barrier():
    """Returns once every rank has called barrier()."""
    core.wait(core.barrier_async())
