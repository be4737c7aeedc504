"""Retention sweep history of a ``SQLiteStore``: the ``retention_runs`` table.

Written through the store's own (durable) handle: the history row of a sweep
also makes the sweep's unsynced deletions durable (see :mod:`retention.sweep`).
"""

from __future__ import annotations

import builtins
from dataclasses import replace
from typing import Any

import apsw

from sqlstore import clock
from sqlstore.history import RunRecord
from sqlstore.sqlite.database import Database

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


class SQLiteHistory:
    """Sweep records in ``retention_runs`` (see :class:`sqlstore.ports.SweepHistory`)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def record(self, rec: RunRecord) -> RunRecord:
        """Insert one sweep record (durable at return) and return it with its id.

        Raises:
            StoreError: the row could not be written.
        """

        def insert(conn: apsw.Connection) -> int:
            conn.execute(
                "INSERT INTO retention_runs (started_at_ns, ended_at_ns, policy_hash, planned,"
                " deleted, changed, failed, dry_run, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    clock.to_ns(rec.started_at),
                    clock.to_ns(rec.ended_at),
                    rec.policy_hash,
                    rec.planned,
                    rec.deleted,
                    rec.changed,
                    rec.failed,
                    int(rec.dry_run),
                    rec.detail,
                ),
            )
            return int(conn.last_insert_rowid())

        return replace(rec, id=self._db.write(insert))

    def list(self, limit: int) -> builtins.list[RunRecord]:
        """Return the newest ``limit`` sweep records, newest first.

        Raises:
            StoreError: the table could not be read.
        """
        if limit <= 0:
            raise ValueError("limit must be > 0")

        def select(conn: apsw.Connection) -> builtins.list[tuple[Any, ...]]:
            return conn.execute(
                f"SELECT {', '.join(_COLUMNS)} FROM retention_runs ORDER BY id DESC LIMIT ?",
                (limit,),
            ).fetchall()

        return [_from_row(row) for row in self._db.read(select)]


def _from_row(row: tuple[Any, ...]) -> RunRecord:
    """The record of one ``_COLUMNS`` row."""
    run_id, started, ended, policy_hash, planned, deleted, changed, failed, dry_run, detail = row
    return RunRecord(
        started_at=clock.from_ns(int(started)),
        ended_at=clock.from_ns(int(ended)),
        policy_hash=str(policy_hash),
        planned=int(planned),
        deleted=int(deleted),
        changed=int(changed),
        failed=int(failed),
        dry_run=bool(dry_run),
        detail=str(detail),
        id=int(run_id),
    )
