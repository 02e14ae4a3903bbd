"""DistributedOptimizer's ``groups``: which gradients are reduced together.

Pure decisions, no communication; ``optimizer`` applies them. As in
horovod.torch:

* ``groups=n`` (an int > 0): the parameters that require grad, in an order
  every rank agrees on, are cut into ``n`` contiguous groups of nearly
  equal size (the first ``len % n`` one larger).
* ``groups=[[p, q], [r], ...]``: those groups, in that order; every
  parameter not named forms a group of its own. Parameters the optimizer
  does not own, or that do not require grad, are left out.
* ``num_groups=n``: the deprecated spelling of ``groups=n``; when both are
  given, ``groups`` wins.

Each group's gradients are then allreduced as one grouped allreduce.
"""

import warnings
from typing import Any, List, Optional, Sequence, Tuple

import torch

Group = Tuple[torch.Tensor, ...]


def resolve_groups(groups: Any, num_groups: int) -> Any:
    """The effective ``groups`` argument (None: no explicit groups).

    Raises:
        ValueError: ``groups`` is neither a positive int nor a list of
            lists of tensors, or names a tensor twice.
    """
    if num_groups != 0:
        warnings.warn("DistributedOptimizer: num_groups is deprecated; use "
                      "groups (an int, or a list of lists of parameters)",
                      DeprecationWarning, stacklevel=3)
        if groups is None:
            groups = num_groups
    if groups is None:
        return None
    if isinstance(groups, list):
        seen = set()
        for group in groups:
            if isinstance(group, torch.Tensor) or \
                    not isinstance(group, (list, tuple)):
                raise ValueError("groups must be a list of lists of "
                                 "torch.Tensor; found an element of type "
                                 f"{type(group).__name__}")
            for p in group:
                if not isinstance(p, torch.Tensor):
                    raise ValueError("groups must consist of torch.Tensor; "
                                     f"found a {type(p).__name__}")
                if id(p) in seen:
                    raise ValueError("a parameter can appear only once in "
                                     f"groups; {tuple(p.shape)} is repeated")
                seen.add(id(p))
        return groups
    if isinstance(groups, bool) or not isinstance(groups, int) or groups <= 0:
        raise ValueError("groups should be a positive integer or a list of "
                         f"lists of torch.Tensor, got {groups!r}")
    return groups


def split_evenly(items: Sequence[Any], parts: int) -> List[List[Any]]:
    """``items`` cut into ``parts`` contiguous runs; the first
    ``len(items) % parts`` runs hold one item more. Empty runs are dropped
    (more parts than items)."""
    base, extra = divmod(len(items), parts)
    runs, start = [], 0
    for i in range(parts):
        end = start + base + (1 if i < extra else 0)
        if end > start:
            runs.append(list(items[start:end]))
        start = end
    return runs


def form_groups(params: Sequence[torch.Tensor],
                groups: Optional[Any]) -> List[Group]:
    """The groups of ``params`` (already in the agreed order) for a
    resolved ``groups`` argument."""
    if groups is None:
        return [(p,) for p in params]
    if isinstance(groups, int):
        return [tuple(run) for run in split_evenly(params, groups)]
    owned = {id(p) for p in params}
    formed, grouped = [], set()
    for group in groups:
        kept = tuple(p for p in group if id(p) in owned)
        if kept:
            formed.append(kept)
            grouped.update(id(p) for p in kept)
    formed += [(p,) for p in params if id(p) not in grouped]
    return formed
