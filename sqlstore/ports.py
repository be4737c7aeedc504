"""Ports: the contracts every backend implements (``typing.Protocol``).

A backend is one object with four parts — ``sessions``, ``events``, ``audit``,
``leases`` — plus ``close()`` and the context-manager protocol. The behaviour
behind each method is pinned by :mod:`sqlstore.conformance`.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime, timedelta
from types import TracebackType
from typing import Protocol, Self, runtime_checkable

from sqlstore.audit import ToolCallRecord
from sqlstore.checkpoints import (
    ChannelBlob,
    CheckpointEntry,
    CheckpointKey,
    CheckpointPage,
    CheckpointQuery,
    CheckpointRecord,
    PendingWrite,
    PruneStrategy,
    ThreadSummary,
)
from sqlstore.events import Event, LogRecord
from sqlstore.inventory import Lease, Page, SessionMeta, StoredSession
from sqlstore.model import Principal
from sqlstore.session import Session


@runtime_checkable
class SessionStore(Protocol):
    """Snapshots keyed by session id, with creation, listing, paging and pruning."""

    def save(self, session: Session) -> None:
        """Replace the snapshot (durable at return); bumps ``modified_at`` and ``version``."""

    def load(self, session_id: str) -> Session:
        """Return an independent copy of the snapshot; ``SessionNotFound`` when missing."""

    def create(self, session: Session) -> None:
        """Store the snapshot only if none exists (atomic); else ``SessionAlreadyExists``."""

    def list(self) -> builtins.list[StoredSession]:
        """Return every stored session with its modification time; no transcript loaded."""

    def delete(self, session_id: str) -> None:
        """Remove snapshot, events and audit rows in one step; idempotent."""

    def meta(self, session_id: str) -> SessionMeta:
        """Return the inventory row of one session; ``SessionNotFound`` when missing."""

    def page(
        self,
        limit: int,
        cursor: str | None = None,
        *,
        owner: Principal | None = None,
        enforce_owner: bool = False,
    ) -> Page:
        """Return one page of inventory rows, newest first, with keyset continuation."""

    def iter_meta(self) -> Iterator[SessionMeta]:
        """Stream every inventory row, oldest first by (modified_at, id), in bounded memory."""

    def delete_if_unchanged(self, expected: SessionMeta) -> bool:
        """Delete only if the row still equals ``expected`` and no lease is live; report it."""

    def load_or_fold(self, session_id: str, seed: object) -> Session:
        """Return the snapshot, or rebuild the session from its event log with ``seed``."""


@runtime_checkable
class EventLog(Protocol):
    """An append-only log of events per session, read by resumable cursors."""

    def append(self, session_id: str, event: Event) -> None:
        """Append durably; on error the outcome is unknown and the caller must not retry."""

    def read(self, session_id: str) -> Iterator[Event]:
        """Yield the events in append order, skipping gaps; unknown id → empty."""

    def append_event(self, session_id: str, event: Event) -> str:
        """Append durably and return the cursor just after the new record."""

    def append_gap(self, session_id: str, reason: str) -> str:
        """Append a gap marker durably and return the cursor just after it."""

    def read_after(
        self,
        session_id: str,
        after: str = "",
        *,
        limit: int = 0,
        follow: bool = False,
        stop: threading.Event | None = None,
    ) -> Iterator[LogRecord]:
        """Yield records strictly after ``after``; follow the tail when asked."""


@runtime_checkable
class AuditTrail(Protocol):
    """Tool-call audit records per session."""

    def record(self, rec: ToolCallRecord) -> None:
        """Store one record durably."""

    def list(self, session_id: str) -> builtins.list[ToolCallRecord]:
        """Return a session's records in record order."""

    def query(
        self,
        *,
        tool: str | None = None,
        since: datetime | None = None,
        errors_only: bool = False,
        limit: int | None = None,
    ) -> builtins.list[ToolCallRecord]:
        """Return records across sessions matching every given filter, oldest first."""


