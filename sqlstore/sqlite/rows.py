"""Row-level SQL shared by the SQLite parts (sessions, events, audit, imports).

Every function takes a connection that is already inside a write transaction
(from :meth:`Database.write`) or a read transaction, and uses bound parameters
only.
"""

from __future__ import annotations

import json
from typing import Any

import apsw

from sqlstore import clock
from sqlstore.audit import ToolCallRecord
from sqlstore.cursor import new_generation
from sqlstore.inventory import SessionMeta
from sqlstore.jsonl import canonical_json
from sqlstore.model import Kind, Principal, Relationship, State
from sqlstore.pager import scope_key
from sqlstore.session import Session

META_COLUMNS = (
    "id, modified_at_ns, version, state, kind, relationship, owner, created_at_ns, "
    "title, model_id, turns, estimated_bytes"
)


def next_snapshot_version(conn: apsw.Connection, session_id: str) -> int:
    """Return the version for a snapshot write: above the row's and above ``write_seq``.

    Versions never repeat for an id, not even across delete and re-create:
    appends and audit records add one to the row's version, a snapshot write
    takes ``max(row version, write_seq) + 1`` and stores it in ``write_seq``, and
    a delete raises ``write_seq`` to the deleted row's version.
    """
    row = conn.execute(
        "UPDATE store_meta SET value = max(value, coalesce("
        "(SELECT version FROM sessions WHERE id = ?), 0)) + 1 "
        "WHERE key = 'write_seq' RETURNING value",
        (session_id,),
    ).fetchone()
    assert row is not None
    return int(row[0])


def bump_inventory_generation(conn: apsw.Connection) -> None:
    """Invalidate outstanding pager cursors (after save, create or delete)."""
    conn.execute("UPDATE store_meta SET value = value + 1 WHERE key = 'inventory_generation'")


def inventory_generation(conn: apsw.Connection) -> int:
    """Return the current inventory generation."""
    row = conn.execute("SELECT value FROM store_meta WHERE key = 'inventory_generation'").fetchone()
    assert row is not None
    return int(row[0])


DELETE_STEP_ROWS = 2_000
"""Most event or audit rows one step of a bounded deletion removes (about 1-2 ms of lock
hold; see :mod:`sqlstore.sqlite.deletion`)."""


def finish_pending_deletion(conn: apsw.Connection, session_id: str) -> None:
    """Finish a deletion of ``session_id`` still in progress before writing under the id.

    See :mod:`sqlstore.sqlite.deletion`: old rows of a session being deleted in
    steps must be gone before a new snapshot, log or audit row appears under its id.
    """
    if conn.execute("SELECT 1 FROM deletions WHERE session_id = ?", (session_id,)).fetchone():
        while not delete_step(conn, session_id):
            pass


def put_snapshot(
    conn: apsw.Connection,
    session: Session,
    blob: bytes,
    modified_at_ns: int,
    *,
    row_exists: bool = False,
) -> int:
    """Insert or replace a snapshot row; return its new version.

    ``row_exists``: the caller read the session's row in this transaction. A
    session with a row has no pending deletion and no orphan row (a deletion
    removes the row first; an orphan is an id without one), so those two
    statements are skipped.
    """
    if not row_exists:
        finish_pending_deletion(conn, session.id)
    version = next_snapshot_version(conn, session.id)
    owner = session.owner
    conn.execute(
        "INSERT INTO snapshots (id, body) VALUES (?, ?) "
        "ON CONFLICT (id) DO UPDATE SET body = excluded.body",
        (session.id, blob),
    )
    values = (
        str(session.state),
        str(session.kind),
        canonical_json(session.relationship.to_json()),
        None if owner is None else canonical_json(owner.to_json()),
        None if owner is None else scope_key(owner, True),
        clock.to_ns(session.created_at),
        session.title,
        session.model_id,
        session.counters.turns,
        len(blob),
        modified_at_ns,
        version,
    )
    if row_exists:
        _update_inventory(conn, session.id, values)
    else:
        conn.execute(
            "INSERT INTO sessions (id, state, kind, relationship, owner, owner_key, "
            "created_at_ns, title, model_id, turns, estimated_bytes, modified_at_ns, version) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (id) DO UPDATE SET state = excluded.state, "
            "kind = excluded.kind, relationship = excluded.relationship, owner = excluded.owner, "
            "owner_key = excluded.owner_key, created_at_ns = excluded.created_at_ns, "
            "title = excluded.title, model_id = excluded.model_id, turns = excluded.turns, "
            "estimated_bytes = excluded.estimated_bytes, "
            "modified_at_ns = excluded.modified_at_ns, version = excluded.version",
            (session.id, *values),
        )
    if not row_exists:
        conn.execute("DELETE FROM orphans WHERE session_id = ?", (session.id,))
    bump_inventory_generation(conn)
    return version


