"""Ports: the contracts every backend implements (``typing.Protocol``).

A backend is one object with four parts — ``sessions``, ``events``, ``audit``,
``leases`` — plus ``close()`` and the context-manager protocol. The behaviour
behind each method is pinned by :mod:`sqlstore.conformance`.

Optional capabilities are further parts a backend may offer, each a protocol
here, implemented in the backend's own package and found on the store by
attribute, ``None`` (or absent) where the backend has none:

* ``store.imports`` — :class:`ImportTarget`, what ``sqlstore migrate`` and
  ``copy_store`` write through;
* ``store.history`` — :class:`SweepHistory`, the record of retention sweeps;
* ``store.housekeeping`` — :class:`Housekeeping`, what a large sweep needs from a
  backend whose writers share one file lock (pacing inputs, checkpoint, shrink,
  file size);
* ``store.scopes`` — :class:`ScopedState`, key/value state shared beyond one
  session (an app's, a user's); ``store.apply(..., scopes=)`` writes it with a
  session's unit.

Code that uses a capability asks for it (:func:`imports_of`, :func:`history_of`,
:func:`checkpoints_of`,
:func:`housekeeping_of`, :func:`scopes_of`) and never tests the store's type.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from types import TracebackType
from typing import Protocol, Self, runtime_checkable

from sqlstore.audit import ToolCallRecord
from sqlstore.changes import Applied, Unit
from sqlstore.checkpoint_documents import DocumentPage
from sqlstore.checkpoints import (
    ChannelBlob,
    CheckpointEntry,
    CheckpointKey,
    CheckpointPage,
    CheckpointPut,
    CheckpointQuery,
    CheckpointRecord,
    PendingWrite,
    PruneStrategy,
    ThreadSummary,
)
from sqlstore.events import DataPage, Event, LogRecord
from sqlstore.history import RunRecord
from sqlstore.imports import BatchEntry, ItemRow
from sqlstore.inventory import Lease, Listing, Orphan, Page, SessionMeta, StoredSession
from sqlstore.model import JSON, Principal
from sqlstore.session import Session


@runtime_checkable
class SessionStore(Protocol):
    """Snapshots keyed by session id, with creation, listing, paging and pruning."""

    def save(self, session: Session, *, expected_version: int | None = None) -> int:
        """Replace the snapshot (durable at return); return the new ``version``.

        With ``expected_version`` (``0`` = must not exist) the save is conditional:
        ``VersionConflict`` and nothing changed when the stored version differs.
        """

    def load_versioned(self, session_id: str) -> tuple[Session, int]:
        """Return the snapshot and its version from one consistent read."""

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

    def inventory(
        self,
        *,
        owner: Principal | None = None,
        enforce_owner: bool = False,
        match: Callable[[SessionMeta], bool] | None = None,
        limit: int = 0,
    ) -> Listing:
        """Return the rows ``match`` keeps, newest first, all read at one moment (one read)."""

    def delete_if_unchanged(self, expected: SessionMeta) -> bool:
        """Delete only if the row still equals ``expected`` and no lease is live; report it."""

    def orphans(self) -> builtins.list[Orphan]:
        """Return the ids with an event log or audit rows but no snapshot, newest write first."""

    def delete_orphan_if_unchanged(self, expected: Orphan) -> bool:
        """Delete an orphan's log and audit rows if it is unchanged and not leased; report it."""

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

    def append_events(self, session_id: str, events: Sequence[Event]) -> builtins.list[str]:
        """Append a batch all or none (one transaction); return the cursor after each."""

    def read_tail(self, session_id: str, limit: int) -> builtins.list[LogRecord]:
        """Return the last ``limit`` records in append order, by index seek."""

    def read_before(self, session_id: str, before: str, *, limit: int) -> builtins.list[LogRecord]:
        """Return at most ``limit`` records strictly before cursor ``before`` (``""`` = end)."""

    def read_data_before(self, session_id: str, before: str = "", *, limit: int) -> DataPage:
        """``read_before``'s records as (position, type, data): no cursors, no Event objects."""

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

    def put_many(self, items: Sequence[CheckpointPut]) -> builtins.list[BaseException | None]:
        """Store several checkpoints, each as :meth:`put` would; return each one's error or None.

        Every item is its own atomic unit (one failing leaves the others
        stored); a backend may make them durable with one shared commit.
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

    def documents(
        self, query: CheckpointQuery, *, after: CheckpointKey | None = None, limit: int = 100
    ) -> DocumentPage:
        """:meth:`page` with each checkpoint as one JSON text (see ``checkpoint_documents``)."""

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
        """Write snapshot, events and audit rows of one session as one atomic, durable unit.

        ``scopes`` (scope id → state delta) are merged into scoped state in the
        same unit; a backend without ``store.scopes`` refuses a non-empty one.
        """

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


class ImportTarget(Protocol):
    """The write side of a migration job (``store.imports``).

    "Exists": a session id exists when anything is stored under it — a
    snapshot, an event log or audit rows (an id with only events, or only
    audit rows, exists too).
    Every backend answers :meth:`exists` and decides ``exists`` in
    :meth:`write_batch` by this one rule, so an import never merges into, nor
    silently replaces, data it did not write.
    """

    def load_items(self, job_id: str) -> dict[str, ItemRow]:
        """Return the checkpoint rows of a job (empty for a new job)."""

    def exists(self, session_id: str) -> bool:
        """True when anything (snapshot, event log, audit rows) is stored under the id."""

    def start_job(self, job_id: str, source: str, fmt: str, now_ns: int) -> None:
        """Record the job as running (kept as is when it already exists).

        Called before the job's first :meth:`write_batch`, and again by every
        resumed run of the job.
        """

    def write_batch(
        self, job_id: str, entries: builtins.list[BatchEntry], *, overwrite: bool, now_ns: int
    ) -> builtins.list[str]:
        """Write every entry and its checkpoint row; return the final outcomes, in order.

        An entry with a payload whose session id exists (see :meth:`exists`) is
        written as ``exists`` (payload dropped) unless ``overwrite``; then the
        old snapshot, events and audit rows are replaced (and a replaced log
        gets a new generation). Each session is written together with its
        checkpoint row atomically: a crash leaves it whole or untouched.
        """

    def finish_job(self, job_id: str, state: str, now_ns: int) -> None:
        """Record the job's final state."""


