"""Retention sweep history of a ``MemoryStore``: a list that lives and dies with the store."""

from __future__ import annotations

import builtins
from dataclasses import replace

from sqlstore.history import RunRecord
from sqlstore.memory.state import MemoryState


class MemoryHistory:
    """Sweep records of a ``MemoryStore`` (see :class:`sqlstore.ports.SweepHistory`)."""

    def __init__(self, state: MemoryState) -> None:
        self._s = state
        self._runs: builtins.list[RunRecord] = []

    def record(self, rec: RunRecord) -> RunRecord:
        """Keep one record and return it with its id (1, 2, ...)."""
        with self._s.lock:
            self._s.check_open()
            stored = replace(rec, id=len(self._runs) + 1)
            self._runs.append(stored)
            return stored

    def list(self, limit: int) -> builtins.list[RunRecord]:
        """Return the newest ``limit`` records, newest first."""
        if limit <= 0:
            raise ValueError("limit must be > 0")
        with self._s.lock:
            self._s.check_open()
            return builtins.list(reversed(self._runs))[:limit]
