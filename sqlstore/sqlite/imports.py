"""The SQLite side of ``sqlstore migrate``: one batch per ``BEGIN IMMEDIATE`` transaction.

Each batch writes, for every imported session, its snapshot (with the source's
``modified_at``, not the import time), its event log (under the source's
generation when it has one), its audit rows, and its ``migration_items``
checkpoint row — all through one :meth:`Database.write` call, so a crash or a
``kill -9`` leaves either the whole batch or none of it, and the call returns
only after the commit (durable with ``durability="full"``). Row SQL is shared
with the rest of the backend through :mod:`sqlstore.sqlite.rows`; a log is
written whole (:func:`rows.insert_log`, one ``executemany``) rather than record
by record, and the batch's checkpoint rows go in with one ``executemany``.
"""

from __future__ import annotations

import apsw

from sqlstore import clock
from sqlstore.cursor import new_generation
from sqlstore.imports import (
    OUTCOME_IMPORTED,
    SKIP_ALREADY_IMPORTED,
    SKIP_CHANGED,
    SKIP_EXISTS,
    BatchEntry,
    EncodedSession,
    Fingerprint,
    ItemRow,
    SessionImport,
)
from sqlstore.sqlite import rows
from sqlstore.sqlite.database import Database


class SQLiteImports:
    """Writes import batches and checkpoint rows into a ``SQLiteStore``."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def load_items(self, job_id: str) -> dict[str, ItemRow]:
        """Return the checkpoint rows of a job."""
        with self._db.reader() as conn:
            found = conn.execute(
                "SELECT item, size, mtime_ns, sha256, outcome, session_id, detail "
                "FROM migration_items WHERE job_id = ?",
                (job_id,),
            ).fetchall()
        return {
            str(item): ItemRow(
                str(item),
                Fingerprint(int(size), int(mtime_ns), str(sha)),  # type: ignore[arg-type]
                str(outcome),
                None if sid is None else str(sid),
                str(detail),
            )
            for item, size, mtime_ns, sha, outcome, sid, detail in found
        }

    def exists(self, session_id: str) -> bool:
        """True when the id has a snapshot, an event log or audit rows."""
        with self._db.reader() as conn:
            return _taken(conn, session_id)

    def start_job(self, job_id: str, source: str, fmt: str, now_ns: int) -> None:
        """Insert the job row as ``running`` (an existing job is marked running again)."""

        def op(conn: apsw.Connection) -> None:
            conn.execute(
                "INSERT INTO migrations (job_id, source, format, started_at_ns, updated_at_ns, "
                "state) VALUES (?, ?, ?, ?, ?, 'running') ON CONFLICT (job_id) DO UPDATE SET "
                "updated_at_ns = excluded.updated_at_ns, state = 'running'",
                (job_id, source, fmt, now_ns, now_ns),
            )

        self._db.write(op)

    def write_batch(
        self, job_id: str, entries: list[BatchEntry], *, overwrite: bool, now_ns: int
    ) -> list[str]:
        """Write a batch in one transaction; see :class:`sqlstore.ports.ImportTarget`."""
        encoded = [None if e.payload is None else e.payload.encode() for e in entries]

        def op(conn: apsw.Connection) -> list[str]:
            outcomes: list[str] = []
            checkpoints: list[tuple[object, ...]] = []
            for entry, bodies in zip(entries, encoded, strict=True):
                row = entry.row
                if entry.payload is not None and bodies is not None:
                    sid = entry.payload.session.id
                    done = _imported_by_job(conn, job_id, row, overwrite)
                    if done is not None:
                        outcomes.append(done)  # another run of this job got here first
                        continue  # its checkpoint row stays as it is
                    if not overwrite and _taken(conn, sid):
                        row = ItemRow(
                            row.item, row.fingerprint, SKIP_EXISTS, sid, "session id already exists"
                        )
                    else:
                        _write_session(conn, entry.payload, bodies)
                        row = ItemRow(row.item, row.fingerprint, OUTCOME_IMPORTED, sid, row.detail)
                checkpoints.append(_item_params(job_id, row, now_ns))
                outcomes.append(row.outcome)
            conn.executemany(_PUT_ITEM_SQL, checkpoints)
            conn.execute(
                "UPDATE migrations SET updated_at_ns = ? WHERE job_id = ?", (now_ns, job_id)
            )
            return outcomes

        return self._db.write(op)

    def finish_job(self, job_id: str, state: str, now_ns: int) -> None:
        """Record the job's final state."""

        def op(conn: apsw.Connection) -> None:
            conn.execute(
                "UPDATE migrations SET state = ?, updated_at_ns = ? WHERE job_id = ?",
                (state, now_ns, job_id),
            )

        self._db.write(op)