class SweepHistory(Protocol):
    """The record of retention sweeps (``store.history``), kept as durably as the store."""

    def record(self, rec: RunRecord) -> RunRecord:
        """Store one record (durable like every write) and return it with its new id.

        Ids grow by one per record, starting at 1.
        """

    def list(self, limit: int) -> builtins.list[RunRecord]:
        """Return the newest ``limit`` records (``limit > 0``), newest first."""


class Housekeeping(Protocol):
    """What a large sweep needs from a backend whose writers share one file lock.

    A store with ``housekeeping`` is swept in paced batches (see
    :mod:`retention.sweep`); one without is swept one entry per call.
    """

    def file_size(self) -> int:
        """Return the bytes the store takes on disk (database file plus write-ahead log)."""

    def checkpoint(self) -> None:
        """Copy the write-ahead log into the file without waiting for or blocking anyone."""

    def shrink(
        self, *, step_pages: int | None = None, between_steps: Callable[[float], None] | None = None
    ) -> None:
        """Return free space to the file system.

        With ``step_pages``, that many pages per write transaction, calling
        ``between_steps`` with each step's seconds (but the last) so the
        caller can pause.
        """

    def delete_many_if_unchanged(
        self,
        expected: Sequence[SessionMeta],
        *,
        budget_s: float | None,
        timer: Callable[[], float],
    ) -> builtins.list[bool]:
        """Run ``delete_if_unchanged`` on a prefix of ``expected`` in one transaction.

        The transaction takes no new row once ``budget_s`` (read from
        ``timer``) has passed, after at least one; returns one outcome per row
        handled.
        """

    def unsynced(self) -> Housekeeping | None:
        """Open a second handle on the same data whose commits do not wait for the disk.

        None when this store's commits already do not wait (or the handle cannot
        be opened). The caller closes it, after :meth:`sync` when it wrote.
        """

    def sync(self) -> None:
        """Make every commit of any handle on this data durable (fsync of the log)."""

    def close(self) -> None:
        """Close a handle from :meth:`unsynced`; nothing for the store's own."""