@runtime_checkable
class LeaseTable(Protocol):
    """Time-limited exclusive claims on session ids, with fencing tokens."""

    def acquire(self, session_id: str, owner: str, ttl: timedelta) -> Lease:
        """Take or renew the lease; ``LeaseHeld`` while another owner's lease is live."""

    def renew(self, lease: Lease, ttl: timedelta) -> Lease:
        """Extend a lease this owner still holds; ``LeaseHeld`` if it was lost."""

    def release(self, lease: Lease) -> None:
        """Give the lease up if this owner still holds it; idempotent."""

    def held(self) -> set[str]:
        """Return the ids with a live lease right now."""


@runtime_checkable
class CheckpointStore(Protocol):
    """Graph checkpoints per thread (a thread is a session), reached as ``store.checkpoints``.

    Every write is one atomic, durable unit and moves the session's
    ``modified_at`` (retention and leases apply as to any session). Deleting
    the session (``sessions.delete``, retention) removes all of its checkpoint
    data in the same transaction. See :mod:`sqlstore.checkpoints`.
    """

    def put(
        self,
        record: CheckpointRecord,
        blobs: Sequence[ChannelBlob],
        *,
        session: Session | None = None,
    ) -> None:
        """Store a checkpoint and the blobs of its new channel versions (one transaction).

        ``session`` is saved as the thread's snapshot when the thread has no
        session yet. A checkpoint with the same (thread, ns, id) is replaced.
        """

    def put_writes(
        self,
        thread_id: str,
        ns: str,
        checkpoint_id: str,
        writes: Sequence[PendingWrite],
        *,
        replace: bool = False,
    ) -> None:
        """Store pending writes; an existing (task_id, idx) is kept unless ``replace``."""

    def get(
        self, thread_id: str, ns: str, checkpoint_id: str | None = None
    ) -> CheckpointEntry | None:
        """Return one checkpoint (the newest of the namespace without an id), or None."""

    def page(
        self, query: CheckpointQuery, *, after: CheckpointKey | None = None, limit: int = 100
    ) -> CheckpointPage:
        """Read up to ``limit`` rows after ``after`` in descending key order, in one short read."""

    def delete_for_runs(self, run_ids: Sequence[str]) -> int:
        """Delete the checkpoints (and their writes) whose metadata ``run_id`` is listed."""

    def copy_thread(self, source: str, target: str, *, session: Session | None = None) -> int:
        """Copy every checkpoint, blob and write of ``source`` to ``target``; return the count."""

    def prune(self, thread_ids: Sequence[str], *, strategy: PruneStrategy = "keep_latest") -> int:
        """Keep each namespace's newest checkpoint, or delete all; return the count removed."""

    def import_thread(self, thread_id: str, entries: Sequence[CheckpointEntry]) -> None:
        """Replace a thread's checkpoint data with ``entries`` (copying between stores).

        One atomic unit; the session is neither created nor touched, so a copied
        session keeps its ``modified_at``.
        """

    def summary(self, thread_id: str) -> ThreadSummary:
        """Return counts of a thread's checkpoint data."""

    def thread_ids(self) -> builtins.list[str]:
        """Return every thread id that has checkpoint data, sorted."""


@runtime_checkable
class Store(Protocol):
    """A whole backend."""

    @property
    def sessions(self) -> SessionStore: ...

    @property
    def events(self) -> EventLog: ...

    @property
    def audit(self) -> AuditTrail: ...

    @property
    def leases(self) -> LeaseTable: ...

    def close(self) -> None:
        """Release every resource; idempotent."""

    def __enter__(self) -> Self: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


class Closeable:
    """The context-manager half of every store: ``with store:`` closes it on exit."""

    def close(self) -> None:
        """Release every resource; idempotent."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def owner_matches(row_owner: Principal | None, owner: Principal | None) -> bool:
    """True when both are set and share (issuer, subject)."""
    return row_owner is not None and owner is not None and row_owner.identity == owner.identity


def iter_chunks(items: Iterable[str], size: int) -> Iterator[list[str]]:
    """Yield lists of at most ``size`` items."""
    chunk: list[str] = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
