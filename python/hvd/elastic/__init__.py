"""Elastic training: hvd.elastic.run and the states it commits and syncs."""

from .run import run
from .state import HostUpdateResult, ObjectState, State

__all__ = ["run", "State", "ObjectState", "HostUpdateResult"]
