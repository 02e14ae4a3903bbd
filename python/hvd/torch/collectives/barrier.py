"""``join`` and ``barrier``: the collectives that move no tensor and only wait
for the ranks of a process set.
"""

from typing import Any

import hvd as _hvd

GLOBAL = _hvd.global_process_set


def join(device: int = -1, process_set: Any = GLOBAL) -> int:
    """Says this rank has no more data to process, and waits for the rest.

    Until every rank of the set has joined, this rank takes part in the
    others' allreduces and reducescatters with zeros and in their
    allgathers with no rows, so ranks may run different numbers of steps.
    ``device`` exists for horovod's signature (CPU only for now).

    Returns:
        The global rank that joined last, the same on every rank.
    """
    return _hvd.join(device, process_set=process_set)


def barrier(process_set: Any = GLOBAL) -> None:
    """Returns once every rank of the set has called barrier()."""
    _hvd.barrier(process_set=process_set)
