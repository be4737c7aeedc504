"""The ``retention_runs`` table: one row per retention sweep (used by :mod:`retention.history`).

Plain values in, plain rows out: ``sqlstore`` never imports ``retention``.
"""

from __future__ import annotations

from typing import Any

import apsw

from sqlstore.sqlite.store import SQLiteStore

_COLUMNS = (
    "id",
    "started_at_ns",
    "ended_at_ns",
    "policy_hash",
    "planned",
    "deleted",
    "changed",
    "failed",
    "dry_run",
    "detail",
)


def record_run(
    store: SQLiteStore,
    *,
    started_at_ns: int,
    ended_at_ns: int,
    policy_hash: str,
    planned: int,
    deleted: int,
    changed: int,
    failed: int,
    dry_run: bool,
    detail: str,
) -> int:
    """Insert one sweep record (durable at return) and return its id.

    Raises:
        StoreError: the row could not be written.
    """

    def insert(conn: apsw.Connection) -> int:
        conn.execute(
            "INSERT INTO retention_runs (started_at_ns, ended_at_ns, policy_hash, planned,"
            " deleted, changed, failed, dry_run, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                started_at_ns,
                ended_at_ns,
                policy_hash,
                planned,
                deleted,
                changed,
                failed,
                int(dry_run),
                detail,
            ),
        )
        return int(conn.last_insert_rowid())

    return store.db.write(insert)


def list_runs(store: SQLiteStore, limit: int) -> list[dict[str, Any]]:
    """Return the newest ``limit`` sweep records, newest first, as column → value dicts.

    Raises:
        StoreError: the table could not be read.
    """

    def select(conn: apsw.Connection) -> list[dict[str, Any]]:
        rows = conn.execute(
            f"SELECT {', '.join(_COLUMNS)} FROM retention_runs ORDER BY id DESC LIMIT ?",
            (limit,),
        ).fetchall()
        return [dict(zip(_COLUMNS, row, strict=True)) for row in rows]

    return store.db.read(select)