def _imported_by_job(
    conn: apsw.Connection, job_id: str, row: ItemRow, overwrite: bool
) -> str | None:
    """The outcome when another run of the same job already imported this item, else None.

    Read inside the batch's write transaction, so two overlapping runs of one job
    end exactly like one: the later writer sees the earlier one's ``imported``
    row and leaves it (and the session, even if deleted since) alone. With
    ``overwrite`` the item is written again (the ImportTarget contract).
    """
    if overwrite:
        return None
    found = conn.execute(
        "SELECT size, mtime_ns, sha256, outcome, session_id FROM migration_items "
        "WHERE job_id = ? AND item = ?",
        (job_id, row.item),
    ).fetchone()
    if found is None or found[3] != OUTCOME_IMPORTED or found[4] != row.session_id:
        return None
    size, mtime_ns, sha = found[0], found[1], found[2]
    if Fingerprint(int(size), int(mtime_ns), str(sha)) == row.fingerprint:
        return SKIP_ALREADY_IMPORTED
    return SKIP_CHANGED


_TAKEN_SQL = (
    "SELECT EXISTS (SELECT 1 FROM sessions WHERE id = ?1) "
    "OR EXISTS (SELECT 1 FROM event_logs WHERE session_id = ?1) "
    "OR EXISTS (SELECT 1 FROM tool_calls WHERE session_id = ?1)"
)


def _taken(conn: apsw.Connection, session_id: str) -> bool:
    """True when anything is stored under the id (snapshot, event log or audit rows)."""
    row = conn.execute(_TAKEN_SQL, (session_id,)).fetchone()
    return bool(row is not None and row[0])


def _write_session(conn: apsw.Connection, payload: SessionImport, bodies: EncodedSession) -> None:
    """Replace whatever is stored under the id by the session's log, audit rows and snapshot."""
    session = payload.session
    mtime_ns = payload.modified_at_ns
    old = conn.execute(
        "SELECT generation FROM event_logs WHERE session_id = ?", (session.id,)
    ).fetchone()
    rows.delete_session_rows(conn, session.id)
    generation = payload.generation or new_generation()
    if old is not None and old[0] == generation:
        generation = new_generation()  # a replaced log never keeps its generation
    rows.insert_log(conn, session.id, generation, bodies.records, mtime_ns)
    if payload.audit:
        rows.insert_audits(
            conn,
            [
                (record, mtime_ns if record.at is None else clock.to_ns(record.at))
                for record in payload.audit
            ],
        )
    rows.put_snapshot(conn, session, bodies.snapshot, mtime_ns)


_PUT_ITEM_SQL = (
    "INSERT INTO migration_items (job_id, item, size, mtime_ns, sha256, outcome, session_id, "
    "detail, at_ns) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (job_id, item) DO UPDATE "
    "SET size = excluded.size, mtime_ns = excluded.mtime_ns, sha256 = excluded.sha256, "
    "outcome = excluded.outcome, session_id = excluded.session_id, "
    "detail = excluded.detail, at_ns = excluded.at_ns"
)


def _item_params(job_id: str, row: ItemRow, now_ns: int) -> tuple[object, ...]:
    """The parameters of :data:`_PUT_ITEM_SQL` for one checkpoint row."""
    fp = row.fingerprint
    return (
        job_id,
        row.item,
        fp.size,
        fp.mtime_ns,
        fp.sha256,
        row.outcome,
        row.session_id,
        row.detail,
        now_ns,
    )
