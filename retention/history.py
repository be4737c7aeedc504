"""Retention history: one :class:`RunRecord` per sweep (the ``retention_runs`` table).

SQLiteStore keeps the records in its ``retention_runs`` table (through
:mod:`sqlstore.sqlite.retention_runs`), RedisStore in its own keys (through
:mod:`sqlstore.redis.retention_runs`). MemoryStore has no such table; its
records live in this module, keyed weakly by the store object, so they vanish
with the store — exactly as the rest of a MemoryStore does.

Dry runs are never recorded: a dry run never writes to the store.
"""

from __future__ import annotations

import json
import threading
import weakref
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from retention.sweep import Report
from sqlstore import clock
from sqlstore.ports import Store

DEFAULT_HISTORY_LIMIT = 50
"""How many runs `history` returns unless told otherwise."""


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One recorded sweep. ``id`` is 0 until the record is stored."""

    started_at: datetime
    ended_at: datetime
    policy_hash: str
    planned: int
    deleted: int
    changed: int
    failed: int
    dry_run: bool = False
    detail: str = ""
    id: int = 0

    def to_json(self) -> dict[str, Any]:
        """Return the record as JSON-compatible data."""
        return {
            "id": self.id,
            "started_at": clock.format_rfc3339(self.started_at),
            "ended_at": clock.format_rfc3339(self.ended_at),
            "policy_hash": self.policy_hash,
            "planned": self.planned,
            "deleted": self.deleted,
            "changed": self.changed,
            "failed": self.failed,
            "dry_run": self.dry_run,
            "detail": self.detail,
        }


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


class _MemoryHistory:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.runs: weakref.WeakKeyDictionary[object, list[RunRecord]] = weakref.WeakKeyDictionary()

    def record(self, store: object, rec: RunRecord) -> RunRecord:
        with self.lock:
            runs = self.runs.setdefault(store, [])
            stored = replace(rec, id=len(runs) + 1)
            runs.append(stored)
            return stored

    def list(self, store: object, limit: int) -> list[RunRecord]:
        with self.lock:
            runs = list(self.runs.get(store, []))
        return list(reversed(runs))[:limit]


_MEMORY = _MemoryHistory()


def _backend_module(store: object) -> Any:
    """Return the module that keeps ``store``'s history durably, or None (MemoryStore)."""
    from sqlstore.sqlite import SQLiteStore

    if isinstance(store, SQLiteStore):
        from sqlstore.sqlite import retention_runs

        return retention_runs
    if type(store).__name__ == "RedisStore":
        # Imported only for a RedisStore: `redis` is an optional dependency.
        from sqlstore.redis import RedisStore
        from sqlstore.redis import retention_runs as redis_runs

        if isinstance(store, RedisStore):
            return redis_runs
    return None


def record_run(store: Store, rec: RunRecord) -> RunRecord:
    """Store ``rec`` in the store's retention history and return it with its id.

    Raises:
        StoreError: the record could not be written.
    """
    module = _backend_module(store)
    if module is None:
        return _MEMORY.record(store, rec)
    new_id = module.record_run(
        store,
        started_at_ns=clock.to_ns(rec.started_at),
        ended_at_ns=clock.to_ns(rec.ended_at),
        policy_hash=rec.policy_hash,
        planned=rec.planned,
        deleted=rec.deleted,
        changed=rec.changed,
        failed=rec.failed,
        dry_run=rec.dry_run,
        detail=rec.detail,
    )
    return replace(rec, id=int(new_id))


def list_runs(store: Store, limit: int = DEFAULT_HISTORY_LIMIT) -> list[RunRecord]:
    """Return the newest ``limit`` recorded sweeps, newest first.

    Raises:
        StoreError: the history could not be read.
    """
    if limit <= 0:
        raise ValueError("limit must be > 0")
    module = _backend_module(store)
    if module is None:
        return _MEMORY.list(store, limit)
    return [
        RunRecord(
            started_at=clock.from_ns(row["started_at_ns"]),
            ended_at=clock.from_ns(row["ended_at_ns"]),
            policy_hash=row["policy_hash"],
            planned=row["planned"],
            deleted=row["deleted"],
            changed=row["changed"],
            failed=row["failed"],
            dry_run=bool(row["dry_run"]),
            detail=row["detail"],
            id=row["id"],
        )
        for row in module.list_runs(store, limit)
    ]
