"""Asynchronous collectives on torch tensors: enqueue, poll, synchronize.

Each ``*_async`` function checks the tensor, hands the core (``hvd``) a numpy
array that shares the tensor's memory where possible (see
``tensor_bridge``), and returns a :class:`Handle`. ``synchronize(handle)``
waits for the core and returns the result as a torch tensor: the caller's
own tensor for the in-place ``*_async_`` variants, a new one otherwise.

Calling protocol (as in horovod.torch):

* Every rank must issue the same collectives. Unnamed ones get a name from
  the core in call order, so they must be issued in the same order
  everywhere; a named one is matched by name (``allreduce.<name>`` here, as
  horovod prefixes names with the op) and must be unique among the
  operations in flight.
* ``sparse_allreduce_async`` reduces a sparse COO tensor by two
  allgathers (indices, values); its handle is also a callable, as in
  horovod, where the handle is a function that returns the result.
* ``process_set=`` (every function here and in the other op modules)
  limits a collective to the ranks of an ``hvd.ProcessSet`` registered with
  ``hvd.init(process_sets=...)`` or ``hvd.add_process_set``; only those
  ranks call it, and root ranks are global ranks. The default,
  ``hvd.global_process_set``, is every rank.
* A handle keeps its tensors alive until it is synchronized. Do not read or
  write a tensor given to an in-place op before its handle is synchronized.
* Errors come from the core unchanged: ``hvd.HorovodInternalError`` when a
  peer or the transport failed (an elastic job recovers from it),
  ``hvd.MismatchError`` when ranks disagree on a collective (a bug to fix).
  Argument errors (``TypeError``, ``ValueError``, ``NotImplementedError``
  for CUDA tensors) are raised at enqueue time.

These functions are not autograd-aware; ``mpi_ops.allreduce`` and friends
are.
"""

import warnings
from typing import Any, Callable, List, Optional

import torch

import hvd as _hvd

from .compression import Compression, Compressor
from .tensor_bridge import Gathered, InPlace, OutOfPlace, check_tensor


def resolve_op(op: Optional[Any], average: Optional[bool], fn: str) -> Any:
    """The reduce op from horovod's ``op`` and deprecated ``average`` flag.

    Raises:
        ValueError: both were given.
    """
    if op is not None and average is not None:
        raise ValueError(f"hvd.torch.{fn}: the op and average arguments are "
                         "mutually exclusive; pass op only")
    if average is not None:
        warnings.warn("the average argument is deprecated; use "
                      "op=hvd.Average or op=hvd.Sum", DeprecationWarning,
                      stacklevel=3)
        return _hvd.Average if average else _hvd.Sum
    return _hvd.Average if op is None else op


def op_name(kind: str, name: Optional[str]) -> Optional[str]:
    """The core's name for a named collective: ``<kind>.<name>``."""
    return None if name is None else f"{kind}.{name}"


def set_ranks(process_set: Any) -> List[int]:
    """The global ranks of ``process_set`` (a ProcessSet or a set id)."""
    if isinstance(process_set, _hvd.ProcessSet):
        return list(process_set.ranks)
    return list(_hvd.get_process_set_ids_and_ranks()[int(process_set)])


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


def allreduce_async(tensor: torch.Tensor, average: Optional[bool] = None,
                    name: Optional[str] = None, op: Optional[Any] = None,
                    prescale_factor: float = 1.0,
                    postscale_factor: float = 1.0,
                    process_set: Any = _hvd.global_process_set, *,
                    compression: Compressor = Compression.none) -> Handle:
    """Starts a reduction of ``tensor`` over all ranks into a new tensor.

    ``op`` is one of ``hvd.Sum, Average, Min, Max, Product, Adasum``
    (default Average); the input is multiplied by ``prescale_factor`` before the
    reduction and the result by ``postscale_factor`` after it. The caller's
    tensor is left unchanged.
    """
    op = resolve_op(op, average, "allreduce_async")
    check_tensor(tensor, "allreduce_async", reduction=True)
    compressed, ctx = compression.compress(tensor)
    staged = OutOfPlace(compressed, "allreduce_async", reduction=True)
    core = _hvd.allreduce_async_(staged.array,
                                 name=op_name("allreduce", name), op=op,
                                 prescale_factor=prescale_factor,
                                 postscale_factor=postscale_factor,
                                 process_set=process_set)
    return Handle(core, staged, lambda out: compression.decompress(out, ctx))


