"""Operator tasks on a SQLite store file: check, stats, vacuum and online backup.

* :func:`check` (from :mod:`sqlstore.sqlite.integrity`, re-exported here) opens
  the *file*, not a ``SQLiteStore``, so it can describe a damaged, foreign or
  too-new file instead of refusing to open it.
* :func:`stats`, :func:`vacuum` and :func:`backup` work on an open
  :class:`~sqlstore.sqlite.store.SQLiteStore` and borrow its connections.
* :func:`backup` uses SQLite's online backup API (``apsw.Connection.backup``)
  in one step, which copies one consistent snapshot while writers keep going
  (in WAL mode a reader never blocks a writer), then runs :func:`check` on the
  copy.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import apsw

from sqlstore import clock
from sqlstore.errors import StoreCorrupt, StoreError, StoreFull, StoreIOError
from sqlstore.sqlite.connection import BusyWait, prepare_path
from sqlstore.sqlite.integrity import CheckReport, check, file_sizes, scalar
from sqlstore.sqlite.translate import translated

if TYPE_CHECKING:
    from sqlstore.sqlite.store import SQLiteStore

__all__ = [
    "BackupReport",
    "BackupTargetExists",
    "CheckReport",
    "Stats",
    "VacuumReport",
    "backup",
    "check",
    "checkpoint",
    "file_sizes",
    "stats",
    "vacuum",
]


class BackupTargetExists(StoreError):
    """The backup destination already exists; a backup never overwrites a file."""

    default_hint = "Choose a new destination path, or remove the old file first."


VACUUM_STEP_PAGES = 2_000
"""Free pages handed back to the file system per write transaction (8 MiB of 4 KiB pages)."""


@dataclass(frozen=True, slots=True)
class Stats:
    """Sizes and counts of one store (see :func:`stats`)."""

    path: str
    sessions: int
    by_kind: dict[str, int]
    by_state: dict[str, int]
    events: int
    event_logs: int
    audit_rows: int
    leases: int
    threads: int
    checkpoints: int
    checkpoint_blobs: int
    checkpoint_writes: int
    estimated_bytes: int
    file_bytes: int
    wal_bytes: int
    free_pages: int
    page_size: int
    oldest: datetime | None
    newest: datetime | None

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "sessions": self.sessions,
            "by_kind": dict(self.by_kind),
            "by_state": dict(self.by_state),
            "events": self.events,
            "event_logs": self.event_logs,
            "audit_rows": self.audit_rows,
            "leases": self.leases,
            "threads": self.threads,
            "checkpoints": self.checkpoints,
            "checkpoint_blobs": self.checkpoint_blobs,
            "checkpoint_writes": self.checkpoint_writes,
            "estimated_bytes": self.estimated_bytes,
            "file_bytes": self.file_bytes,
            "wal_bytes": self.wal_bytes,
            "free_pages": self.free_pages,
            "page_size": self.page_size,
            "oldest": None if self.oldest is None else clock.format_rfc3339(self.oldest),
            "newest": None if self.newest is None else clock.format_rfc3339(self.newest),
        }


def stats(store: SQLiteStore) -> Stats:
    """Count sessions by kind and state, events, audit rows; report file and WAL sizes.

    All counts come from one read transaction, so they agree with each other.
    """

    def read(conn: apsw.Connection) -> dict[str, Any]:
        by_kind = {
            str(k): int(n)
            for k, n in conn.execute(
                "SELECT kind, count(*) FROM sessions GROUP BY kind ORDER BY kind"
            )
        }
        by_state = {
            str(s): int(n)
            for s, n in conn.execute(
                "SELECT state, count(*) FROM sessions GROUP BY state ORDER BY state"
            )
        }
        row = conn.execute(
            "SELECT count(*), min(modified_at_ns), max(modified_at_ns), "
            "coalesce(sum(estimated_bytes), 0) FROM sessions"
        ).fetchone()
        assert row is not None
        return {
            "sessions": int(row[0]),
            "oldest": None if row[1] is None else clock.from_ns(int(row[1])),
            "newest": None if row[2] is None else clock.from_ns(int(row[2])),
            "estimated_bytes": int(row[3]),
            "by_kind": by_kind,
            "by_state": by_state,
            "events": int(scalar(conn, "SELECT count(*) FROM events")),
            "event_logs": int(scalar(conn, "SELECT count(*) FROM event_logs")),
            "audit_rows": int(scalar(conn, "SELECT count(*) FROM tool_calls")),
            "leases": int(scalar(conn, "SELECT count(*) FROM leases WHERE owner IS NOT NULL")),
            # Graph checkpoints (LangGraph threads, issue 17).
            "threads": int(scalar(conn, "SELECT count(DISTINCT session_id) FROM checkpoints")),
            "checkpoints": int(scalar(conn, "SELECT count(*) FROM checkpoints")),
            "checkpoint_blobs": int(scalar(conn, "SELECT count(*) FROM checkpoint_blobs")),
            "checkpoint_writes": int(scalar(conn, "SELECT count(*) FROM checkpoint_writes")),
            "free_pages": int(scalar(conn, "PRAGMA freelist_count")),
            "page_size": int(scalar(conn, "PRAGMA page_size")),
        }

    values = store.db.read(read)
    file_bytes, wal_bytes = file_sizes(store.path)
    return Stats(path=store.path, file_bytes=file_bytes, wal_bytes=wal_bytes, **values)


@dataclass(frozen=True, slots=True)
class VacuumReport:
    """File sizes before and after :func:`vacuum`."""

    path: str
    mode: str
    bytes_before: int
    bytes_after: int
    wal_bytes_before: int
    wal_bytes_after: int
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "mode": self.mode,
            "bytes_before": self.bytes_before,
            "bytes_after": self.bytes_after,
            "wal_bytes_before": self.wal_bytes_before,
            "wal_bytes_after": self.wal_bytes_after,
            "seconds": round(self.seconds, 3),
        }


def _vacuum_step(conn: apsw.Connection, pages: int = VACUUM_STEP_PAGES) -> int:
    conn.execute(f"PRAGMA incremental_vacuum({int(pages)})").fetchall()
    row = conn.execute("PRAGMA freelist_count").fetchone()
    return int(row[0]) if row else 0


def checkpoint(store: SQLiteStore) -> tuple[int, int]:
    """Run a passive WAL checkpoint; return (frames in the WAL, frames copied into the file).

    PASSIVE copies what it can without waiting for or blocking any reader or
    writer (https://sqlite.org/c3ref/wal_checkpoint_v2.html). Once every frame is
    copied, the next write transaction starts the WAL over from its beginning.
    """
    with store.db.reader() as conn:
        row = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    return (0, 0) if row is None else (int(row[1]), int(row[2]))


TRUNCATE_WAIT_S = 0.02
"""Longest a TRUNCATE checkpoint may wait (for the write lock, then for readers)."""


class _ShortWait:
    """A busy handler that gives up after ``TRUNCATE_WAIT_S`` (1 ms sleeps)."""

    __slots__ = ("_started",)

    def __init__(self) -> None:
        self._started = 0.0

    def __call__(self, prior_calls: int) -> bool:
        now = time.monotonic()
        if prior_calls == 0:
            self._started = now
        elif now - self._started >= TRUNCATE_WAIT_S:
            return False
        time.sleep(0.001)
        return True


def truncate_wal(conn: apsw.Connection, busy_timeout_ms: int) -> bool:
    """Empty the WAL with a TRUNCATE checkpoint that cannot make writers wait; True if done.

    A TRUNCATE (like RESTART and FULL) checkpoint takes the write lock and then
    waits, *holding it*, until every reader has reached the newest snapshot
    (https://sqlite.org/c3ref/wal_checkpoint_v2.html): with one reader keeping
    an old read transaction open (a long listing, a backup, a viewer) every
    writer of every process waited for the checkpoint's whole busy timeout and
    got ``StoreBusy``. So this checkpoint runs with a busy handler that gives up
    after ``TRUNCATE_WAIT_S`` (20 ms): writers wait at most that long, and when
    a reader is in the way the WAL is simply left for later — its frames are
    already in the file after the PASSIVE pass the callers run first, and the
    first write after the reader ends starts the WAL over from its beginning.
    ``conn``'s usual busy handler (``busy_timeout_ms``) is restored afterwards.
    """
    conn.set_busy_handler(_ShortWait())
    try:
        row = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    except apsw.BusyError:
        return False
    finally:
        conn.set_busy_handler(BusyWait(busy_timeout_ms))
    return row is not None and int(row[0]) == 0


def vacuum(
    store: SQLiteStore,
    *,
    incremental: bool = False,
    step_pages: int = VACUUM_STEP_PAGES,
    between_steps: Callable[[float], None] | None = None,
) -> VacuumReport:
    """Shrink the file: checkpoint the WAL, then ``VACUUM`` (or only ``incremental_vacuum``).

    A full ``VACUUM`` rewrites the whole file and holds the write lock while it
    runs (other writers wait up to their busy timeout); ``incremental`` only
    returns free pages to the file system (the file uses ``auto_vacuum=INCREMENTAL``),
    ``VACUUM_STEP_PAGES`` at a time, each step one short write transaction of the
    store's writer, so concurrent appends keep flowing between steps
    (``step_pages`` per step; ``between_steps``, when given, is called after each
    step but the last with the seconds it took, so a caller can pause). Pages that
    are only partly empty are not returned by ``incremental``: after deleting
    sessions spread over the whole file, a full ``VACUUM`` reclaims more. The
    closing checkpoint never makes writers wait for readers (:func:`truncate_wal`):
    while a reader holds an old snapshot, the WAL stays on disk until later.

    Raises:
        StoreBusy: another process held the write lock for longer than the busy timeout.
    """
    started = time.monotonic()
    before, wal_before = file_sizes(store.path)
    with store.db.reader() as conn:
        # PASSIVE copies what it can without blocking writers.
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        if not incremental:
            conn.execute("VACUUM")
    if incremental:
        while True:
            began = time.monotonic()
            left = store.db.write(lambda conn: _vacuum_step(conn, step_pages))
            if left <= 0:
                break
            if between_steps is not None:
                between_steps(time.monotonic() - began)
    with store.db.reader() as conn:
        # Move the rewritten pages into the main file and empty the WAL, so the
        # size the user sees is the size on disk. TRUNCATE holds the write lock
        # while it copies, so a PASSIVE pass (which blocks no one) copies first.
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        truncate_wal(conn, store.db.busy_timeout_ms)
    after, wal_after = file_sizes(store.path)
    return VacuumReport(
        path=store.path,
        mode="incremental" if incremental else "full",
        bytes_before=before,
        bytes_after=after,
        wal_bytes_before=wal_before,
        wal_bytes_after=wal_after,
        seconds=time.monotonic() - started,
    )


@dataclass(frozen=True, slots=True)
class BackupReport:
    """Where the copy went, how big it is, and the :func:`check` of the copy."""

    source: str
    dest: str
    pages: int
    bytes: int
    seconds: float
    check: CheckReport

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "dest": self.dest,
            "pages": self.pages,
            "bytes": self.bytes,
            "seconds": round(self.seconds, 3),
            "check": self.check.to_json(),
        }


def _remove_database(path: str) -> None:
    for suffix in ("", "-journal", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path + suffix)


def backup(store: SQLiteStore, dest: str | os.PathLike[str]) -> BackupReport:
    """Copy the store to a new file with SQLite's online backup API, then check the copy.

    The copy is one consistent snapshot of the source (taken in a single step
    while writers carry on), in WAL mode, created with mode 0600. A copy that
    fails its check is deleted rather than left looking like a good backup
    (SQLite's backup API copies pages verbatim, so a damaged source gives a
    damaged copy).

    Raises:
        BackupTargetExists: ``dest`` already exists (it is never overwritten).
        UnsafePath: ``dest`` is a symlink or a directory.
        StoreCorrupt: the copy failed its check (the source is damaged); no copy is kept.
    """
    target = os.fspath(dest)
    if os.path.lexists(target):
        if os.path.isdir(target) or os.path.islink(target):
            prepare_path(target, create=False)  # raises UnsafePath with a clear message
        raise BackupTargetExists(f"backup destination {target} already exists")
    started = time.monotonic()
    leftovers = {s for s in ("-wal", "-shm") if os.path.lexists(target + s)}
    if leftovers:
        raise BackupTargetExists(
            f"backup destination {target} has a leftover {target}{min(leftovers)} beside it"
        )
    try:
        target = prepare_path(target, create=True, exclusive=True)
    except FileExistsError:
        raise BackupTargetExists(f"backup destination {target} already exists") from None
    try:
        with translated(target):
            copy = apsw.Connection(target, flags=apsw.SQLITE_OPEN_READWRITE)
        try:
            with store.db.reader() as source, translated(target):
                with copy.backup("main", source, "main") as step:
                    step.step(-1)
                    pages = step.page_count
                copy.execute("PRAGMA journal_mode=WAL").fetchall()
                copy.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        finally:
            copy.close()
    except (StoreFull, StoreIOError) as exc:
        _remove_database(target)
        why = exc.message.removeprefix(f"{target}: ")
        raise type(exc)(
            f"backup of {store.path} to {target} failed: {why}; no partial copy was kept",
            hint=f"Free space on the file system of {os.path.dirname(target) or '.'}, or back "
            "up to another disk; the source is unchanged.",
        ) from exc
    except BaseException:
        _remove_database(target)
        raise
    seconds = time.monotonic() - started
    report = check(target)
    if not report.ok:
        _remove_database(target)
        raise StoreCorrupt(
            f"the backup of {store.path} failed its check, so it was not kept: "
            + "; ".join(report.problems[:3]),
            hint=f"The source is damaged: run `sqlstore --db {store.path} check`, and restore "
            "from an earlier backup (see docs/operations.md).",
        )
    return BackupReport(
        source=store.path,
        dest=target,
        pages=pages,
        bytes=file_sizes(target)[0],
        seconds=seconds,
        check=report,
    )
