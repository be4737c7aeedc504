"""``MemoryStore``: the in-process reference backend.

Same contracts as ``SQLiteStore`` (the conformance suites run against both) but
nothing survives the process: "durable at return" means "visible to every
reader of this object at return". Everything is kept encoded (snapshot and event
JSON), so saved and loaded objects are isolated exactly as in a real backend.
One lock guards all state; followers wait on a condition tied to it.
"""

from __future__ import annotations

import builtins
import itertools
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from sqlstore import clock, snapshot
from sqlstore.audit import ToolCallRecord
from sqlstore.cursor import encode_cursor, new_generation
from sqlstore.errors import (
    LeaseHeld,
    MetadataCursorRestart,
    SessionAlreadyExists,
    SessionNotFound,
    StoreClosed,
)
from sqlstore.events import Event, LogRecord, check_record_size, encode_event
from sqlstore.fold import load_or_fold
from sqlstore.inventory import Lease, Page, SessionMeta, StoredSession
from sqlstore.memory_checkpoints import CheckpointTables, MemoryCheckpoints
from sqlstore.model import Principal, validate_session_id
from sqlstore.pager import PagerPosition, decode_pager_cursor, encode_pager_cursor, scope_key
from sqlstore.ports import Closeable, owner_matches
from sqlstore.session import Session
from sqlstore.tail import RawRecord, read_after, read_events


@dataclass(slots=True)
class _Stored:
    blob: bytes
    meta: SessionMeta


@dataclass(slots=True)
class _Log:
    generation: str
    records: list[RawRecord] = field(default_factory=list)


def meta_for(session: Session, blob: bytes, modified_at_ns: int, version: int) -> SessionMeta:
    """Return the inventory row describing ``session`` as stored in ``blob``."""
    return SessionMeta(
        id=session.id,
        modified_at=clock.from_ns(modified_at_ns),
        version=version,
        state=session.state,
        kind=session.kind,
        relationship=session.relationship,
        owner=session.owner,
        created_at=session.created_at,
        title=session.title,
        model_id=session.model_id,
        turns=session.counters.turns,
        estimated_bytes=len(blob),
    )


class _State:
    """All data of one MemoryStore, shared by its parts."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.change_count = 0
        self.closed = False
        self.sessions: dict[str, _Stored] = {}
        self.inventory_generation = 0
        self.logs: dict[str, _Log] = {}
        self.audit: dict[str, list[tuple[int, ToolCallRecord]]] = {}
        self.audit_order = itertools.count(1)
        self.leases: dict[str, tuple[str, int, int]] = {}
        self.lease_tokens: dict[str, int] = {}
        self.checkpoint_tables = CheckpointTables()

    def create_session(self, session: Session, blob: bytes, now_ns: int) -> None:
        """Store a new session's snapshot (caller holds the lock and checked it is absent)."""
        self.sessions[session.id] = _Stored(blob, meta_for(session, blob, now_ns, 1))
        self.inventory_generation += 1

    def check_open(self) -> None:
        if self.closed:
            raise StoreClosed("the store is closed")

    def touch(self, session_id: str, now_ns: int) -> None:
        """Record a write to the session: bump modified_at and version if it has a snapshot."""
        stored = self.sessions.get(session_id)
        if stored is not None:
            meta = stored.meta
            stored.meta = SessionMeta(
                meta.id,
                clock.from_ns(now_ns),
                meta.version + 1,
                meta.state,
                meta.kind,
                meta.relationship,
                meta.owner,
                meta.created_at,
                meta.title,
                meta.model_id,
                meta.turns,
                meta.estimated_bytes,
            )

    def notify(self) -> None:
        self.change_count += 1
        self.changed.notify_all()


class MemorySessions:
    """Snapshots and inventory of a ``MemoryStore``."""

    def __init__(self, state: _State, events: MemoryEvents) -> None:
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
            version = 1 if old is None else old.meta.version + 1
            self._s.sessions[session.id] = _Stored(blob, meta_for(session, blob, now_ns, version))
            self._s.inventory_generation += 1

    def save(self, session: Session) -> None:
        """Replace the snapshot; bumps modified_at and version."""
        self._put(session, must_be_new=False)

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
        existed = self._s.sessions.pop(session_id, None) is not None
        self._s.audit.pop(session_id, None)
        self._s.checkpoint_tables.drop(session_id)
        if self._s.logs.pop(session_id, None) is not None:
            self._s.notify()
        if existed:
            self._s.inventory_generation += 1

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


