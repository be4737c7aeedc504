"""Retention history: one :class:`RunRecord` per sweep, kept by the store's ``history``.

Each backend keeps the records in its own package (the port is
:class:`sqlstore.ports.SweepHistory`): SQLiteStore in its ``retention_runs``
table, RedisStore in its own keys, MemoryStore in memory (gone with the store,
like the rest of it). A backend without ``store.history`` keeps no history.
``RunRecord`` lives in :mod:`sqlstore.history` and is re-exported here.

Dry runs are never recorded: a dry run never writes to the store.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from sqlstore import clock
from sqlstore.history import RunRecord
from sqlstore.ports import Store, history_of

from .sweep import Report

__all__ = ["DEFAULT_HISTORY_LIMIT", "RunRecord", "list_runs", "record_run", "run_record"]

DEFAULT_HISTORY_LIMIT = 50
"""How many runs `history` returns unless told otherwise."""


def run_record(
    policy_hash: str,
    started_at: datetime,
    report: Report | None,
    *,
    error: str = "",
    planned: int = 0,
) -> RunRecord:
    """Build the record of a sweep from its report, or of a failed sweep from its error.

    ``changed`` counts every entry kept on purpose (written after planning, or
    leased since); ``detail`` is compact JSON with the split and the sizes.
    """
    ended_at = clock.now()
    if report is None:
        detail = json.dumps({"error": error}, separators=(",", ":"))
        return RunRecord(started_at, ended_at, policy_hash, planned, 0, 0, 1, detail=detail)
    info: dict[str, Any] = {
        "leased": report.leased,
        "bytes_before": report.bytes_before,
        "bytes_after": report.bytes_after,
        "interrupted": report.interrupted,
    }
    if report.errors:
        info["errors"] = list(report.errors[:5])
    return RunRecord(
        started_at,
        ended_at,
        policy_hash,
        report.planned,
        report.deleted,
        report.skipped,
        report.failed,
        detail=json.dumps(info, separators=(",", ":")),
    )


def record_run(store: Store, rec: RunRecord) -> RunRecord:
    """Store ``rec`` in the store's sweep history and return it with its id.

    A store whose backend keeps no history (``store.history`` absent or None)
    records nothing: ``rec`` comes back unchanged, with id 0.

    Raises:
        StoreError: the record could not be written.
    """
    history = history_of(store)
    if history is None:
        return rec
    return history.record(rec)


def list_runs(store: Store, limit: int = DEFAULT_HISTORY_LIMIT) -> list[RunRecord]:
    """Return the newest ``limit`` recorded sweeps, newest first (none without a history).

    Raises:
        StoreError: the history could not be read.
    """
    if limit <= 0:
        raise ValueError("limit must be > 0")
    history = history_of(store)
    if history is None:
        return []
    return history.list(limit)
