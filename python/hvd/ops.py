"""Collectives on numpy arrays (and anything numpy.asarray accepts).

Every *_async call returns a handle (grouped ones a list of handles);
synchronize(handle) waits for it (with the GIL released) and returns the
output (a list for a group), raising the exception of the failure's kind.
The arrays involved are kept alive here until then. Every collective takes
`process_set=` (default: every rank).
"""

import threading

import numpy as np

from ._core import core
from .exceptions import InvalidArgumentError, InvalidArgumentTypeError
from .process_sets import global_process_set, set_id

# The runtime's ReduceOp values (runtime/include/hvd/runtime/types.h).
Sum, Average, Min, Max, Product, Adasum = 0, 1, 2, 3, 4, 5

_pending = {}
_pending_lock = threading.Lock()


class _Pending:
    __slots__ = ("keep", "output", "copy_back", "dtype", "with_splits")

    def __init__(self, keep, output, copy_back=None, dtype=None,
                 with_splits=False):
        self.keep = keep            # arrays the runtime reads or writes
        self.output = output        # what synchronize returns
        self.copy_back = copy_back  # the user's non-contiguous array
        self.dtype = dtype          # runtime-allocated output: its dtype
        self.with_splits = with_splits  # alltoall: also the received splits


def _remember(handle, pending):
    with _pending_lock:
        _pending[handle] = pending
    return handle


def _name(name):
    return "" if name is None else str(name)


def _names(name, count):
    """A grouped op's tensor names: name.0, name.1, ... (or generated)."""
    return [""] * count if name is None else [f"{name}.{i}"
                                              for i in range(count)]


def _reduce_op(op, average, default=None):
    if op is not None and average is not None:
        raise InvalidArgumentError(
            "pass either op or the deprecated average, not both")
    if op is None:
        if average is None and default is not None:
            return default
        return Sum if average is False else Average
    if op not in (Sum, Average, Min, Max, Product, Adasum):
        raise InvalidArgumentError(
            f"unknown reduce op {op!r}; use hvd.Sum, hvd.Average, hvd.Min, "
            "hvd.Max, hvd.Product or hvd.Adasum")
    return op


def _in_place_buffer(array):
    """(buffer the runtime writes, user's array to copy back into or None).

    A CUDA array (``__cuda_array_interface__`` and ``device``, as
    ``hvd.torch`` makes them) is taken as it is: allreduce and broadcast run
    on it through NCCL (docs/gpu.md).
    """
    if hasattr(array, "__cuda_array_interface__"):
        return array, None
    if not isinstance(array, np.ndarray):
        raise InvalidArgumentTypeError(
            "in-place collectives need a numpy array, got "
            f"{type(array).__name__}")
    if not array.flags.writeable:
        raise InvalidArgumentError(
            "in-place collectives need a writable array")
    if array.flags.c_contiguous:
        return array, None
    return np.ascontiguousarray(array), array


def allreduce_async(array, name=None, op=None, prescale_factor=1.0,
                    postscale_factor=1.0, average=None,
                    process_set=global_process_set):
    source = np.asarray(array, order="C")
    output = np.empty_like(source)
    handle = core.allreduce_async(source, output, _name(name),
                                  _reduce_op(op, average),
                                  float(prescale_factor),
                                  float(postscale_factor),
                                  set_id(process_set))
    return _remember(handle, _Pending((source, output), output))


def allreduce_async_(array, name=None, op=None, prescale_factor=1.0,
                     postscale_factor=1.0, average=None,
                     process_set=global_process_set):
    buffer, copy_back = _in_place_buffer(array)
    handle = core.allreduce_async(buffer, buffer, _name(name),
                                  _reduce_op(op, average),
                                  float(prescale_factor),
                                  float(postscale_factor),
                                  set_id(process_set))
    return _remember(handle, _Pending((buffer,), array, copy_back))


def grouped_allreduce_async_(arrays, name=None, op=None, prescale_factor=1.0,
                             postscale_factor=1.0,
                             process_set=global_process_set):
    """Reduces every array in place, as one fused unit; a list of handles."""
    buffers = [_in_place_buffer(a) for a in arrays]
    handles = core.grouped_allreduce_async(
        [b for b, _ in buffers], _names(name, len(buffers)),
        _reduce_op(op, None), float(prescale_factor), float(postscale_factor),
        set_id(process_set))
    return [_remember(h, _Pending((b,), a, copy))
            for h, (b, copy), a in zip(handles, buffers, arrays)]