def rows_match(current: SessionMeta, expected: SessionMeta) -> bool:
    """True when the fields ``delete_if_unchanged`` compares are all equal."""
    return (
        current.id == expected.id
        and current.modified_at == expected.modified_at
        and current.version == expected.version
        and current.state == expected.state
        and current.kind == expected.kind
        and current.relationship == expected.relationship
        and current.owner == expected.owner
    )


class _MemorySource:
    def __init__(self, state: _State) -> None:
        self._s = state

    def head(self, session_id: str) -> tuple[str | None, int]:
        with self._s.lock:
            self._s.check_open()
            log = self._s.logs.get(session_id)
            return (None, 0) if log is None else (log.generation, len(log.records))

    def fetch(self, session_id: str, after: int, limit: int) -> tuple[str | None, list[RawRecord]]:
        with self._s.lock:
            self._s.check_open()
            log = self._s.logs.get(session_id)
            if log is None:
                return None, []
            return log.generation, log.records[after : after + limit]

    def change_token(self) -> object:
        return self._s.change_count

    def wait(self, token: object, stop: threading.Event | None, timeout_s: float) -> None:
        deadline = clock_monotonic() + timeout_s
        with self._s.lock:
            while self._s.change_count == token and not self._s.closed:
                if stop is not None and stop.is_set():
                    return
                left = deadline - clock_monotonic()
                if left <= 0:
                    return
                self._s.changed.wait(min(left, 0.05))

    def close(self) -> None:
        return None


def clock_monotonic() -> float:
    """Monotonic seconds for wait deadlines (not wall time, so freezegun cannot stall waits)."""
    return time.monotonic()


class MemoryEvents:
    """Event logs of a ``MemoryStore``."""

    def __init__(self, state: _State) -> None:
        self._s = state

    def _append(self, session_id: str, is_gap: bool, body: bytes | str) -> str:
        validate_session_id(session_id)
        now_ns = clock.now_ns()
        with self._s.lock:
            self._s.check_open()
            log = self._s.logs.get(session_id)
            if log is None:
                log = self._s.logs[session_id] = _Log(new_generation())
            pos = len(log.records) + 1
            log.records.append(RawRecord(pos, is_gap, body))
            self._s.touch(session_id, now_ns)
            self._s.notify()
            return encode_cursor(session_id, log.generation, pos)

    def append(self, session_id: str, event: Event) -> None:
        """Append an event."""
        self._append(session_id, False, encode_event(event))

    def append_event(self, session_id: str, event: Event) -> str:
        """Append an event and return the cursor after it."""
        return self._append(session_id, False, encode_event(event))

    def append_gap(self, session_id: str, reason: str) -> str:
        """Append a gap marker and return the cursor after it."""
        if not isinstance(reason, str):
            raise TypeError("gap reason must be str")
        check_record_size(reason.encode("utf-8"), "gap reason")
        return self._append(session_id, True, reason)

    def read(self, session_id: str) -> Iterator[Event]:
        """Yield the events in append order, skipping gaps."""
        return read_events(_MemorySource(self._s), session_id)

    def read_after(
        self,
        session_id: str,
        after: str = "",
        *,
        limit: int = 0,
        follow: bool = False,
        stop: threading.Event | None = None,
    ) -> Iterator[LogRecord]:
        """Yield records strictly after ``after`` (see :func:`sqlstore.tail.read_after`)."""
        return read_after(
            _MemorySource(self._s), session_id, after, limit=limit, follow=follow, stop=stop
        )

    def reset(self, session_id: str) -> None:
        """Drop a session's log so the next append starts a new generation."""
        with self._s.lock:
            if self._s.logs.pop(session_id, None) is not None:
                self._s.notify()


