"""Orphan writes in SQLite: event logs and audit rows of ids without a snapshot.

The ``orphans`` table names them with the time of their last write; the write
paths keep it (:func:`sqlstore.sqlite.rows.touch_session` adds or refreshes a
row, a snapshot save or a delete removes it), so listing them reads that small
table and one index seek per id, never the events.
"""

from __future__ import annotations

from typing import Any

import apsw

from sqlstore import clock
from sqlstore.inventory import Orphan


def list_orphans(conn: apsw.Connection) -> list[Orphan]:
    """Return every orphan, newest last write first (then id), inside the caller's read."""
    found: list[tuple[Any, ...]] = conn.execute(
        "SELECT o.session_id, o.modified_at_ns, coalesce(l.length, 0), "
        "(SELECT count(*) FROM tool_calls t WHERE t.session_id = o.session_id) "
        "FROM orphans o LEFT JOIN event_logs l ON l.session_id = o.session_id "
        "ORDER BY o.modified_at_ns DESC, o.session_id"
    ).fetchall()
    return [Orphan(str(sid), clock.from_ns(mtime), int(n), int(a)) for sid, mtime, n, a in found]


def orphan_unchanged(conn: apsw.Connection, expected: Orphan, now_ns: int) -> bool:
    """True when ``expected`` is still an orphan, last written when it says, and not leased."""
    row = conn.execute(
        "SELECT modified_at_ns FROM orphans WHERE session_id = ?", (expected.id,)
    ).fetchone()
    if row is None or clock.from_ns(int(row[0])) != expected.modified_at:
        return False
    if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (expected.id,)).fetchone():
        return False
    leased = conn.execute(
        "SELECT 1 FROM leases WHERE name = ? AND owner IS NOT NULL AND expires_at_ns > ?",
        (expected.id, now_ns),
    ).fetchone()
    return leased is None
