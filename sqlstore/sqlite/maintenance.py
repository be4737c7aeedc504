"""Operator tasks on a SQLite store file: check, stats, vacuum and online backup.

* :func:`check` opens the *file* (not a ``SQLiteStore``), so it can describe a
  damaged, foreign or too-new file instead of refusing to open it. It never
  creates a file and never changes the schema.
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
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import apsw

from sqlstore import clock
from sqlstore.errors import StoreError
from sqlstore.sqlite.connection import (
    APPLICATION_ID,
    BUSY_TIMEOUT_MS,
    SCHEMA_VERSION,
    SQLITE_HEADER,
    open_connection,
    prepare_path,
)
from sqlstore.sqlite.translate import translated

if TYPE_CHECKING:
    from sqlstore.sqlite.store import SQLiteStore

INTEGRITY_MAX_ERRORS = 100
"""Most problems ``PRAGMA integrity_check`` reports before it stops."""

COUNTED_TABLES = ("sessions", "event_logs", "events", "tool_calls", "leases", "retention_runs")
"""Tables whose row counts ``check`` reports."""


class BackupTargetExists(StoreError):
    """The backup destination already exists; a backup never overwrites a file."""

    default_hint = "Choose a new destination path, or remove the old file first."


def file_sizes(path: str) -> tuple[int, int]:
    """Return the sizes in bytes of the database file and of its ``-wal`` file (0 if absent)."""

    def size(p: str) -> int:
        try:
            return os.stat(p).st_size
        except FileNotFoundError:
            return 0

    return size(path), size(path + "-wal")


@dataclass(frozen=True, slots=True)
class CheckReport:
    """The outcome of :func:`check`; ``ok`` is False when ``problems`` is not empty."""

    path: str
    problems: list[str]
    schema_version: int | None = None
    application_id: int | None = None
    journal_mode: str = ""
    integrity: list[str] = field(default_factory=list)
    file_bytes: int = 0
    wal_bytes: int = 0
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when nothing is wrong with the file."""
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "ok": self.ok,
            "problems": list(self.problems),
            "schema_version": self.schema_version,
            "expected_schema_version": SCHEMA_VERSION,
            "application_id": self.application_id,
            "journal_mode": self.journal_mode,
            "integrity": list(self.integrity),
            "file_bytes": self.file_bytes,
            "wal_bytes": self.wal_bytes,
            "counts": dict(self.counts),
        }


def _scalar(conn: apsw.Connection, sql: str) -> Any:
    row = conn.execute(sql).fetchone()
    return None if row is None else row[0]


def check(path: str | os.PathLike[str]) -> CheckReport:
    """Check a database file: header, application id, schema version, WAL mode, integrity.

    Runs ``PRAGMA integrity_check`` (up to ``INTEGRITY_MAX_ERRORS`` messages) and
    ``PRAGMA foreign_key_check``, and counts the rows of the main tables. Every
    finding goes into ``problems``; a file that cannot be read at all is one problem.

    Raises:
        StoreMissing, UnsafePath: there is no file to check (nothing is created).
    """
    text = prepare_path(path, create=False)
    file_bytes, wal_bytes = file_sizes(text)
    with open(text, "rb") as handle:
        head = handle.read(len(SQLITE_HEADER))
    if head != SQLITE_HEADER:
        what = "an empty file" if not head else "not a SQLite database (bad file header)"
        return CheckReport(text, [f"{text} is {what}"], file_bytes=file_bytes, wal_bytes=wal_bytes)
    problems: list[str] = []
    try:
        conn = open_connection(text, durability="full", busy_timeout_ms=BUSY_TIMEOUT_MS)
    except StoreError as exc:
        return CheckReport(text, [str(exc)], file_bytes=file_bytes, wal_bytes=wal_bytes)
    try:
        values: dict[str, Any] = {}
        try:
            with translated(text):
                values = _inspect(conn, problems)
        except StoreError as exc:
            problems.append(str(exc))
    finally:
        conn.close()
    file_bytes, wal_bytes = file_sizes(text)
    return CheckReport(text, problems, file_bytes=file_bytes, wal_bytes=wal_bytes, **values)


