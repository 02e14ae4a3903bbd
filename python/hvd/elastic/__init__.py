"""Elastic training: hvd.elastic.run and the states it commits and syncs."""

from .notifications import HostUpdateResult
from .run import run
from .state import ObjectState, State

__all__ = ["run", "State", "ObjectState", "HostUpdateResult"]
