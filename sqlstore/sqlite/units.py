"""Units of work in SQLite: ``store.apply``, ``append_events`` and conditional ``save``.

A unit is one write function submitted to :meth:`Database.write`, so it is one
member of a group commit: it commits with the writes queued beside it, in one
transaction and one fsync, and when it fails (a version conflict, a full disk)
the group is re-run write by write, so the unit's failure rolls back the unit
alone and leaves none of its rows behind. See :mod:`sqlstore.changes` for the
version rules.
"""

from __future__ import annotations

import apsw

from sqlstore import clock
from sqlstore.changes import Applied, ChangeSet, check_version
from sqlstore.cursor import encode_cursor
from sqlstore.sqlite import rows
from sqlstore.sqlite.scopes import merge_scopes


def stored_version(conn: apsw.Connection, session_id: str) -> int | None:
    """Return the version of the session's snapshot row, or None when there is none."""
    row = conn.execute("SELECT version FROM sessions WHERE id = ?", (session_id,)).fetchone()
    return None if row is None else int(row[0])


def apply_changes(conn: apsw.Connection, changes: ChangeSet) -> Applied:
    """Write one unit inside the caller's write transaction; return its outcome.

    Raises:
        VersionConflict: the stored version does not meet ``expected_version``
            (raised before anything is written; the caller rolls back anyway).
    """
    session_id = changes.session_id
    stored: int | None = None
    if changes.expected_version is not None or changes.empty:
        # An unconditional unit that writes needs no read: the touch returns the version.
        stored = stored_version(conn, session_id)
        check_version(session_id, changes.expected_version, stored)
        if changes.empty:
            return Applied(stored or 0, [])
    now_ns = clock.now_ns()
    cursors: list[str] = []
    if changes.events:
        generation, first = rows.append_records(
            conn, session_id, [(e.type, e.body) for e in changes.events], now_ns
        )
        cursors = [
            encode_cursor(session_id, generation, pos)
            for pos in range(first, first + len(changes.events))
        ]
    if changes.audit:
        rows.insert_audits(
            conn,
            [(rec, now_ns if rec.at is None else clock.to_ns(rec.at)) for rec in changes.audit],
        )
    if changes.scopes:
        merge_scopes(conn, changes.scopes, now_ns)
    if changes.snapshot is not None:
        assert changes.blob is not None
        version: int | None = rows.put_snapshot(
            conn,
            changes.snapshot,
            changes.blob,
            now_ns,
            row_exists=changes.expected_version is not None and stored is not None,
        )
    elif changes.events or changes.audit:
        version = rows.touch_session(conn, session_id, now_ns)
    else:
        # Scoped state only: the session is not written. An unconditional unit
        # skipped the read above, so its version is read here.
        version = (
            stored if changes.expected_version is not None else stored_version(conn, session_id)
        )
    return Applied(version or 0, cursors)