class MemoryAudit:
    """Tool-call audit records of a ``MemoryStore``."""

    def __init__(self, state: _State) -> None:
        self._s = state

    def record(self, rec: ToolCallRecord) -> None:
        """Store one record; ``at`` defaults to now."""
        validate_session_id(rec.session_id)
        now_ns = clock.now_ns()
        if rec.at is None:
            rec = _with_time(rec, clock.from_ns(now_ns))
        with self._s.lock:
            self._s.check_open()
            self._s.audit.setdefault(rec.session_id, []).append((next(self._s.audit_order), rec))
            self._s.touch(rec.session_id, now_ns)

    def list(self, session_id: str) -> builtins.list[ToolCallRecord]:
        """Return a session's records in record order."""
        validate_session_id(session_id)
        with self._s.lock:
            self._s.check_open()
            return [rec for _, rec in self._s.audit.get(session_id, [])]

    def query(
        self,
        *,
        tool: str | None = None,
        since: datetime | None = None,
        errors_only: bool = False,
        limit: int | None = None,
    ) -> builtins.list[ToolCallRecord]:
        """Return matching records across sessions in record order."""
        with self._s.lock:
            self._s.check_open()
            rows = sorted(
                (item for items in self._s.audit.values() for item in items), key=lambda x: x[0]
            )
        out = [
            rec
            for _, rec in rows
            if (tool is None or rec.tool == tool)
            and (since is None or (rec.at is not None and rec.at >= since))
            and (not errors_only or rec.is_error)
        ]
        return out if limit is None else out[:limit]


def _with_time(rec: ToolCallRecord, at: datetime) -> ToolCallRecord:
    return replace(rec, at=at)


class MemoryLeases:
    """Leases of a ``MemoryStore``."""

    def __init__(self, state: _State) -> None:
        self._s = state

    def acquire(self, session_id: str, owner: str, ttl: timedelta) -> Lease:
        """Take the lease, or renew it if ``owner`` holds it; ``LeaseHeld`` otherwise."""
        validate_session_id(session_id)
        now_ns = clock.now_ns()
        expires = now_ns + ttl_ns(ttl)
        with self._s.lock:
            self._s.check_open()
            current = self._s.leases.get(session_id)
            if current is not None and current[2] > now_ns and current[0] != owner:
                raise LeaseHeld(
                    f"session {session_id!r} is leased by {current[0]!r} until "
                    f"{clock.format_rfc3339(clock.from_ns(current[2]))}"
                )
            if current is not None and current[0] == owner and current[2] > now_ns:
                token = current[1]
            else:
                token = self._s.lease_tokens.get(session_id, 0) + 1
                self._s.lease_tokens[session_id] = token
            self._s.leases[session_id] = (owner, token, expires)
            return Lease(session_id, owner, token, clock.from_ns(expires))

    def renew(self, lease: Lease, ttl: timedelta) -> Lease:
        """Extend a live lease held by the same owner and token."""
        now_ns = clock.now_ns()
        with self._s.lock:
            self._s.check_open()
            current = self._s.leases.get(lease.id)
            if current is None or current[:2] != (lease.owner, lease.token) or current[2] <= now_ns:
                raise LeaseHeld(f"lease on {lease.id!r} was lost (expired or taken over)")
            expires = now_ns + ttl_ns(ttl)
            self._s.leases[lease.id] = (lease.owner, lease.token, expires)
            return Lease(lease.id, lease.owner, lease.token, clock.from_ns(expires))

    def release(self, lease: Lease) -> None:
        """Drop the lease if the same owner and token still hold it."""
        with self._s.lock:
            self._s.check_open()
            current = self._s.leases.get(lease.id)
            if current is not None and current[:2] == (lease.owner, lease.token):
                del self._s.leases[lease.id]

    def held(self) -> set[str]:
        """Return ids with a live lease."""
        now_ns = clock.now_ns()
        with self._s.lock:
            self._s.check_open()
            return {k for k, v in self._s.leases.items() if v[2] > now_ns}


def ttl_ns(ttl: timedelta) -> int:
    """Return a positive TTL in nanoseconds, or raise ``ValueError``."""
    ns = int(ttl.total_seconds() * 1_000_000_000)
    if ns <= 0:
        raise ValueError("lease ttl must be positive")
    return ns


class MemoryStore(Closeable):
    """An in-process store with the same contracts as ``SQLiteStore`` (nothing persists)."""

    def __init__(self) -> None:
        self._state = _State()
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