def _update_inventory(conn: apsw.Connection, session_id: str, values: tuple[Any, ...]) -> None:
    """Update an existing inventory row, rewriting only the indexes whose columns change.

    SQLite rewrites an index entry whenever its column is assigned, even to the
    same value; state, kind, relationship and owner (three indexes) rarely
    change on a save, so they are assigned only when they differ — a snapshot
    save then dirties the row's page and ``sessions_by_modified`` alone.
    """
    state, kind, relationship, owner, owner_key, *rest = values
    conn.execute(
        "UPDATE sessions SET created_at_ns = ?, title = ?, model_id = ?, turns = ?, "
        "estimated_bytes = ?, modified_at_ns = ?, version = ? WHERE id = ?",
        (*rest, session_id),
    )
    conn.execute(
        "UPDATE sessions SET state = ?1, kind = ?2, relationship = ?3, owner = ?4, "
        "owner_key = ?5 WHERE id = ?6 AND (state IS NOT ?1 OR kind IS NOT ?2 OR "
        "relationship IS NOT ?3 OR owner IS NOT ?4 OR owner_key IS NOT ?5)",
        (state, kind, relationship, owner, owner_key, session_id),
    )


def session_exists(conn: apsw.Connection, session_id: str) -> bool:
    """True when a snapshot row exists."""
    return conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is not None


def touch_session(conn: apsw.Connection, session_id: str, now_ns: int) -> int | None:
    """Record a write to a session (event or audit): new modified_at, version + 1.

    Returns the new version, or None when the session has no snapshot row: the id
    is then an orphan, and its ``orphans`` row records the write.
    """
    row = conn.execute(
        "UPDATE sessions SET modified_at_ns = ?, version = version + 1 WHERE id = ? "
        "RETURNING version",
        (now_ns, session_id),
    ).fetchone()
    if row is None:
        conn.execute(
            "INSERT INTO orphans (session_id, modified_at_ns) VALUES (?, ?) "
            "ON CONFLICT (session_id) DO UPDATE SET "
            "modified_at_ns = max(modified_at_ns, excluded.modified_at_ns)",
            (session_id, now_ns),
        )
        return None
    return int(row[0])


def delete_session_rows(conn: apsw.Connection, session_id: str) -> bool:
    """Delete events, log head, audit, checkpoint data and snapshot; True if a snapshot existed."""
    conn.execute("DELETE FROM events WHERE session_id = ?", (session_id,))
    delete_checkpoint_rows(conn, session_id)  # a LangGraph thread goes with its session
    conn.execute("DELETE FROM event_logs WHERE session_id = ?", (session_id,))
    conn.execute("DELETE FROM tool_calls WHERE session_id = ?", (session_id,))
    return unpublish(conn, session_id)


def delete_checkpoint_rows(conn: apsw.Connection, thread_id: str) -> None:
    """Delete every checkpoint, blob and pending write of a thread (issue 17)."""
    conn.execute("DELETE FROM checkpoint_writes WHERE session_id = ?", (thread_id,))
    conn.execute("DELETE FROM checkpoint_blobs WHERE session_id = ?", (thread_id,))
    conn.execute("DELETE FROM checkpoints WHERE session_id = ?", (thread_id,))


