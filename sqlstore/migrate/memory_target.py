"""The import target of ``MemoryStore`` (same contract as SQLite, nothing persists).

A batch is applied under the store's lock, so readers see all of it or none of
it. ``MemoryStore`` has no public way to set ``modified_at`` or a log's
generation, so this module sets them on the store's state directly, once the
batch's writes are done; it is the only place outside ``sqlstore.memory`` that
does so.
"""

from __future__ import annotations

import weakref
from dataclasses import replace

from sqlstore import clock
from sqlstore.cursor import new_generation
from sqlstore.memory.state import Log
from sqlstore.memory.store import MemoryStore
from sqlstore.migrate.items import SessionImport
from sqlstore.migrate.report import OUTCOME_IMPORTED, SKIP_EXISTS
from sqlstore.migrate.target import BatchEntry, ItemRow

_JOBS: weakref.WeakKeyDictionary[MemoryStore, dict[str, dict[str, ItemRow]]] = (
    weakref.WeakKeyDictionary()
)


class MemoryImports:
    """Writes import batches into a ``MemoryStore``."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store
        self._state = store._state
        self._jobs = _JOBS.setdefault(store, {})

    def load_items(self, job_id: str) -> dict[str, ItemRow]:
        """Return the checkpoint rows of a job."""
        with self._state.lock:
            return dict(self._jobs.get(job_id, {}))

    def exists(self, session_id: str) -> bool:
        """True when the id has a snapshot, an event log or audit rows."""
        with self._state.lock:
            state = self._state
            return any(session_id in part for part in (state.sessions, state.logs, state.audit))

    def start_job(self, job_id: str, source: str, fmt: str, now_ns: int) -> None:
        """Create the job's row set if it is new."""
        with self._state.lock:
            self._jobs.setdefault(job_id, {})

    def write_batch(
        self, job_id: str, entries: list[BatchEntry], *, overwrite: bool, now_ns: int
    ) -> list[str]:
        """Apply a batch under the store lock; see :class:`ImportTarget`."""
        outcomes: list[str] = []
        with self._state.lock:
            self._state.check_open()
            rows = self._jobs.setdefault(job_id, {})
            for entry in entries:
                row = entry.row
                if entry.payload is not None:
                    sid = entry.payload.session.id
                    if not overwrite and self.exists(sid):
                        row = replace(row, outcome=SKIP_EXISTS, detail="session id already exists")
                    else:
                        self._write(entry.payload)
                        row = replace(row, outcome=OUTCOME_IMPORTED)
                rows[row.item] = row
                outcomes.append(row.outcome)
        return outcomes

    def _write(self, payload: SessionImport) -> None:
        store, state = self._store, self._state
        sid = payload.session.id
        old = state.logs.get(sid)
        store.sessions.delete(sid)
        generation = payload.generation or new_generation()
        if old is not None and old.generation == generation:
            generation = new_generation()  # a replaced log never keeps its generation
        if payload.log:
            state.logs[sid] = Log(generation)
        for entry in payload.log:
            if entry.event is None:
                store.events.append_gap(sid, entry.gap_reason)
            else:
                store.events.append_event(sid, entry.event)
        for record in payload.audit:
            store.audit.record(record)
        store.sessions.save(payload.session)
        stored = state.sessions[sid]
        stored.meta = replace(stored.meta, modified_at=clock.from_ns(payload.modified_at_ns))

    def finish_job(self, job_id: str, state: str, now_ns: int) -> None:
        """Nothing to record in memory beyond the rows."""
