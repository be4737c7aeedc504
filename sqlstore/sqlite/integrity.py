"""Checking a database file: header, application id, schema version, WAL mode, integrity.

:func:`check` opens the *file* with one plain connection (not a ``SQLiteStore``),
so it can describe a damaged, foreign or too-new file instead of refusing to
open it. It never creates a file and never changes the schema.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import apsw

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

INTEGRITY_MAX_ERRORS = 100
"""Most problems ``PRAGMA integrity_check`` reports before it stops."""

COUNTED_TABLES = (
    "sessions",
    "event_logs",
    "events",
    "tool_calls",
    "leases",
    "retention_runs",
    "checkpoints",
    "checkpoint_blobs",
    "checkpoint_writes",
)
"""Tables whose row counts ``check`` reports."""


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


def scalar(conn: apsw.Connection, sql: str) -> Any:
    """Return the first column of the first row of ``sql`` (None when no row)."""
    row = conn.execute(sql).fetchone()
    return None if row is None else row[0]


def check(path: str | os.PathLike[str], *, quick: bool = False) -> CheckReport:
    """Check a database file: header, application id, schema version, WAL mode, integrity.

    Runs ``PRAGMA integrity_check`` (or, with ``quick``, the faster
    ``PRAGMA quick_check``, which skips index-content checks; up to
    ``INTEGRITY_MAX_ERRORS`` messages) and
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
        conn = open_connection(
            text, durability="full", busy_timeout_ms=BUSY_TIMEOUT_MS, readonly=True
        )
    except StoreError as exc:
        return CheckReport(text, [str(exc)], file_bytes=file_bytes, wal_bytes=wal_bytes)
    try:
        values: dict[str, Any] = {}
        try:
            with translated(text):
                values = _inspect(conn, problems, quick=quick)
        except StoreError as exc:
            problems.append(str(exc))
    finally:
        conn.close()
    file_bytes, wal_bytes = file_sizes(text)
    return CheckReport(text, problems, file_bytes=file_bytes, wal_bytes=wal_bytes, **values)


def _inspect(conn: apsw.Connection, problems: list[str], *, quick: bool) -> dict[str, Any]:
    app_id = int(scalar(conn, "PRAGMA application_id"))
    version = int(scalar(conn, "PRAGMA user_version"))
    mode = str(scalar(conn, "PRAGMA journal_mode"))
    values: dict[str, Any] = {"application_id": app_id, "schema_version": version}
    values["journal_mode"] = mode
    if app_id != APPLICATION_ID:
        if app_id == 0 and version == 0 and not scalar(conn, "SELECT count(*) FROM sqlite_schema"):
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
    pragma = "quick_check" if quick else "integrity_check"
    integrity = [str(r[0]) for r in conn.execute(f"PRAGMA {pragma}({INTEGRITY_MAX_ERRORS})")]
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
            counts[table] = int(scalar(conn, f"SELECT count(*) FROM {table}"))
        else:
            problems.append(f"table {table} is missing")
    values["counts"] = counts
    return values
