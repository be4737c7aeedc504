"""The four parts of an ``AsyncStore``: the sync methods as coroutines, same names and errors.

Writes run through :meth:`Runner.write` (shielded from cancellation), reads
through :meth:`Runner.read`. Streams (``read``, ``read_after``, ``iter_meta``)
are :class:`~sqlstore.aio.records.AsyncRecords`: plain methods returning an
async iterator, whose argument errors (a bad cursor, a bad limit) are raised by
the first ``__anext__`` (or by ``await records.opened()``).
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timedelta

from sqlstore.aio.records import AsyncRecords
from sqlstore.aio.runner import Runner
from sqlstore.audit import ToolCallRecord
from sqlstore.events import DataPage, Event, LogRecord
from sqlstore.inventory import Lease, Listing, Orphan, Page, SessionMeta, StoredSession
from sqlstore.model import Principal
from sqlstore.ports import AuditTrail, EventLog, LeaseTable, SessionStore
from sqlstore.session import Session


class AsyncSessions:
    """``store.sessions`` as coroutines (see :class:`sqlstore.ports.SessionStore`)."""

    def __init__(self, sync: SessionStore, runner: Runner) -> None:
        self.sync = sync
        self._r = runner

    async def save(self, session: Session, *, expected_version: int | None = None) -> int:
        """Replace the snapshot; return the new version (shielded write)."""
        return await self._r.write(self.sync.save, session, expected_version=expected_version)

    async def create(self, session: Session) -> None:
        """Store the snapshot only if none exists (shielded write)."""
        await self._r.write(self.sync.create, session)

    async def delete(self, session_id: str) -> None:
        """Remove snapshot, events and audit rows (shielded write)."""
        await self._r.write(self.sync.delete, session_id)

    async def delete_if_unchanged(self, expected: SessionMeta) -> bool:
        """Delete only if the row still equals ``expected`` (shielded write)."""
        return await self._r.write(self.sync.delete_if_unchanged, expected)

    async def load(self, session_id: str) -> Session:
        """Return an independent copy of the snapshot."""
        return await self._r.read(self.sync.load, session_id)

    async def load_versioned(self, session_id: str) -> tuple[Session, int]:
        """Return the snapshot and its version from one consistent read."""
        return await self._r.read(self.sync.load_versioned, session_id)

    async def load_or_fold(self, session_id: str, seed: object) -> Session:
        """Return the snapshot, or rebuild the session from its log with ``seed``."""
        return await self._r.read(self.sync.load_or_fold, session_id, seed)

    async def list(self) -> builtins.list[StoredSession]:
        """Return every stored session with its modification time."""
        return await self._r.read(self.sync.list)

    async def meta(self, session_id: str) -> SessionMeta:
        """Return the inventory row of one session."""
        return await self._r.read(self.sync.meta, session_id)

    async def page(
        self,
        limit: int,
        cursor: str | None = None,
        *,
        owner: Principal | None = None,
        enforce_owner: bool = False,
    ) -> Page:
        """Return one page of inventory rows, newest first."""
        return await self._r.read(
            self.sync.page, limit, cursor, owner=owner, enforce_owner=enforce_owner
        )

    def iter_meta(self) -> AsyncRecords[SessionMeta]:
        """Stream every inventory row, oldest first (an async iterator)."""
        return self._r.stream(lambda _stop: self.sync.iter_meta(), None)

    async def inventory(
        self,
        *,
        owner: Principal | None = None,
        enforce_owner: bool = False,
        match: Callable[[SessionMeta], bool] | None = None,
        limit: int = 0,
    ) -> Listing:
        """Return the whole inventory newest first, read at one moment (``match`` runs there)."""
        return await self._r.read(
            self.sync.inventory, owner=owner, enforce_owner=enforce_owner, match=match, limit=limit
        )

    async def orphans(self) -> builtins.list[Orphan]:
        """Return the ids with events or audit rows but no snapshot, newest write first."""
        return await self._r.read(self.sync.orphans)

    async def delete_orphan_if_unchanged(self, expected: Orphan) -> bool:
        """Delete an orphan only if nothing wrote to the id since it was listed (shielded write)."""
        return await self._r.write(self.sync.delete_orphan_if_unchanged, expected)


class AsyncEvents:
    """``store.events`` as coroutines and async iterators (see :class:`sqlstore.ports.EventLog`)."""

    def __init__(self, sync: EventLog, runner: Runner) -> None:
        self.sync = sync
        self._r = runner

    async def append(self, session_id: str, event: Event) -> None:
        """Append one event (shielded write)."""
        await self._r.write(self.sync.append, session_id, event)

    async def append_event(self, session_id: str, event: Event) -> str:
        """Append one event; return the cursor after it (shielded write)."""
        return await self._r.write(self.sync.append_event, session_id, event)

    async def append_gap(self, session_id: str, reason: str) -> str:
        """Append a gap marker; return the cursor after it (shielded write)."""
        return await self._r.write(self.sync.append_gap, session_id, reason)

    async def append_events(self, session_id: str, events: Sequence[Event]) -> builtins.list[str]:
        """Append a batch all or none; return a cursor per event (shielded write)."""
        return await self._r.write(self.sync.append_events, session_id, events)

    async def read_tail(self, session_id: str, limit: int) -> builtins.list[LogRecord]:
        """Return the last ``limit`` records in append order."""
        return await self._r.read(self.sync.read_tail, session_id, limit)

    async def read_before(
        self, session_id: str, before: str, *, limit: int
    ) -> builtins.list[LogRecord]:
        """Return at most ``limit`` records strictly before cursor ``before``."""
        return await self._r.read(self.sync.read_before, session_id, before, limit=limit)

    async def read_data_before(self, session_id: str, before: str = "", *, limit: int) -> DataPage:
        """Return ``read_before``'s records as a lean ``DataPage``."""
        return await self._r.read(self.sync.read_data_before, session_id, before, limit=limit)

    def read(self, session_id: str) -> AsyncRecords[Event]:
        """Stream the events of a log in append order, gaps skipped (an async iterator)."""
        return self._r.stream(lambda _stop: self.sync.read(session_id), None)

    def read_after(
        self,
        session_id: str,
        after: str = "",
        *,
        limit: int = 0,
        follow: bool = False,
        stop: threading.Event | None = None,
    ) -> AsyncRecords[LogRecord]:
        """Stream records strictly after ``after``; with ``follow`` keep waiting for new ones.

        Cancelling the consuming task, ``await records.aclose()``, or setting
        ``stop`` ends a follow cleanly; ``aclose()`` returns once the reader
        thread has released its connection and exited.
        """

        def open_iter(stop_flag: threading.Event) -> Iterator[LogRecord]:
            return self.sync.read_after(
                session_id, after, limit=limit, follow=follow, stop=stop_flag
            )

        return self._r.stream(open_iter, stop)


