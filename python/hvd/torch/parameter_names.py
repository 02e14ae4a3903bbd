"""The names of an optimizer's parameters, which name their collectives:
``named_parameters`` checked as Horovod checks it, or ``noname.<i>``."""

from typing import Any, Dict, Iterable, Optional, Tuple

import torch


def parameter_names(params: list,
                    named_parameters: Optional[Iterable[Tuple[str, Any]]]
                    ) -> Dict[torch.Tensor, str]:
    """p -> its name; checks named_parameters as horovod does.

    Raises:
        ValueError: an item is not a (name, parameter) tuple, a name repeats,
            or a parameter of the optimizer is not named.
    """
    if named_parameters is None:
        return {p: f"noname.{i}" for i, p in enumerate(params)}
    named = list(named_parameters)
    if any(not isinstance(item, tuple) or len(item) != 2 for item in named):
        raise ValueError("named_parameters should be a sequence of "
                         "(name, parameter) tuples, usually produced by "
                         "model.named_parameters()")
    names = [name for name, _ in named]
    dups = sorted({name for name in names if names.count(name) > 1})
    if dups:
        raise ValueError("parameter names in named_parameters must be "
                         f"unique; found duplicates: {', '.join(dups)}")
    named_ids = {id(p) for _, p in named}
    unnamed = [p for p in params if id(p) not in named_ids]
    if unnamed:
        raise ValueError(
            "named_parameters was given, but it does not name "
            f"{len(unnamed)} of the optimizer's parameters (shapes: "
            f"{', '.join(str(tuple(p.shape)) for p in unnamed)})")
    return {p: name for name, p in named}
