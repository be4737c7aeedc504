"""The Redis side of imports (``sqlstore migrate`` and :func:`copy_store`).

Implements :class:`sqlstore.ports.ImportTarget`. Each imported session
is written together with its checkpoint row by one Lua script, so a crash
leaves every session either fully imported (and checkpointed) or untouched; a
batch is a sequence of such scripts, not one transaction. The session keeps
the source's ``modified_at`` and log generation, so the source's event cursors
stay valid in Redis (positions are record counts in every backend).
"""

from __future__ import annotations

import json
from typing import Any

from sqlstore import clock
from sqlstore.cursor import new_generation
from sqlstore.imports import (
    OUTCOME_IMPORTED,
    SKIP_ALREADY_IMPORTED,
    SKIP_CHANGED,
    SKIP_EXISTS,
    BatchEntry,
    Fingerprint,
    ItemRow,
    SessionImport,
)
from sqlstore.jsonl import canonical_json
from sqlstore.redis import keys
from sqlstore.redis.connection import Connection

_SCRIPT_OUTCOMES = {1: OUTCOME_IMPORTED, 0: SKIP_EXISTS, 2: SKIP_ALREADY_IMPORTED, 3: SKIP_CHANGED}
"""What the IMPORT script's return value means (see ``scripts.IMPORT``)."""


def _row_json(row: ItemRow, now_ns: int) -> str:
    fp = row.fingerprint
    return canonical_json(
        {
            "size": fp.size,
            "mtime_ns": fp.mtime_ns,
            "sha256": fp.sha256,
            "outcome": row.outcome,
            "session_id": row.session_id,
            "detail": row.detail,
            "at_ns": now_ns,
        }
    )


def _row_from_json(item: str, text: bytes) -> ItemRow:
    doc = json.loads(text)
    sid = doc.get("session_id")
    return ItemRow(
        item,
        Fingerprint(int(doc["size"]), int(doc["mtime_ns"]), str(doc["sha256"])),
        str(doc["outcome"]),
        None if sid is None else str(sid),
        str(doc.get("detail", "")),
    )


class RedisImports:
    """Writes import batches and checkpoint rows into a ``RedisStore``."""

    def __init__(self, conn: Connection) -> None:
        self._c = conn

    def load_items(self, job_id: str) -> dict[str, ItemRow]:
        """Return the checkpoint rows of a job (empty for a new job)."""
        with self._c.guard():
            found = self._c.client.hgetall(self._c.keys.job_items(job_id))
        return {item.decode(): _row_from_json(item.decode(), text) for item, text in found.items()}

    def exists(self, session_id: str) -> bool:
        """True when the id has a snapshot, an event log or audit rows."""
        k = self._c.keys
        with self._c.guard():
            found = self._c.client.exists(
                k.session(session_id),
                k.events(session_id),
                k.generation(session_id),
                k.audit(session_id),
            )
        return int(found) > 0

    def start_job(self, job_id: str, source: str, fmt: str, now_ns: int) -> None:
        """Record the job as running (an existing job keeps its start time)."""
        with self._c.guard():
            old = self._c.client.hget(self._c.keys.jobs, job_id)
            started = now_ns if old is None else int(json.loads(old)["started_at_ns"])
            doc = {
                "source": source,
                "format": fmt,
                "state": "running",
                "started_at_ns": started,
                "updated_at_ns": now_ns,
            }
            self._c.client.hset(self._c.keys.jobs, job_id, canonical_json(doc))

    def write_batch(
        self, job_id: str, entries: list[BatchEntry], *, overwrite: bool, now_ns: int
    ) -> list[str]:
        """Write every entry with its checkpoint row (one atomic script per session)."""
        outcomes: list[str] = []
        items_key = self._c.keys.job_items(job_id)
        for entry in entries:
            row = entry.row
            if entry.payload is None:
                with self._c.guard():
                    self._c.client.hset(items_key, row.item, _row_json(row, now_ns))
                outcomes.append(row.outcome)
                continue
            sid = entry.payload.session.id
            imported = ItemRow(row.item, row.fingerprint, OUTCOME_IMPORTED, sid, row.detail)
            exists = ItemRow(
                row.item, row.fingerprint, SKIP_EXISTS, sid, "session id already exists"
            )
            done = self._write(
                entry.payload,
                items_key,
                row.item,
                _row_json(imported, now_ns),
                _row_json(exists, now_ns),
                overwrite,
            )
            outcomes.append(_SCRIPT_OUTCOMES[done])
        return outcomes

    def _write(
        self,
        payload: SessionImport,
        items_key: str,
        item: str,
        row_imported: str,
        row_exists: str,
        overwrite: bool,
    ) -> int:
        session = payload.session
        sid = session.id
        encoded = payload.encode()
        blob = encoded.snapshot
        mtime_ns = payload.modified_at_ns
        records: list[Any] = []
        for is_gap, _type, body in encoded.records:
            records += ["g" if is_gap else "e", body]
        audit = []
        for rec in payload.audit:
            at = rec.at if rec.at is not None else clock.from_ns(mtime_ns)
            audit.append(canonical_json(rec.to_json() | {"at": clock.format_rfc3339(at)}))
        k = self._c.keys
        with self._c.guard():
            done = self._c.import_session(
                keys=[
                    k.session(sid),
                    k.events(sid),
                    k.generation(sid),
                    k.audit(sid),
                    k.page_index,
                    k.age_index,
                    k.write_seq,
                    k.inventory_generation,
                    k.audit_ids,
                    k.audit_seq,
                    items_key,
                ],
                args=[
                    "1" if overwrite else "0",
                    item,
                    row_imported,
                    row_exists,
                    self._c.prefix,
                    sid,
                    blob,
                    str(mtime_ns),
                    keys.meta_json(session, blob),
                    keys.session_compared(session),
                    keys.owner_scope(session),
                    keys.page_prefix(mtime_ns),
                    keys.age_prefix(mtime_ns),
                    keys.hex_id(sid),
                    payload.generation or new_generation(),
                    str(len(payload.log)),
                    str(len(audit)),
                    new_generation(),
                    *records,
                    *audit,
                ],
            )
        return int(done)

    def finish_job(self, job_id: str, state: str, now_ns: int) -> None:
        """Record the job's final state."""
        with self._c.guard():
            old = self._c.client.hget(self._c.keys.jobs, job_id)
            doc = {} if old is None else json.loads(old)
            doc.update({"state": state, "updated_at_ns": now_ns})
            self._c.client.hset(self._c.keys.jobs, job_id, canonical_json(doc))