def _inspect(conn: apsw.Connection, problems: list[str]) -> dict[str, Any]:
    app_id = int(_scalar(conn, "PRAGMA application_id"))
    version = int(_scalar(conn, "PRAGMA user_version"))
    mode = str(_scalar(conn, "PRAGMA journal_mode"))
    values: dict[str, Any] = {"application_id": app_id, "schema_version": version}
    values["journal_mode"] = mode
    if app_id != APPLICATION_ID:
        if app_id == 0 and version == 0 and not _scalar(conn, "SELECT count(*) FROM sqlite_schema"):
            problems.append("the file is an empty SQLite database (run `sqlstore init`)")
        else:
            problems.append(f"not a sqlstore database (application_id {app_id})")
        return values
    if version > SCHEMA_VERSION:
        problems.append(
            f"schema version {version} is newer than this sqlstore reads ({SCHEMA_VERSION})"
        )
        return values
    if mode != "wal":
        problems.append(f"journal_mode is {mode!r}, expected 'wal'")
    integrity = [str(r[0]) for r in conn.execute(f"PRAGMA integrity_check({INTEGRITY_MAX_ERRORS})")]
    values["integrity"] = integrity
    if integrity != ["ok"]:
        problems.extend(f"integrity: {line}" for line in integrity)
    for row in conn.execute("PRAGMA foreign_key_check"):
        problems.append(f"foreign key: table {row[0]} rowid {row[1]} -> {row[2]}")
    existing = {
        str(r[0]) for r in conn.execute("SELECT name FROM sqlite_schema WHERE type='table'")
    }
    counts: dict[str, int] = {}
    for table in COUNTED_TABLES:
        if table in existing:
            counts[table] = int(_scalar(conn, f"SELECT count(*) FROM {table}"))
        else:
            problems.append(f"table {table} is missing")
    values["counts"] = counts
    return values


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
            "events": int(_scalar(conn, "SELECT count(*) FROM events")),
            "event_logs": int(_scalar(conn, "SELECT count(*) FROM event_logs")),
            "audit_rows": int(_scalar(conn, "SELECT count(*) FROM tool_calls")),
            "leases": int(_scalar(conn, "SELECT count(*) FROM leases WHERE owner IS NOT NULL")),
            "free_pages": int(_scalar(conn, "PRAGMA freelist_count")),
            "page_size": int(_scalar(conn, "PRAGMA page_size")),
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


def vacuum(store: SQLiteStore, *, incremental: bool = False) -> VacuumReport:
    """Shrink the file: checkpoint the WAL, then ``VACUUM`` (or only ``incremental_vacuum``).

    A full ``VACUUM`` rewrites the whole file and holds the write lock while it
    runs (other writers wait up to their busy timeout); ``incremental`` only
    returns free pages to the file system (the file uses ``auto_vacuum=INCREMENTAL``)
    and is quick.

    Raises:
        StoreBusy: another process held the write lock for longer than the busy timeout.
    """
    started = time.monotonic()
    before, wal_before = file_sizes(store.path)
    with store.db.reader() as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        if incremental:
            conn.execute("PRAGMA incremental_vacuum").fetchall()
        else:
            conn.execute("VACUUM")
        # Move the rewritten pages into the main file and empty the WAL, so the
        # size the user sees is the size on disk.
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
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


def backup(store: SQLiteStore, dest: str | os.PathLike[str]) -> BackupReport:
    """Copy the store to a new file with SQLite's online backup API, then check the copy.

    The copy is one consistent snapshot of the source (taken in a single step
    while writers carry on), in WAL mode, created with mode 0600. The caller
    should look at ``report.check.ok``.

    Raises:
        BackupTargetExists: ``dest`` already exists (it is never overwritten).
        UnsafePath: ``dest`` is a symlink or a directory.
    """
    target = os.fspath(dest)
    if os.path.lexists(target):
        if os.path.isdir(target) or os.path.islink(target):
            prepare_path(target, create=False)  # raises UnsafePath with a clear message
        raise BackupTargetExists(f"backup destination {target} already exists")
    started = time.monotonic()
    target = prepare_path(target, create=True)
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
    except BaseException:
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(target + suffix)
        raise
    seconds = time.monotonic() - started
    report = check(target)
    return BackupReport(
        source=store.path,
        dest=target,
        pages=pages,
        bytes=file_sizes(target)[0],
        seconds=seconds,
        check=report,
    )
