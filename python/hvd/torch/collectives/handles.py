"""Collectives in flight: their handles, ``poll`` and ``synchronize``; and
the calling protocol every collective module follows.

Each ``*_async`` function (in ``allreduce``, ``allgather``, ``broadcast``,
``alltoall``, ``reducescatter``) checks the tensor, hands the core
(``hvd``) a numpy array that shares the tensor's memory where possible (see
``tensor_bridge``), and returns a :class:`Handle`. ``synchronize(handle)``
waits for the core and returns the result as a torch tensor: the caller's
own tensor for the in-place ``*_async_`` variants, a new one otherwise.

Calling protocol (as in horovod.torch):

* Every rank must issue the same collectives. Unnamed ones get a name from
  the core in call order, so they must be issued in the same order
  everywhere; a named one is matched by name (``allreduce.<name>`` here, as
  horovod prefixes names with the op) and must be unique among the
  operations in flight.
* The ``grouped_*`` collectives take a list of tensors and run them as one
  unit: it is negotiated and fused as a whole and runs when every rank has
  submitted all of its tensors, so no other collective is interleaved with
  part of it. Their ``*_async`` forms return a list of :class:`Handle` s,
  one per tensor in order; ``synchronize(list)`` (and ``poll(list)``) take
  the whole list and give the list of results. A named group's tensors are
  ``grouped_<op>.<name>.0``, ``.1``, ...; unnamed groups get names from
  the core in call order, like the single-tensor ops.
* ``sparse_allreduce_async`` (in ``sparse_allreduce``) reduces a sparse COO tensor
  by two allgathers (indices, values); its :class:`SparseHandle` is also a
  callable, as in horovod, where the handle is a function that returns the
  result.
* ``process_set=`` (every collective) limits a collective to the ranks of
  an ``hvd.ProcessSet`` registered with ``hvd.init(process_sets=...)`` or
  ``hvd.add_process_set``; only those ranks call it, and root ranks are
  global ranks. The default, ``hvd.global_process_set``, is every rank.
* A handle keeps its tensors alive until it is synchronized. Do not read or
  write a tensor given to an in-place op before its handle is synchronized.
* Errors come from the core unchanged: ``hvd.HorovodInternalError`` when a
  peer or the transport failed (an elastic job recovers from it),
  ``hvd.MismatchError`` when ranks disagree on a collective (a bug to fix).
  A collective refused for its arguments is refused at enqueue time, on
  the calling rank, with ``hvd.InvalidArgumentError`` (a ``ValueError``) or
  ``hvd.InvalidArgumentTypeError`` (a ``TypeError``), both also
  ``RuntimeError`` s as Horovod's refusals are (docs/errors.md).

Autograd: the ``*_async`` functions are not autograd-aware; the synchronous
collectives that return new tensors (``allreduce``, ``allgather``,
``broadcast``, ``alltoall``, ``reducescatter`` and the grouped ones) are,
through the autograd Functions of their modules, as in horovod.torch. The
gradient of a collective is taken of the sum over the set's ranks of their
losses (what data-parallel training differentiates); each collective's
module says what its gradient is. Every Function works within the process
set of its forward call. The backward collectives are unnamed, so their
names come from the core in call order: every rank of the set must run the
same backward graph, which data-parallel training does. Backward calls the
Functions again, so higher-order gradients work too.
"""

from typing import Any, Callable, List, Optional

import torch

import hvd as _hvd


class Handle:
    """A collective in flight, returned by the ``*_async`` functions.

    It owns the staged input (and through it the caller's tensor) until
    :func:`synchronize`; then it is spent.
    """

    __slots__ = ("_core", "_staged", "_post")

    def __init__(self, core: Any, staged: Any,
                 post: Optional[Callable[[torch.Tensor],
                                         torch.Tensor]] = None):
        self._core = core
        self._staged = staged
        self._post = post

    def _wait(self) -> torch.Tensor:
        if self._staged is None:
            raise ValueError("this handle was already synchronized")
        staged, post = self._staged, self._post
        self._staged = self._post = None  # released even if the op failed
        result = staged.finish(_hvd.synchronize(self._core))
        return post(result) if post is not None else result


class SparseHandle:
    """A sparse allreduce in flight: the allgathers of its indices and
    values. ``synchronize(handle)`` or ``handle()`` gives the result."""

    __slots__ = ("_indices", "_values", "_like", "_divisor")

    def __init__(self, indices: Handle, values: Handle, like: torch.Tensor,
                 divisor: int):
        self._indices, self._values = indices, values
        self._like = like
        self._divisor = divisor

    def poll(self) -> bool:
        return poll(self._indices) and poll(self._values)

    def _wait(self) -> torch.Tensor:
        # Both are waited on even if one fails, so none keeps its tensors.
        indices, values = _synchronize_all([self._indices, self._values])
        if self._divisor != 1:
            values = values / self._divisor
        # Gathered as (nnz, sparse_dim) rows: back to COO's layout.
        return torch.sparse_coo_tensor(indices.t(), values,
                                       self._like.shape)

    __call__ = _wait


def poll(handle: Any) -> bool:
    """Whether the operation behind ``handle`` has finished (never blocks).

    Accepts the handles of this module and those of the numpy-level ``hvd``,
    and lists of them (a grouped op's): True once all have finished.
    """
    if isinstance(handle, list):
        return all(poll(h) for h in handle)
    if isinstance(handle, SparseHandle):
        return handle.poll()
    return _hvd.poll(handle._core if isinstance(handle, Handle) else handle)


def synchronize(handle: Any) -> Any:
    """Waits for ``handle`` and returns its result (the GIL is released).

    Returns:
        A torch tensor for a :class:`Handle`: the input tensor for in-place
        ops, a new tensor otherwise; for an alltoall given splits, a tuple
        (output, received_splits). A numpy-level ``hvd`` handle gives its
        numpy array. A list of handles (a grouped op's) gives the list of
        their results, in order; every handle is waited on even if one
        fails, and the first failure is raised.

    Raises:
        hvd.HorovodInternalError, hvd.MismatchError: the collective failed.
        ValueError: the handle was already synchronized.
    """
    if isinstance(handle, list):
        return _synchronize_all(handle)
    if isinstance(handle, (Handle, SparseHandle)):
        return handle._wait()
    return _hvd.synchronize(handle)


def _synchronize_all(handles: List[Any]) -> List[Any]:
    """Waits for every handle, so none is left holding its tensors."""
    results, error = [], None
    for h in handles:
        try:
            results.append(synchronize(h))
        except Exception as e:  # noqa: BLE001 - re-raised below
            results.append(None)
            error = error or e
    if error is not None:
        raise error
    return results