def unpublish(conn: apsw.Connection, session_id: str) -> bool:
    """Delete snapshot, inventory row and orphan row; return whether a snapshot existed.

    After this no reader sees the id (its log and audit rows are the caller's);
    ``write_seq`` keeps the deleted version and pager cursors are invalidated.
    """
    conn.execute("DELETE FROM snapshots WHERE id = ?", (session_id,))
    conn.execute("DELETE FROM orphans WHERE session_id = ?", (session_id,))
    gone = conn.execute(
        "DELETE FROM sessions WHERE id = ? RETURNING version", (session_id,)
    ).fetchone()
    if gone is None:
        return False
    conn.execute("UPDATE store_meta SET value = max(value, ?) WHERE key = 'write_seq'", (gone[0],))
    bump_inventory_generation(conn)
    return True


def delete_step(conn: apsw.Connection, session_id: str) -> bool:
    """Delete up to ``DELETE_STEP_ROWS`` rows of a pending deletion; True when it is done."""
    for table, key in (("events", "pos"), ("tool_calls", "seq")):
        found = conn.execute(
            f"SELECT max({key}), count(*) FROM (SELECT {key} FROM {table} "
            f"WHERE session_id = ? ORDER BY {key} LIMIT ?)",
            (session_id, DELETE_STEP_ROWS),
        ).fetchone()
        if found is not None and found[1]:
            conn.execute(
                f"DELETE FROM {table} WHERE session_id = ? AND {key} <= ?",
                (session_id, found[0]),
            )
            return False
    delete_session_rows(conn, session_id)
    conn.execute("DELETE FROM deletions WHERE session_id = ?", (session_id,))
    return True


def meta_from_row(row: tuple[Any, ...]) -> SessionMeta:
    """Build a ``SessionMeta`` from a row selected with ``META_COLUMNS``."""
    (sid, mtime, version, state, kind, rel, owner, created, title, model, turns, size) = row
    return SessionMeta(
        id=sid,
        modified_at=clock.from_ns(mtime),
        version=version,
        state=State(state),
        kind=Kind(kind),
        relationship=Relationship.from_json(json.loads(rel)),
        owner=None if owner is None else Principal.from_json(json.loads(owner)),
        created_at=clock.from_ns(created),
        title=title,
        model_id=model,
        turns=turns,
        estimated_bytes=size,
    )


def append_record(
    conn: apsw.Connection,
    session_id: str,
    *,
    is_gap: bool,
    event_type: str,
    body: bytes,
    now_ns: int,
) -> tuple[str, int]:
    """Append one record to a session's log (creating the log); return (generation, pos)."""
    row = conn.execute(
        "UPDATE event_logs SET length = length + 1, modified_at_ns = ? WHERE session_id = ? "
        "RETURNING generation, length",
        (now_ns, session_id),
    ).fetchone()
    if row is None:
        finish_pending_deletion(conn, session_id)
        generation, pos = new_generation(), 1
        conn.execute(
            "INSERT INTO event_logs (session_id, generation, length, modified_at_ns) "
            "VALUES (?, ?, 1, ?)",
            (session_id, generation, now_ns),
        )
    else:
        generation, pos = str(row[0]), int(row[1])
    conn.execute(
        "INSERT INTO events (session_id, pos, is_gap, type, at_ns, body) VALUES (?, ?, ?, ?, ?, ?)",
        (session_id, pos, int(is_gap), event_type, now_ns, body),
    )
    return generation, pos


