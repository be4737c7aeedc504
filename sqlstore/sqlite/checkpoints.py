"""Graph checkpoints in SQLite (``SQLiteStore.checkpoints``, see :mod:`sqlstore.checkpoints`).

Tables ``checkpoints``, ``checkpoint_blobs`` and ``checkpoint_writes`` (schema
version 3), keyed by the thread's session id. Every write is one transaction
through the group-committing writer (concurrent puts from threads share one
fsync) and moves the session's ``modified_at``. A listing page is one short
read transaction of three statements — the checkpoint rows, then the blobs and
the writes of all of them, selected by a bound JSON array of keys
(``json_each``) — so nothing is held open across a ``yield`` and listing
costs no query per checkpoint. Metadata filters are applied to the decoded
JSON in Python: no key is ever written into SQL text.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import apsw

from sqlstore import clock, snapshot
from sqlstore.checkpoint_documents import DocumentPage
from sqlstore.checkpoints import (
    CHECKPOINT_PAGE_ROWS,
    ChannelBlob,
    CheckpointEntry,
    CheckpointKey,
    CheckpointPage,
    CheckpointPut,
    CheckpointQuery,
    CheckpointRecord,
    InvalidCheckpoint,
    PendingWrite,
    PruneStrategy,
    ThreadSummary,
    check_names,
    check_page_limit,
    check_record,
    check_writes,
    metadata_matches,
    referenced_blobs,
    write_order,
)
from sqlstore.model import validate_session_id
from sqlstore.session import Session
from sqlstore.sqlite import checkpoint_listing as listing
from sqlstore.sqlite import rows
from sqlstore.sqlite.database import Database

_COLUMNS = "session_id, ns, checkpoint_id, parent_id, type, body, metadata, versions"

_BLOBS_OF_KEYS = (
    "SELECT b.session_id, b.ns, b.channel, b.version, b.type, b.data "
    "FROM json_each(?) AS k JOIN checkpoint_blobs AS b "
    "ON b.session_id = k.value ->> 0 AND b.ns = k.value ->> 1 "
    "AND b.channel = k.value ->> 2 AND b.version = k.value ->> 3"
)
_WRITES_OF_KEYS = (
    "SELECT w.session_id, w.ns, w.checkpoint_id, w.task_id, w.idx, w.channel, w.type, "
    "w.data, w.task_path FROM json_each(?) AS k JOIN checkpoint_writes AS w "
    "ON w.session_id = k.value ->> 0 AND w.ns = k.value ->> 1 "
    "AND w.checkpoint_id = k.value ->> 2"
)
_INSERT_CHECKPOINT = (
    f"INSERT OR REPLACE INTO checkpoints ({_COLUMNS}, run_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_BLOB = (
    "INSERT OR REPLACE INTO checkpoint_blobs (session_id, ns, channel, version, type, data) "
    "VALUES (?, ?, ?, ?, ?, ?)"
)
_VERSIONS = json.JSONEncoder(ensure_ascii=False)
"""Encodes a checkpoint's versions (one encoder, not one per ``json.dumps`` call)."""
_WRITE_COLUMNS = "session_id, ns, checkpoint_id, task_id, idx, channel, type, data, task_path"


def _record(row: tuple[Any, ...]) -> CheckpointRecord:
    sid, ns, cid, parent, type_, body, metadata, versions = row
    return CheckpointRecord(
        sid, ns, cid, parent, type_, bytes(body), bytes(metadata), json.loads(versions)
    )


