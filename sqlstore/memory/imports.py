"""The import target of ``MemoryStore`` (same contract as SQLite, nothing persists).

A batch is applied under the store's lock, so readers see all of it or none of
it. The session keeps the source's ``modified_at`` and log generation (a
replaced log never keeps its old generation), exactly as in the other backends.
"""

from __future__ import annotations

import builtins
from dataclasses import replace

from sqlstore import clock
from sqlstore.cursor import new_generation
from sqlstore.imports import (
    OUTCOME_IMPORTED,
    SKIP_ALREADY_IMPORTED,
    SKIP_CHANGED,
    SKIP_EXISTS,
    BatchEntry,
    ItemRow,
    SessionImport,
)
from sqlstore.memory.audit import MemoryAudit
from sqlstore.memory.events import MemoryEvents
from sqlstore.memory.sessions import MemorySessions
from sqlstore.memory.state import Log, MemoryState


class MemoryImports:
    """Writes import batches and checkpoint rows into a ``MemoryStore``."""

    def __init__(
        self,
        state: MemoryState,
        sessions: MemorySessions,
        events: MemoryEvents,
        audit: MemoryAudit,
    ) -> None:
        self._state = state
        self._sessions = sessions
        self._events = events
        self._audit = audit
        self._jobs: dict[str, dict[str, ItemRow]] = {}

    def load_items(self, job_id: str) -> dict[str, ItemRow]:
        """Return the checkpoint rows of a job."""
        with self._state.lock:
            self._state.check_open()
            return dict(self._jobs.get(job_id, {}))

    def exists(self, session_id: str) -> bool:
        """True when the id has a snapshot, an event log or audit rows."""
        with self._state.lock:
            self._state.check_open()
            return self._state.taken(session_id)

    def start_job(self, job_id: str, source: str, fmt: str, now_ns: int) -> None:
        """Create the job's row set if it is new."""
        with self._state.lock:
            self._state.check_open()
            self._jobs.setdefault(job_id, {})

    def write_batch(
        self, job_id: str, entries: builtins.list[BatchEntry], *, overwrite: bool, now_ns: int
    ) -> builtins.list[str]:
        """Apply a batch under the store lock; see :class:`sqlstore.ports.ImportTarget`."""
        outcomes: list[str] = []
        with self._state.lock:
            self._state.check_open()
            rows = self._jobs.setdefault(job_id, {})
            for entry in entries:
                row = entry.row
                if entry.payload is not None:
                    sid = entry.payload.session.id
                    prev = rows.get(row.item)
                    if (
                        not overwrite
                        and prev is not None
                        and prev.outcome == OUTCOME_IMPORTED
                        and prev.session_id == sid
                    ):  # another run of this job imported it: keep its row and session
                        same = prev.fingerprint == row.fingerprint
                        outcomes.append(SKIP_ALREADY_IMPORTED if same else SKIP_CHANGED)
                        continue
                    if not overwrite and self._state.taken(sid):
                        row = replace(row, outcome=SKIP_EXISTS, detail="session id already exists")
                    else:
                        self._write(entry.payload)
                        row = replace(row, outcome=OUTCOME_IMPORTED)
                rows[row.item] = row
                outcomes.append(row.outcome)
        return outcomes

    def _write(self, payload: SessionImport) -> None:
        state = self._state
        sid = payload.session.id
        old = state.logs.get(sid)
        self._sessions.delete(sid)
        generation = payload.generation or new_generation()
        if old is not None and old.generation == generation:
            generation = new_generation()  # a replaced log never keeps its generation
        if payload.log:
            state.logs[sid] = Log(generation)
        for entry in payload.log:
            if entry.event is None:
                self._events.append_gap(sid, entry.gap_reason)
            else:
                self._events.append_event(sid, entry.event)
        for record in payload.audit:
            self._audit.record(record)
        self._sessions.save(payload.session)
        stored = state.sessions[sid]
        stored.meta = replace(stored.meta, modified_at=clock.from_ns(payload.modified_at_ns))

    def finish_job(self, job_id: str, state: str, now_ns: int) -> None:
        """Nothing to record in memory beyond the rows."""
