"""The arguments every collective module reads the same way.

* ``op_name``: the core's name of a named collective (``<kind>.<name>``).
* ``set_ranks``: the global ranks of a ``process_set=`` argument.
* ``Tensors``, ``tensor_list``, ``compress_each``: the list of tensors of
  a grouped collective, checked, and compressed tensor by tensor.
* ``check_rows``: the input of the collectives that split dimension 0 among
  the ranks (alltoall, reducescatter).
"""

from typing import Any, List, Optional, Sequence

import torch

import hvd as _hvd
from hvd.exceptions import InvalidArgumentError, InvalidArgumentTypeError

from ..compression import Compressor
from ..tensor_bridge import check_tensor

Tensors = Sequence[torch.Tensor]


def op_name(kind: str, name: Optional[str]) -> Optional[str]:
    """The core's name for a named collective: ``<kind>.<name>``."""
    return None if name is None else f"{kind}.{name}"


def set_ranks(process_set: Any) -> List[int]:
    """The global ranks of ``process_set`` (a ProcessSet or a set id)."""
    if isinstance(process_set, _hvd.ProcessSet):
        return list(process_set.ranks)
    return list(_hvd.get_process_set_ids_and_ranks()[int(process_set)])


def tensor_list(tensors: Tensors, fn: str) -> List[torch.Tensor]:
    """A grouped collective's ``tensors`` as a list.

    Raises:
        InvalidArgumentTypeError (a TypeError): not a list or tuple (a
            single tensor, say).
    """
    if isinstance(tensors, torch.Tensor) or \
            not isinstance(tensors, (list, tuple)):
        raise InvalidArgumentTypeError(
            f"hvd.torch.{fn} expects a list or tuple of "
            f"tensors, got {type(tensors).__name__}")
    return list(tensors)


def compress_each(compression: Compressor, tensors: List[torch.Tensor],
                  reduce: Any) -> List[torch.Tensor]:
    """Compresses every tensor, reduces them all with `reduce(*compressed)`
    and decompresses each result."""
    compressed = [compression.compress(t) for t in tensors]
    reduced = reduce(*[c for c, _ in compressed])
    return [compression.decompress(r, ctx)
            for r, (_, ctx) in zip(reduced, compressed)]


def check_rows(tensor: torch.Tensor, op: str) -> None:
    """Rejects what ``check_tensor`` rejects, and a 0-dim tensor."""
    check_tensor(tensor, op)
    if tensor.dim() == 0:
        raise InvalidArgumentError(
            f"hvd.torch.{op} splits dimension 0 among the "
            "ranks; a 0-dim tensor has none (reshape it to "
            "(1,) or more rows)")