def _entries(conn: apsw.Connection, records: list[CheckpointRecord]) -> list[CheckpointEntry]:
    """Attach blobs and writes to ``records`` with two statements (no query per checkpoint)."""
    if not records:
        return []
    blob_keys = list(
        {(r.thread_id, r.ns, ch, ver) for r in records for ch, ver in r.versions.items()}
    )
    blobs: dict[tuple[str, str, str, str], ChannelBlob] = {}
    if blob_keys:
        for sid, ns, ch, ver, type_, data in conn.execute(_BLOBS_OF_KEYS, (json.dumps(blob_keys),)):
            blobs[(sid, ns, ch, ver)] = ChannelBlob(ch, ver, type_, bytes(data))
    keys = json.dumps([[r.thread_id, r.ns, r.checkpoint_id] for r in records])
    writes: dict[tuple[str, str, str], list[PendingWrite]] = {}
    for sid, ns, cid, task, idx, ch, type_, data, path in conn.execute(_WRITES_OF_KEYS, (keys,)):
        writes.setdefault((sid, ns, cid), []).append(
            PendingWrite(task, idx, ch, type_, bytes(data), path)
        )
    out = []
    for r in records:
        found = {
            ch: blob
            for ch, ver in r.versions.items()
            if (blob := blobs.get((r.thread_id, r.ns, ch, ver))) is not None
        }
        mine = sorted(writes.get((r.thread_id, r.ns, r.checkpoint_id), []), key=write_order)
        out.append(CheckpointEntry(r, found, mine))
    return out


def _ensure_session(conn: apsw.Connection, thread_id: str, session: Session | None) -> None:
    """Move the session's modified_at (version + 1); create it from ``session`` if missing.

    A deletion of the id still in steps is finished first, as for every write
    under a deleted id (:mod:`sqlstore.sqlite.deletion`): the write starts a new thread.
    """
    rows.finish_pending_deletion(conn, thread_id)
    now_ns = clock.now_ns()
    if rows.touch_session(conn, thread_id, now_ns) is None and session is not None:
        rows.put_snapshot(conn, session, snapshot.encode(session), now_ns)


@dataclass(frozen=True, slots=True)
class _Put:
    """The rows of one validated checkpoint put; calling it writes them."""

    thread_id: str
    session: Session | None
    row: tuple[Any, ...]
    blobs: list[tuple[Any, ...]]

    def __call__(self, conn: apsw.Connection) -> None:
        _ensure_session(conn, self.thread_id, self.session)
        conn.execute(_INSERT_CHECKPOINT, self.row)
        if self.blobs:
            conn.executemany(_INSERT_BLOB, self.blobs)


def _put_op(
    record: CheckpointRecord, blobs: Sequence[ChannelBlob], session: Session | None
) -> _Put:
    """Validate a checkpoint and return the write that stores it with its blobs.

    Raises:
        InvalidSessionId, InvalidCheckpoint: malformed input.
    """
    run_id = check_record(record, blobs)
    r = record
    row = (
        r.thread_id,
        r.ns,
        r.checkpoint_id,
        r.parent_id,
        r.type,
        r.body,
        r.metadata,
        _VERSIONS.encode(dict(r.versions)),
        run_id,
    )
    blob_rows = [(r.thread_id, r.ns, b.channel, b.version, b.type, b.data) for b in blobs]
    return _Put(r.thread_id, session, row, blob_rows)


def _put_together(puts: Sequence[_Put]) -> Callable[[apsw.Connection], list[None]]:
    """Return the write of several puts at once: one statement per table, not per put."""

    def op(conn: apsw.Connection) -> list[None]:
        for put in puts:
            _ensure_session(conn, put.thread_id, put.session)
        conn.executemany(_INSERT_CHECKPOINT, [put.row for put in puts])
        blob_rows = [row for put in puts for row in put.blobs]
        if blob_rows:
            conn.executemany(_INSERT_BLOB, blob_rows)
        return [None] * len(puts)

    return op


def _collect_garbage(conn: apsw.Connection, thread_id: str, ns: str) -> None:
    """Delete the blobs of (thread, ns) that no remaining checkpoint refers to."""
    kept = referenced_blobs(
        CheckpointRecord(thread_id, ns, "-", None, "", b"", b"{}", json.loads(v))
        for (v,) in conn.execute(
            "SELECT versions FROM checkpoints WHERE session_id = ? AND ns = ?", (thread_id, ns)
        )
    )
    stale = [
        (thread_id, ns, ch, ver)
        for ch, ver in conn.execute(
            "SELECT channel, version FROM checkpoint_blobs WHERE session_id = ? AND ns = ?",
            (thread_id, ns),
        )
        if (ch, ver) not in kept
    ]
    conn.executemany(
        "DELETE FROM checkpoint_blobs "
        "WHERE session_id = ? AND ns = ? AND channel = ? AND version = ?",
        stale,
    )