@runtime_checkable
class ScopedState(Protocol):
    """JSON state by key per scope, apart from sessions (``store.scopes``; :mod:`sqlstore.scopes`).

    Scopes are never listed as sessions and outlive every session; deleting or
    pruning a session leaves them as they are.
    """

    def get(self, scope: str) -> dict[str, JSON]:
        """Return the scope's state (``{}`` when none was stored)."""

    def merge(self, scope: str, delta: Mapping[str, JSON]) -> None:
        """Merge ``delta`` into the scope's state (``dict.update``): atomic, durable."""

    def delete(self, scope: str) -> None:
        """Remove the scope's whole state; idempotent."""

    def list(self, prefix: str = "") -> builtins.list[str]:
        """Return the ids of the scopes with state whose id starts with ``prefix``, sorted."""


def scopes_of(store: object) -> ScopedState | None:
    """Return the store's scoped state, or None when its backend keeps none."""
    scopes: ScopedState | None = getattr(store, "scopes", None)
    return scopes


def imports_of(store: object) -> ImportTarget | None:
    """Return the store's import target, or None when its backend has none.

    A backend written before ``store.imports`` existed may offer an
    ``import_target()`` method instead; it is honoured too.
    """
    target: ImportTarget | None = getattr(store, "imports", None)
    if target is None:
        factory = getattr(store, "import_target", None)
        if callable(factory):
            target = factory()
    return target


def history_of(store: object) -> SweepHistory | None:
    """Return the store's sweep history, or None when its backend keeps none."""
    history: SweepHistory | None = getattr(store, "history", None)
    return history


def apply_each(store: Store, units: Sequence[Unit]) -> builtins.list[Applied | BaseException]:
    """Apply each unit as ``store.apply`` would; return its ``Applied`` or its error.

    A backend may offer ``apply_many(units)`` (``SQLiteStore``: the units share
    one transaction and one fsync, a failing unit is rolled back alone); else
    the units are applied one after the other. Either way each unit is atomic
    and has its own outcome; none is retried.
    """
    many: Callable[[Sequence[Unit]], builtins.list[Applied | BaseException]] | None
    many = getattr(store, "apply_many", None)
    if many is not None:
        found: builtins.list[Applied | BaseException] = many(units)
        return found
    outcomes: builtins.list[Applied | BaseException] = []
    for unit in units:
        try:
            outcomes.append(apply_unit(store, unit))
        except Exception as exc:
            outcomes.append(exc)
    return outcomes


def apply_unit(store: Store, unit: Unit) -> Applied:
    """Return ``store.apply`` of one unit (its errors raised as ``apply`` raises them)."""
    return store.apply(
        unit.session_id,
        snapshot=unit.snapshot,
        events=unit.events,
        audit=unit.audit,
        expected_version=unit.expected_version,
    )


def reads_in_process(store: object) -> bool:
    """True when the store reads in this process, with no network round trip.

    A store says so with a class attribute ``in_process = True`` (``SQLiteStore``:
    a local file in WAL mode, whose readers never wait for its writer;
    ``MemoryStore``). Async adapters may then run a small bounded read on the
    event loop instead of paying a thread hop that costs more than the read.
    """
    return getattr(store, "in_process", False) is True


def checkpoints_of(store: object) -> CheckpointStore | None:
    """Return the store's graph-checkpoint port (``store.checkpoints``), or None."""
    port: CheckpointStore | None = getattr(store, "checkpoints", None)
    return port


def housekeeping_of(store: object) -> Housekeeping | None:
    """Return the store's housekeeping, or None when its backend needs none."""
    housekeeping: Housekeeping | None = getattr(store, "housekeeping", None)
    return housekeeping
