"""``MemoryStore``: the in-process reference backend.

Same contracts as ``SQLiteStore`` (the conformance suites run against both) but
nothing survives the process: "durable at return" means "visible to every
reader of this object at return". Everything is kept encoded (snapshot and event
JSON), so saved and loaded objects are isolated exactly as in a real backend.
One lock guards all state (:class:`~sqlstore.memory.state.MemoryState`);
followers wait on a condition tied to it.
"""

from __future__ import annotations

from sqlstore.memory.audit import MemoryAudit, MemoryLeases
from sqlstore.memory.checkpoints import MemoryCheckpoints
from sqlstore.memory.events import MemoryEvents
from sqlstore.memory.sessions import MemorySessions
from sqlstore.memory.state import MemoryState
from sqlstore.ports import Closeable


class MemoryStore(Closeable):
    """An in-process store with the same contracts as ``SQLiteStore`` (nothing persists)."""

    def __init__(self) -> None:
        self._state = MemoryState()
        self.events = MemoryEvents(self._state)
        self.sessions = MemorySessions(self._state, self.events)
        self.audit = MemoryAudit(self._state)
        self.leases = MemoryLeases(self._state)
        self.checkpoints = MemoryCheckpoints(self._state, self._state.create_session)

    def close(self) -> None:
        """Mark the store closed and wake followers; idempotent."""
        with self._state.lock:
            self._state.closed = True
            self._state.notify()