def grouped_allreduce_async(arrays, name=None, op=None, prescale_factor=1.0,
                            postscale_factor=1.0,
                            process_set=global_process_set):
    copies = [np.array(a, copy=True, order="C") for a in arrays]
    return grouped_allreduce_async_(copies, name, op, prescale_factor,
                                    postscale_factor, process_set)


def _source(array):
    """(what the core reads, its dtype) for an op that allocates its
    output: a CUDA array as it is (its result is a CudaResult), anything
    else as a C-contiguous numpy array."""
    if hasattr(array, "__cuda_array_interface__"):
        return array, np.dtype(array.__cuda_array_interface__["typestr"])
    source = np.asarray(array, order="C")
    return source, source.dtype


class CudaResult:
    """A CUDA array over device memory the runtime allocated (the output
    of an allgather, alltoall or reducescatter of CUDA arrays):
    ``torch.as_tensor(result, device="cuda")`` takes it without a copy and
    keeps the memory alive."""

    def __init__(self, flat, dtype, shape):
        self.flat = flat  # the runtime's DeviceBytes: frees the memory
        self.device = flat.device
        interface = dict(flat.__cuda_array_interface__)
        interface.update(shape=tuple(shape), typestr=np.dtype(dtype).str)
        self.__cuda_array_interface__ = interface


def allgather_async(array, name=None, process_set=global_process_set):
    source, dtype = _source(array)
    handle = core.allgather_async(source, _name(name), set_id(process_set))
    return _remember(handle, _Pending((source,), None, dtype=dtype))


def grouped_allgather_async(arrays, name=None,
                            process_set=global_process_set):
    sources = [_source(a) for a in arrays]
    handles = core.grouped_allgather_async([s for s, _ in sources],
                                           _names(name, len(sources)),
                                           set_id(process_set))
    return [_remember(h, _Pending((s,), None, dtype=d))
            for h, (s, d) in zip(handles, sources)]


def broadcast_async(array, root_rank, name=None,
                    process_set=global_process_set):
    buffer = np.array(array, copy=True, order="C")
    handle = core.broadcast_async(buffer, int(root_rank), _name(name),
                                  set_id(process_set))
    return _remember(handle, _Pending((buffer,), buffer))


def broadcast_async_(array, root_rank, name=None,
                     process_set=global_process_set):
    buffer, copy_back = _in_place_buffer(array)
    handle = core.broadcast_async(buffer, int(root_rank), _name(name),
                                  set_id(process_set))
    return _remember(handle, _Pending((buffer,), array, copy_back))


def alltoall_async(array, splits=None, name=None,
                   process_set=global_process_set):
    """Sends splits[r] rows of dimension 0 to the set's rank r (equal parts
    without splits). synchronize gives the received rows, and with splits
    also how many came from each rank."""
    source, dtype = _source(array)
    split_list = [] if splits is None else [int(s) for s in
                                            np.asarray(splits).ravel()]
    handle = core.alltoall_async(source, split_list, _name(name),
                                 set_id(process_set))
    return _remember(handle, _Pending((source,), None, dtype=dtype,
                                      with_splits=splits is not None))


def reducescatter_async(array, name=None, op=None, prescale_factor=1.0,
                        postscale_factor=1.0,
                        process_set=global_process_set):
    """Reduces across the set (Average by default, or Sum) and returns this
    rank's block of dimension 0; the first (rows % size) ranks get a row
    more."""
    source, dtype = _source(array)
    handle = core.reducescatter_async(source, _name(name),
                                      _reduce_op(op, None, Average),
                                      float(prescale_factor),
                                      float(postscale_factor),
                                      set_id(process_set))
    return _remember(handle, _Pending((source,), None, dtype=dtype))


