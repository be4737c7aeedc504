"""Retention sweep history in Redis: the counterpart of :mod:`sqlstore.sqlite.retention_runs`.

Same functions and row shape (``retention.history`` can dispatch to either);
records live in one list, newest first, trimmed to ``RETENTION_RUNS_KEPT``.
Plain values in, plain rows out: ``sqlstore`` never imports ``retention``.
"""

from __future__ import annotations

import json
from typing import Any

from sqlstore.jsonl import canonical_json
from sqlstore.redis.store import RedisStore

RETENTION_RUNS_KEPT = 10_000
"""Newest sweep records kept; older ones are dropped as new ones arrive."""


def record_run(
    store: RedisStore,
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
    """Append one sweep record (acknowledged by Redis at return) and return its id.

    Raises:
        StoreError: the record could not be written.
    """
    doc = {
        "started_at_ns": started_at_ns,
        "ended_at_ns": ended_at_ns,
        "policy_hash": policy_hash,
        "planned": planned,
        "deleted": deleted,
        "changed": changed,
        "failed": failed,
        "dry_run": int(dry_run),
        "detail": detail,
    }
    conn = store.conn
    with conn.guard():
        new_id = conn.retention_run(
            keys=[conn.keys.retention_run_seq, conn.keys.retention_runs],
            args=[canonical_json(doc), str(RETENTION_RUNS_KEPT)],
        )
    return int(new_id)


def list_runs(store: RedisStore, limit: int) -> list[dict[str, Any]]:
    """Return the newest ``limit`` sweep records, newest first, as column → value dicts.

    Raises:
        StoreError: the history could not be read.
    """
    conn = store.conn
    with conn.guard():
        raw = conn.client.lrange(conn.keys.retention_runs, 0, limit - 1)
    rows = []
    for item in raw:
        run_id, _, doc = item.partition(b" ")
        rows.append({"id": int(run_id), **json.loads(doc)})
    return rows