def _delete_checkpoints(conn: apsw.Connection, keys: Sequence[tuple[str, str, str]]) -> None:
    conn.executemany(
        "DELETE FROM checkpoint_writes WHERE session_id = ? AND ns = ? AND checkpoint_id = ?",
        keys,
    )
    conn.executemany(
        "DELETE FROM checkpoints WHERE session_id = ? AND ns = ? AND checkpoint_id = ?", keys
    )
    for sid, ns in sorted({(sid, ns) for sid, ns, _ in keys}):
        _collect_garbage(conn, sid, ns)


class SQLiteCheckpoints:
    """Checkpoints, channel blobs and pending writes of threads (sessions)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def put(
        self,
        record: CheckpointRecord,
        blobs: Sequence[ChannelBlob],
        *,
        session: Session | None = None,
    ) -> None:
        """Store a checkpoint and its new blobs durably in one transaction.

        Raises:
            InvalidSessionId, InvalidCheckpoint: malformed input; nothing stored.
            StoreBusy: the write lock was not free within the busy timeout.
        """
        self._db.write(_put_op(record, blobs, session))

    def put_many(self, items: Sequence[CheckpointPut]) -> list[BaseException | None]:
        """Store several checkpoints, each its own unit, as one member of a group commit.

        Returns each item's error (None: stored). A malformed item fails alone
        before anything is written; one that fails in SQL is rolled back alone.
        """
        ops: list[_Put] = []
        errors: list[BaseException | None] = []
        for record, blobs, session in items:
            try:
                ops.append(_put_op(record, blobs, session))
                errors.append(None)
            except Exception as exc:
                errors.append(exc)
        outcomes = iter(self._db.write_each(ops, together=_put_together(ops)) if ops else [])
        return [error if error is not None else next(outcomes)[1] for error in errors]

    def put_writes(
        self,
        thread_id: str,
        ns: str,
        checkpoint_id: str,
        writes: Sequence[PendingWrite],
        *,
        replace: bool = False,
    ) -> None:
        """Store pending writes durably; an existing (task_id, idx) is kept unless ``replace``.

        Writes for a checkpoint not stored (yet) are kept too: LangGraph may
        send them while the checkpoint's own put is still in flight.
        """
        validate_session_id(thread_id)
        check_names(ns, checkpoint_id)
        check_writes(writes)
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        sql = f"{verb} INTO checkpoint_writes ({_WRITE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
        values = [
            (thread_id, ns, checkpoint_id, w.task_id, w.idx, w.channel, w.type, w.data, w.task_path)
            for w in writes
        ]
        if not values:
            return

        def op(conn: apsw.Connection) -> None:
            rows.finish_pending_deletion(conn, thread_id)  # see _ensure_session
            rows.touch_session(conn, thread_id, clock.now_ns())
            conn.executemany(sql, values)

        self._db.write(op)

    def get(
        self, thread_id: str, ns: str, checkpoint_id: str | None = None
    ) -> CheckpointEntry | None:
        """Return one checkpoint with its blobs and writes, or None (one read transaction)."""
        validate_session_id(thread_id)
        check_names(ns, checkpoint_id)

        def read(conn: apsw.Connection) -> CheckpointEntry | None:
            if checkpoint_id is None:
                row = conn.execute(
                    f"SELECT {_COLUMNS} FROM checkpoints WHERE session_id = ? AND ns = ? "
                    "ORDER BY checkpoint_id DESC LIMIT 1",
                    (thread_id, ns),
                ).fetchone()
            else:
                row = conn.execute(
                    f"SELECT {_COLUMNS} FROM checkpoints "
                    "WHERE session_id = ? AND ns = ? AND checkpoint_id = ?",
                    (thread_id, ns, checkpoint_id),
                ).fetchone()
            return None if row is None else _entries(conn, [_record(row)])[0]

        return self._db.read(read)

    def page(
        self,
        query: CheckpointQuery,
        *,
        after: CheckpointKey | None = None,
        limit: int = CHECKPOINT_PAGE_ROWS,
    ) -> CheckpointPage:
        """Read up to ``limit`` rows after ``after`` (descending key order) in one short read."""
        check_page_limit(limit)

        def read(conn: apsw.Connection) -> CheckpointPage:
            keys, args = listing.page_keys(conn, query, after, limit)
            cols = ", ".join(f"c.{name}" for name in _COLUMNS.split(", "))
            sql = (
                f"WITH page AS MATERIALIZED ({keys}) "
                f"SELECT {cols} FROM {listing.PAGE_JOIN}{listing.PAGE_ORDER}"
            )
            found = [_record(row) for row in conn.execute(sql, args)]
            matching = [r for r in found if metadata_matches(r.metadata, query.filter)]
            last = found[-1] if len(found) == limit else None
            next_key = None if last is None else (last.checkpoint_id, last.thread_id, last.ns)
            return CheckpointPage(_entries(conn, matching), next_key)

        return self._db.read(read)

    def documents(
        self,
        query: CheckpointQuery,
        *,
        after: CheckpointKey | None = None,
        limit: int = CHECKPOINT_PAGE_ROWS,
    ) -> DocumentPage:
        """:meth:`page` with each checkpoint as one JSON text, read by one statement."""
        check_page_limit(limit)
        return self._db.read(lambda conn: listing.documents(conn, query, after, limit))

    def delete_for_runs(self, run_ids: Sequence[str]) -> int:
        """Delete the checkpoints whose metadata ``run_id`` is listed, with their writes.

        Blobs no remaining checkpoint refers to are deleted too. Returns the
        number of checkpoints deleted. One transaction.
        """
        wanted = sorted({str(r) for r in run_ids})
        if not wanted:
            return 0

        def op(conn: apsw.Connection) -> int:
            keys = [
                (sid, ns, cid)
                for sid, ns, cid in conn.execute(
                    "SELECT session_id, ns, checkpoint_id FROM checkpoints "
                    "WHERE run_id IN (SELECT value FROM json_each(?))",
                    (json.dumps(wanted),),
                )
            ]
            _delete_checkpoints(conn, keys)
            now_ns = clock.now_ns()
            for sid in sorted({k[0] for k in keys}):
                rows.touch_session(conn, sid, now_ns)
            return len(keys)

        return self._db.write(op)

    def copy_thread(self, source: str, target: str, *, session: Session | None = None) -> int:
        """Copy every checkpoint, blob and write of ``source`` to ``target`` (one transaction).

        ``session`` becomes the target's snapshot if the target has no session.
        Rows the target already has under the same keys are replaced. A source
        without checkpoints copies nothing and creates nothing. Returns the
        number of checkpoints copied.
        """
        validate_session_id(source)
        validate_session_id(target)
        if source == target:
            raise InvalidCheckpoint("copy_thread needs two different thread ids")

        def op(conn: apsw.Connection) -> int:
            rows.finish_pending_deletion(conn, target)  # before the copy lands (_ensure_session)
            conn.execute(
                f"INSERT OR REPLACE INTO checkpoints ({_COLUMNS}, run_id) "
                "SELECT ?, ns, checkpoint_id, parent_id, type, body, metadata, versions, run_id "
                "FROM checkpoints WHERE session_id = ?",
                (target, source),
            )
            copied = conn.changes()
            if not copied:
                return 0
            conn.execute(
                "INSERT OR REPLACE INTO checkpoint_blobs "
                "SELECT ?, ns, channel, version, type, data FROM checkpoint_blobs "
                "WHERE session_id = ?",
                (target, source),
            )
            conn.execute(
                f"INSERT OR REPLACE INTO checkpoint_writes ({_WRITE_COLUMNS}) "
                "SELECT ?, ns, checkpoint_id, task_id, idx, channel, type, data, task_path "
                "FROM checkpoint_writes WHERE session_id = ?",
                (target, source),
            )
            _ensure_session(conn, target, session)
            return copied

        return self._db.write(op)

    def prune(self, thread_ids: Sequence[str], *, strategy: PruneStrategy = "keep_latest") -> int:
        """Keep only each namespace's newest checkpoint (and its writes and blobs), or delete all.

        ``"delete"`` removes the threads' checkpoint data but keeps their
        sessions; delete a session (``sessions.delete``) to remove the thread.
        One transaction for all threads. Returns the checkpoints removed.

        Raises:
            ValueError: an unknown strategy.
        """
        if strategy not in ("keep_latest", "delete"):
            raise ValueError(f"unknown prune strategy {strategy!r}; use 'keep_latest' or 'delete'")
        ids = sorted(set(thread_ids))
        for thread_id in ids:
            validate_session_id(thread_id)
        if not ids:
            return 0

        def op(conn: apsw.Connection) -> int:
            removed = 0
            now_ns = clock.now_ns()
            for thread_id in ids:
                if strategy == "delete":
                    row = conn.execute(
                        "SELECT count(*) FROM checkpoints WHERE session_id = ?", (thread_id,)
                    ).fetchone()
                    count = int(row[0]) if row else 0
                    rows.delete_checkpoint_rows(conn, thread_id)
                else:
                    stale = [
                        (thread_id, ns, cid)
                        for ns, cid in conn.execute(
                            "SELECT ns, checkpoint_id FROM checkpoints AS c WHERE session_id = ? "
                            "AND checkpoint_id < (SELECT max(checkpoint_id) FROM checkpoints "
                            "WHERE session_id = c.session_id AND ns = c.ns)",
                            (thread_id,),
                        )
                    ]
                    _delete_checkpoints(conn, stale)
                    count = len(stale)
                if count:
                    rows.touch_session(conn, thread_id, now_ns)
                removed += count
            return removed

        return self._db.write(op)

    def import_thread(self, thread_id: str, entries: Sequence[CheckpointEntry]) -> None:
        """Replace a thread's checkpoint data with ``entries`` in one transaction.

        Used to copy threads between stores: the session row is not touched.
        """
        validate_session_id(thread_id)
        records, blob_rows, write_rows = [], [], []
        for e in entries:
            r = e.record
            run_id = check_record(r, e.blobs.values())
            check_writes(e.writes)
            records.append(
                (thread_id, r.ns, r.checkpoint_id, r.parent_id, r.type, r.body, r.metadata,
                 json.dumps(dict(r.versions), ensure_ascii=False), run_id)
            )  # fmt: skip
            blob_rows += [
                (thread_id, r.ns, b.channel, b.version, b.type, b.data) for b in e.blobs.values()
            ]
            write_rows += [
                (thread_id, r.ns, r.checkpoint_id, w.task_id, w.idx, w.channel, w.type, w.data,
                 w.task_path)
                for w in e.writes
            ]  # fmt: skip

        def op(conn: apsw.Connection) -> None:
            rows.finish_pending_deletion(conn, thread_id)
            rows.delete_checkpoint_rows(conn, thread_id)
            conn.executemany(_INSERT_CHECKPOINT, records)
            conn.executemany(_INSERT_BLOB, blob_rows)
            conn.executemany(
                f"INSERT OR REPLACE INTO checkpoint_writes ({_WRITE_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                write_rows,
            )

        self._db.write(op)

    def summary(self, thread_id: str) -> ThreadSummary:
        """Return counts and bytes of a thread's checkpoint data (one read transaction)."""
        validate_session_id(thread_id)

        def read(conn: apsw.Connection) -> ThreadSummary:
            c = conn.execute(
                "SELECT count(*), count(DISTINCT ns), "
                "coalesce(sum(length(body) + length(metadata) + length(versions)), 0) "
                "FROM checkpoints WHERE session_id = ?",
                (thread_id,),
            ).fetchone()
            b = conn.execute(
                "SELECT count(*), coalesce(sum(length(data)), 0) FROM checkpoint_blobs "
                "WHERE session_id = ?",
                (thread_id,),
            ).fetchone()
            w = conn.execute(
                "SELECT count(*), coalesce(sum(length(data)), 0) FROM checkpoint_writes "
                "WHERE session_id = ?",
                (thread_id,),
            ).fetchone()
            assert c is not None and b is not None and w is not None
            return ThreadSummary(int(c[0]), int(c[1]), int(b[0]), int(w[0]), c[2] + b[1] + w[1])

        return self._db.read(read)

    def thread_ids(self) -> builtins.list[str]:
        """Return every thread id that has checkpoints, sorted."""
        with self._db.reader() as conn:
            return [
                str(sid)
                for (sid,) in conn.execute(
                    "SELECT DISTINCT session_id FROM checkpoints ORDER BY session_id"
                )
            ]