def grouped_reducescatter_async(arrays, name=None, op=None,
                                prescale_factor=1.0, postscale_factor=1.0,
                                process_set=global_process_set):
    sources = [_source(a) for a in arrays]
    handles = core.grouped_reducescatter_async(
        [s for s, _ in sources], _names(name, len(sources)),
        _reduce_op(op, None, Average), float(prescale_factor),
        float(postscale_factor), set_id(process_set))
    return [_remember(h, _Pending((s,), None, dtype=d))
            for h, (s, d) in zip(handles, sources)]


def poll(handle):
    """True once the collective behind `handle` (or every handle of a
    group) has finished."""
    if isinstance(handle, list):
        return all(core.poll(h) for h in handle)
    return core.poll(handle)


def synchronize(handle):
    """Waits for `handle` and returns its output (a list for a group)."""
    if isinstance(handle, list):
        return [synchronize(h) for h in handle]
    with _pending_lock:
        pending = _pending.pop(handle, None)
    result = core.wait(handle)
    if pending is None:
        return result
    if isinstance(result, tuple):  # the runtime allocated the output
        flat, shape, sizes = result
        if hasattr(flat, "__cuda_array_interface__"):
            output = CudaResult(flat, pending.dtype, shape)
        else:
            output = flat.view(pending.dtype).reshape(shape)
        if pending.with_splits:
            return output, np.array(sizes, dtype=np.int32)
        return output
    if pending.copy_back is not None:
        pending.copy_back[...] = pending.keep[0]
    return pending.output


def allreduce(array, name=None, op=None, prescale_factor=1.0,
              postscale_factor=1.0, average=None,
              process_set=global_process_set):
    return synchronize(allreduce_async(array, name, op, prescale_factor,
                                       postscale_factor, average,
                                       process_set))


def allreduce_(array, name=None, op=None, prescale_factor=1.0,
               postscale_factor=1.0, average=None,
               process_set=global_process_set):
    return synchronize(allreduce_async_(array, name, op, prescale_factor,
                                        postscale_factor, average,
                                        process_set))


def grouped_allreduce(arrays, name=None, op=None, prescale_factor=1.0,
                      postscale_factor=1.0, process_set=global_process_set):
    return synchronize(grouped_allreduce_async(
        arrays, name, op, prescale_factor, postscale_factor, process_set))


def grouped_allreduce_(arrays, name=None, op=None, prescale_factor=1.0,
                       postscale_factor=1.0, process_set=global_process_set):
    return synchronize(grouped_allreduce_async_(
        arrays, name, op, prescale_factor, postscale_factor, process_set))


def allgather(array, name=None, process_set=global_process_set):
    return synchronize(allgather_async(array, name, process_set))


def grouped_allgather(arrays, name=None, process_set=global_process_set):
    return synchronize(grouped_allgather_async(arrays, name, process_set))


def broadcast(array, root_rank, name=None, process_set=global_process_set):
    return synchronize(broadcast_async(array, root_rank, name, process_set))


def broadcast_(array, root_rank, name=None, process_set=global_process_set):
    return synchronize(broadcast_async_(array, root_rank, name, process_set))


def alltoall(array, splits=None, name=None, process_set=global_process_set):
    """The rows this rank receives, by sender; with `splits`, a tuple
    (rows, received_splits)."""
    return synchronize(alltoall_async(array, splits, name, process_set))


def reducescatter(array, name=None, op=None, prescale_factor=1.0,
                  postscale_factor=1.0, process_set=global_process_set):
    return synchronize(reducescatter_async(array, name, op, prescale_factor,
                                           postscale_factor, process_set))


def grouped_reducescatter(arrays, name=None, op=None, prescale_factor=1.0,
                          postscale_factor=1.0,
                          process_set=global_process_set):
    return synchronize(grouped_reducescatter_async(
        arrays, name, op, prescale_factor, postscale_factor, process_set))


def barrier(process_set=global_process_set):
    """Returns once every rank of the set has called barrier()."""
    core.wait(core.barrier_async(set_id(process_set)))


def join(device=-1, process_set=global_process_set):
    """Says this rank has no more data. Until every rank of the set has
    joined, it takes part in the others' allreduces and reducescatters with
    zeros and in their allgathers with no rows. Returns the rank that joined
    last. `device` exists for Horovod's signature."""
    sizes = core.wait(core.join_async(set_id(process_set)))
    return int(sizes[0])