def append_records(
    conn: apsw.Connection,
    session_id: str,
    records: list[tuple[str, bytes]],
    now_ns: int,
) -> tuple[str, int]:
    """Append events (``(type, body)``) to a log (creating it); return (generation, first pos).

    The rows are those ``len(records)`` :func:`append_record` calls would leave,
    written with one head update and one ``executemany``.
    """
    count = len(records)
    row = conn.execute(
        "UPDATE event_logs SET length = length + ?, modified_at_ns = ? WHERE session_id = ? "
        "RETURNING generation, length",
        (count, now_ns, session_id),
    ).fetchone()
    if row is None:
        finish_pending_deletion(conn, session_id)
        generation, first = new_generation(), 1
        conn.execute(
            "INSERT INTO event_logs (session_id, generation, length, modified_at_ns) "
            "VALUES (?, ?, ?, ?)",
            (session_id, generation, count, now_ns),
        )
    else:
        generation, first = str(row[0]), int(row[1]) - count + 1
    conn.executemany(
        "INSERT INTO events (session_id, pos, is_gap, type, at_ns, body) VALUES (?, ?, 0, ?, ?, ?)",
        [
            (session_id, pos, event_type, now_ns, body)
            for pos, (event_type, body) in enumerate(records, start=first)
        ],
    )
    return generation, first


def insert_log(
    conn: apsw.Connection,
    session_id: str,
    generation: str,
    records: list[tuple[bool, str, bytes]],
    now_ns: int,
) -> None:
    """Create a session's log holding ``records`` (``(is_gap, type, body)``) at once.

    The rows are those ``len(records)`` :func:`append_record` calls would leave in
    a session without a log, under ``generation``: a log head of that length and
    records at positions 1 to n, all stamped ``now_ns``. Nothing is written for no
    records. The caller makes sure the session has no log (and no event rows).
    """
    if not records:
        return
    finish_pending_deletion(conn, session_id)
    conn.execute(
        "INSERT INTO event_logs (session_id, generation, length, modified_at_ns) "
        "VALUES (?, ?, ?, ?)",
        (session_id, generation, len(records), now_ns),
    )
    conn.executemany(
        "INSERT INTO events (session_id, pos, is_gap, type, at_ns, body) VALUES (?, ?, ?, ?, ?, ?)",
        [
            (session_id, pos, int(is_gap), event_type, now_ns, body)
            for pos, (is_gap, event_type, body) in enumerate(records, start=1)
        ],
    )


AUDIT_COLUMNS = (
    "session_id, call_id, tool, args, result, is_error, at_ns, queued_us, took_us, run_id"
)


_INSERT_AUDIT = f"INSERT INTO tool_calls ({AUDIT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"


def _audit_row(rec: ToolCallRecord, at_ns: int) -> tuple[object, ...]:
    return (
        rec.session_id,
        rec.call_id,
        rec.tool,
        rec.args,
        rec.result,
        int(rec.is_error),
        at_ns,
        rec.queued_us,
        rec.took_us,
        rec.run_id,
    )


def insert_audit(conn: apsw.Connection, rec: ToolCallRecord, at_ns: int) -> None:
    """Insert one audit row."""
    finish_pending_deletion(conn, rec.session_id)
    conn.execute(_INSERT_AUDIT, _audit_row(rec, at_ns))


def insert_audits(conn: apsw.Connection, records: list[tuple[ToolCallRecord, int]]) -> None:
    """Insert audit rows in order, each ``(record, at_ns)`` as :func:`insert_audit` does."""
    for session_id in {rec.session_id for rec, _ in records}:
        finish_pending_deletion(conn, session_id)
    conn.executemany(_INSERT_AUDIT, [_audit_row(rec, at_ns) for rec, at_ns in records])


def audit_from_row(row: tuple[Any, ...]) -> ToolCallRecord:
    """Build a ``ToolCallRecord`` from a row selected with ``AUDIT_COLUMNS``."""
    sid, call_id, tool, args, result, is_error, at_ns, queued, took, run_id = row
    return ToolCallRecord(
        session_id=sid,
        call_id=call_id,
        tool=tool,
        args=args,
        result=result,
        is_error=bool(is_error),
        at=clock.from_ns(at_ns),
        queued_us=queued,
        took_us=took,
        run_id=run_id,
    )
