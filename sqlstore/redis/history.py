"""Retention sweep history in Redis: the counterpart of :mod:`sqlstore.sqlite.history`.

Records live in one list, newest first, trimmed to ``RETENTION_RUNS_KEPT``;
each record is appended (with its id from a counter) by one Lua script.
"""

from __future__ import annotations

import builtins
import json
from dataclasses import replace

from sqlstore import clock
from sqlstore.history import RunRecord
from sqlstore.jsonl import canonical_json
from sqlstore.redis.connection import Connection

RETENTION_RUNS_KEPT = 10_000
"""Newest sweep records kept; older ones are dropped as new ones arrive."""


class RedisHistory:
    """Sweep records of a ``RedisStore`` (see :class:`sqlstore.ports.SweepHistory`)."""

    def __init__(self, conn: Connection) -> None:
        self._c = conn

    def record(self, rec: RunRecord) -> RunRecord:
        """Append one sweep record (acknowledged by Redis at return); return it with its id.

        Raises:
            StoreError: the record could not be written.
        """
        doc = {
            "started_at_ns": clock.to_ns(rec.started_at),
            "ended_at_ns": clock.to_ns(rec.ended_at),
            "policy_hash": rec.policy_hash,
            "planned": rec.planned,
            "deleted": rec.deleted,
            "changed": rec.changed,
            "failed": rec.failed,
            "dry_run": int(rec.dry_run),
            "detail": rec.detail,
        }
        conn = self._c
        with conn.guard():
            new_id = conn.retention_run(
                keys=[conn.keys.retention_run_seq, conn.keys.retention_runs],
                args=[canonical_json(doc), str(RETENTION_RUNS_KEPT)],
            )
        return replace(rec, id=int(new_id))

    def list(self, limit: int) -> builtins.list[RunRecord]:
        """Return the newest ``limit`` sweep records, newest first.

        Raises:
            StoreError: the history could not be read.
        """
        if limit <= 0:
            raise ValueError("limit must be > 0")
        conn = self._c
        with conn.guard():
            raw = conn.client.lrange(conn.keys.retention_runs, 0, limit - 1)
        records = []
        for item in raw:
            run_id, _, text = item.partition(b" ")
            doc = json.loads(text)
            records.append(
                RunRecord(
                    started_at=clock.from_ns(int(doc["started_at_ns"])),
                    ended_at=clock.from_ns(int(doc["ended_at_ns"])),
                    policy_hash=str(doc["policy_hash"]),
                    planned=int(doc["planned"]),
                    deleted=int(doc["deleted"]),
                    changed=int(doc["changed"]),
                    failed=int(doc["failed"]),
                    dry_run=bool(doc["dry_run"]),
                    detail=str(doc["detail"]),
                    id=int(run_id),
                )
            )
        return records