class AsyncAudit:
    """``store.audit`` as coroutines (see :class:`sqlstore.ports.AuditTrail`)."""

    def __init__(self, sync: AuditTrail, runner: Runner) -> None:
        self.sync = sync
        self._r = runner

    async def record(self, rec: ToolCallRecord) -> None:
        """Store one record (shielded write)."""
        await self._r.write(self.sync.record, rec)

    async def list(self, session_id: str) -> builtins.list[ToolCallRecord]:
        """Return a session's records in record order."""
        return await self._r.read(self.sync.list, session_id)

    async def query(
        self,
        *,
        tool: str | None = None,
        since: datetime | None = None,
        errors_only: bool = False,
        limit: int | None = None,
    ) -> builtins.list[ToolCallRecord]:
        """Return records across sessions matching every given filter."""
        return await self._r.read(
            self.sync.query, tool=tool, since=since, errors_only=errors_only, limit=limit
        )


class AsyncLeases:
    """``store.leases`` as coroutines (see :class:`sqlstore.ports.LeaseTable`)."""

    def __init__(self, sync: LeaseTable, runner: Runner) -> None:
        self.sync = sync
        self._r = runner

    async def acquire(self, session_id: str, owner: str, ttl: timedelta) -> Lease:
        """Take or renew the lease (shielded write)."""
        return await self._r.write(self.sync.acquire, session_id, owner, ttl)

    async def renew(self, lease: Lease, ttl: timedelta) -> Lease:
        """Extend a lease this owner still holds (shielded write)."""
        return await self._r.write(self.sync.renew, lease, ttl)

    async def release(self, lease: Lease) -> None:
        """Give the lease up (shielded write)."""
        await self._r.write(self.sync.release, lease)

    async def held(self) -> set[str]:
        """Return the ids with a live lease right now."""
        return await self._r.read(self.sync.held)
