"""``MemoryStore``: the in-process reference backend.

Same contracts as ``SQLiteStore`` (the conformance suites run against both) but
nothing survives the process: "durable at return" means "visible to every
reader of this object at return". Everything is kept encoded (snapshot and event
JSON), so saved and loaded objects are isolated exactly as in a real backend.
One lock guards all state (:class:`~sqlstore.memory.state.MemoryState`);
followers wait on a condition tied to it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlstore.audit import ToolCallRecord
from sqlstore.changes import Applied, prepare
from sqlstore.events import Event
from sqlstore.memory.audit import MemoryAudit, MemoryLeases
from sqlstore.memory.checkpoints import MemoryCheckpoints
from sqlstore.memory.events import MemoryEvents
from sqlstore.memory.history import MemoryHistory
from sqlstore.memory.imports import MemoryImports
from sqlstore.memory.scopes import MemoryScopes
from sqlstore.memory.sessions import MemorySessions
from sqlstore.memory.state import MemoryState
from sqlstore.memory.units import apply_changes
from sqlstore.model import JSON
from sqlstore.ports import Closeable
from sqlstore.session import Session


class MemoryStore(Closeable):
    """An in-process store with the same contracts as ``SQLiteStore`` (nothing persists).

    Capabilities: ``imports`` (an import target), ``history`` (sweep
    records, gone with the store) and ``scopes`` (scoped state); ``housekeeping``
    is None (no file to share).
    """

    housekeeping: None = None
    in_process = True
    """Reads are in this process (``sqlstore.ports.reads_in_process``)."""

    def __init__(self) -> None:
        self._state = MemoryState()
        self.events = MemoryEvents(self._state)
        self.sessions = MemorySessions(self._state, self.events)
        self.audit = MemoryAudit(self._state)
        self.leases = MemoryLeases(self._state)
        self.checkpoints = MemoryCheckpoints(self._state, self._state.put)
        self.imports = MemoryImports(self._state, self.sessions, self.events, self.audit)
        self.history = MemoryHistory(self._state)
        self.scopes = MemoryScopes(self._state)

    def apply(
        self,
        session_id: str,
        *,
        snapshot: Session | None = None,
        events: Sequence[Event] = (),
        audit: Sequence[ToolCallRecord] = (),
        expected_version: int | None = None,
        scopes: Mapping[str, Mapping[str, JSON]] | None = None,
    ) -> Applied:
        """Write snapshot, events, audit rows and scope deltas as one unit (see SQLiteStore)."""
        changes = prepare(
            session_id,
            snapshot=snapshot,
            events=events,
            audit=audit,
            expected_version=expected_version,
            scopes=scopes,
        )
        return apply_changes(self._state, changes)

    def close(self) -> None:
        """Mark the store closed and wake followers; idempotent."""
        with self._state.lock:
            self._state.closed = True
            self._state.notify()
