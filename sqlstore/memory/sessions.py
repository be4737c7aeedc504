"""Snapshots and inventory of a ``MemoryStore``."""

from __future__ import annotations

import builtins
from collections.abc import Iterator

from sqlstore import clock, snapshot
from sqlstore.changes import prepare_save
from sqlstore.errors import MetadataCursorRestart, SessionAlreadyExists, SessionNotFound
from sqlstore.fold import load_or_fold
from sqlstore.inventory import Page, SessionMeta, StoredSession, rows_match
from sqlstore.memory.events import MemoryEvents
from sqlstore.memory.state import MemoryState
from sqlstore.memory.units import apply_changes
from sqlstore.model import Principal, validate_session_id
from sqlstore.pager import PagerPosition, decode_pager_cursor, encode_pager_cursor, scope_key
from sqlstore.ports import owner_matches
from sqlstore.session import Session


class MemorySessions:
    """Snapshots and inventory of a ``MemoryStore``."""

    def __init__(self, state: MemoryState, events: MemoryEvents) -> None:
        self._s = state
        self._events = events

    def _put(self, session: Session, *, must_be_new: bool) -> None:
        blob = snapshot.encode(session)
        now_ns = clock.now_ns()
        with self._s.lock:
            self._s.check_open()
            old = self._s.sessions.get(session.id)
            if must_be_new and old is not None:
                raise SessionAlreadyExists(session.id)
            self._s.put(session, blob, now_ns)

    def save(self, session: Session, *, expected_version: int | None = None) -> int:
        """Replace the snapshot; return the new version (conditional with ``expected_version``).

        Raises:
            VersionConflict: the stored version differs, or the session is missing.
        """
        return apply_changes(self._s, prepare_save(session, expected_version)).version

    def load_versioned(self, session_id: str) -> tuple[Session, int]:
        """Return the snapshot and its version, read under one lock."""
        validate_session_id(session_id)
        with self._s.lock:
            self._s.check_open()
            stored = self._s.sessions.get(session_id)
        if stored is None:
            raise SessionNotFound(session_id)
        return snapshot.decode(stored.blob), stored.meta.version

    def create(self, session: Session) -> None:
        """Store the snapshot only if none exists; else ``SessionAlreadyExists``."""
        self._put(session, must_be_new=True)

    def load(self, session_id: str) -> Session:
        """Return an independent copy of the snapshot."""
        validate_session_id(session_id)
        with self._s.lock:
            self._s.check_open()
            stored = self._s.sessions.get(session_id)
        if stored is None:
            raise SessionNotFound(session_id)
        return snapshot.decode(stored.blob)

    def load_or_fold(self, session_id: str, seed: object) -> Session:
        """Return the snapshot, or fold the event log with ``seed`` when there is none."""
        return load_or_fold(self, self._events, session_id, seed)

    def list(self) -> builtins.list[StoredSession]:
        """Return every stored session with its modification time."""
        with self._s.lock:
            self._s.check_open()
            return [StoredSession(k, v.meta.modified_at) for k, v in self._s.sessions.items()]

    def meta(self, session_id: str) -> SessionMeta:
        """Return the inventory row of one session."""
        validate_session_id(session_id)
        with self._s.lock:
            self._s.check_open()
            stored = self._s.sessions.get(session_id)
        if stored is None:
            raise SessionNotFound(session_id)
        return stored.meta

    def iter_meta(self) -> Iterator[SessionMeta]:
        """Yield every inventory row, oldest first by (modified_at, id)."""
        with self._s.lock:
            self._s.check_open()
            rows = [v.meta for v in self._s.sessions.values()]
        rows.sort(key=lambda m: (m.modified_at, m.id.encode("utf-8")))
        return iter(rows)

    def page(
        self,
        limit: int,
        cursor: str | None = None,
        *,
        owner: Principal | None = None,
        enforce_owner: bool = False,
    ) -> Page:
        """Return one page of rows ordered modified_at DESC, id ASC."""
        if limit <= 0:
            raise ValueError("limit must be > 0")
        scope = scope_key(owner, enforce_owner)
        with self._s.lock:
            self._s.check_open()
            generation = self._s.inventory_generation
            rows = [
                v.meta
                for v in self._s.sessions.values()
                if not enforce_owner or owner_matches(v.meta.owner, owner)
            ]
        rows.sort(key=lambda m: (-clock.to_ns(m.modified_at), m.id.encode("utf-8")))
        total = len(rows)
        start = 0
        if cursor:
            pos = decode_pager_cursor(cursor, scope, generation)
            key = (-pos.modified_at_ns, pos.session_id.encode("utf-8"))
            anchor = [
                r
                for r in rows
                if r.id == pos.session_id and clock.to_ns(r.modified_at) == pos.modified_at_ns
            ]
            if not anchor:
                raise MetadataCursorRestart("the page cursor's row is gone or has moved")
            start = sum(
                1 for r in rows if (-clock.to_ns(r.modified_at), r.id.encode("utf-8")) <= key
            )
        chunk = rows[start : start + limit]
        next_cursor = None
        if start + limit < total and chunk:
            last = chunk[-1]
            next_cursor = encode_pager_cursor(
                PagerPosition(scope, generation, clock.to_ns(last.modified_at), last.id)
            )
        return Page(sessions=chunk, next_cursor=next_cursor, total=total)

    def delete(self, session_id: str) -> None:
        """Remove snapshot, events and audit rows; idempotent."""
        validate_session_id(session_id)
        with self._s.lock:
            self._s.check_open()
            self._drop(session_id)

    def _drop(self, session_id: str) -> None:
        self._s.forget(session_id)

    def delete_if_unchanged(self, expected: SessionMeta) -> bool:
        """Delete only if the row still matches ``expected`` and no lease is live; report it."""
        validate_session_id(expected.id)
        with self._s.lock:
            self._s.check_open()
            stored = self._s.sessions.get(expected.id)
            if stored is None or not rows_match(stored.meta, expected):
                return False
            lease = self._s.leases.get(expected.id)
            if lease is not None and lease[2] > clock.now_ns():
                return False
            self._drop(expected.id)
            return True