def allreduce_async_(tensor: torch.Tensor, average: Optional[bool] = None,
                     name: Optional[str] = None, op: Optional[Any] = None,
                     prescale_factor: float = 1.0,
                     postscale_factor: float = 1.0,
                     process_set: Any = _hvd.global_process_set, *,
                     compression: Compressor = Compression.none) -> Handle:
    """Like :func:`allreduce_async`, but writes the result into ``tensor``."""
    op = resolve_op(op, average, "allreduce_async_")
    check_tensor(tensor, "allreduce_async_", reduction=True)
    compressed, ctx = compression.compress(tensor)
    staged = InPlace(compressed, "allreduce_async_", reduction=True)
    core = _hvd.allreduce_async_(staged.array,
                                 name=op_name("allreduce", name), op=op,
                                 prescale_factor=prescale_factor,
                                 postscale_factor=postscale_factor,
                                 process_set=process_set)

    def post(out: torch.Tensor) -> torch.Tensor:
        result = compression.decompress(out, ctx)
        if result is not tensor:
            tensor.detach().copy_(result)
        return tensor

    return Handle(core, staged, post)


def allgather_async(tensor: torch.Tensor, name: Optional[str] = None,
                    process_set: Any = _hvd.global_process_set) -> Handle:
    """Starts concatenating every rank's ``tensor`` along dimension 0.

    The first dimension may differ between ranks; the others must agree.
    """
    staged = Gathered(tensor, "allgather_async")
    core = _hvd.allgather_async(staged.array,
                                name=op_name("allgather", name),
                                process_set=process_set)
    return Handle(core, staged)


def broadcast_async(tensor: torch.Tensor, root_rank: int,
                    name: Optional[str] = None,
                    process_set: Any = _hvd.global_process_set) -> Handle:
    """Starts sending ``root_rank``'s tensor to every rank, as a new tensor.

    ``root_rank`` is a global rank (a member of ``process_set``).
    """
    staged = OutOfPlace(tensor, "broadcast_async", reduction=False)
    core = _hvd.broadcast_async_(staged.array, root_rank,
                                 name=op_name("broadcast", name),
                                 process_set=process_set)
    return Handle(core, staged)


def broadcast_async_(tensor: torch.Tensor, root_rank: int,
                     name: Optional[str] = None,
                     process_set: Any = _hvd.global_process_set) -> Handle:
    """Like :func:`broadcast_async`, but writes the result into ``tensor``."""
    staged = InPlace(tensor, "broadcast_async_", reduction=False)
    core = _hvd.broadcast_async_(staged.array, root_rank,
                                 name=op_name("broadcast", name),
                                 process_set=process_set)
    return Handle(core, staged)


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


def sparse_allreduce_async(tensor: torch.Tensor, name: Optional[str],
                           op: Any,
                           process_set: Any = _hvd.global_process_set
                           ) -> SparseHandle:
    """Starts reducing a sparse COO ``tensor`` over the set's ranks.

    Every rank's indices and values are allgathered (``<name>.indices``,
    ``<name>.values``); the result has the same shape, all ranks' entries
    (not coalesced: an index several ranks hold appears once per rank, and
    torch adds them up when it coalesces), with values divided by the
    set's size for ``op=hvd.Average``. Only Average and Sum are sums.

    Returns:
        A :class:`SparseHandle`; ``synchronize(handle)`` (or, as in
        horovod, ``handle()``) gives the sparse result.

    Raises:
        TypeError: ``tensor`` is not a sparse COO tensor.
        ValueError: ``op`` is neither Average nor Sum.
    """
    if not isinstance(tensor, torch.Tensor) or tensor.layout != \
            torch.sparse_coo:
        raise TypeError("hvd.torch.sparse_allreduce_async expects a sparse "
                        "COO tensor (torch.sparse_coo), got "
                        f"{getattr(tensor, 'layout', type(tensor).__name__)}")
    if op not in (_hvd.Average, _hvd.Sum):
        raise ValueError("hvd.torch.sparse_allreduce_async supports "
                         "op=hvd.Average and op=hvd.Sum only")
    # Allgather concatenates dimension 0: indices go as (nnz, sparse_dim).
    indices = tensor._indices().t().contiguous()
    values = tensor._values().contiguous()
    suffix = (lambda part: None) if name is None else \
        (lambda part: f"{name}.{part}")
    indices_handle = allgather_async(indices, name=suffix("indices"),
                                     process_set=process_set)
    values_handle = allgather_async(values, name=suffix("values"),
                                    process_set=process_set)
    divisor = len(set_ranks(process_set)) if op == _hvd.Average else 1
    return SparseHandle(indices_handle, values_handle, tensor, divisor)
