"""Read-only queries for the viewer (``sqlstore ui``) about records: the head of a log,
the write time of records, and tool calls across the store.

The records themselves come from the store's cursored reads (``read_tail``,
``read_before``, ``read_after``); the viewer adds what those do not carry, the time
each record was written (``events.at_ns``). Short read transactions only.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from datetime import datetime

import apsw

from sqlstore import clock
from sqlstore.audit import ToolCallRecord
from sqlstore.errors import CursorMalformed
from sqlstore.sqlite import rows
from sqlstore.sqlite.database import Database


def log_head(db: Database, session_id: str) -> tuple[str | None, int]:
    """Return (generation, length) of a session's log, or (None, 0) when it has none."""

    def read(conn: apsw.Connection) -> tuple[str | None, int]:
        row = conn.execute(
            "SELECT generation, length FROM event_logs WHERE session_id = ?", (session_id,)
        ).fetchone()
        return (None, 0) if row is None else (str(row[0]), int(row[1]))

    return db.read(read)


def cursor_position(cursor: str) -> int:
    """Return the record position a cursor names (for cursors the store just returned).

    Raises:
        CursorMalformed: the text is not a cursor.
    """
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        doc = json.loads(raw.decode("utf-8"))
        return int(doc["p"])
    except (binascii.Error, ValueError, UnicodeDecodeError, KeyError, TypeError):
        raise CursorMalformed("not a cursor") from None


def record_times(db: Database, session_id: str, positions: list[int]) -> dict[int, datetime]:
    """Return the write time of each given record position of a log."""
    if not positions:
        return {}

    def read(conn: apsw.Connection) -> dict[int, datetime]:
        marks = ", ".join("?" * len(positions))
        return {
            int(pos): clock.from_ns(int(at_ns))
            for pos, at_ns in conn.execute(
                f"SELECT pos, at_ns FROM events WHERE session_id = ? AND pos IN ({marks})",
                [session_id, *positions],
            )
        }

    return db.read(read)


@dataclass(frozen=True, slots=True)
class ToolSummary:
    """How one tool behaved across the store."""

    tool: str
    calls: int
    errors: int
    mean_took_us: int
    max_took_us: int


def tool_summaries(db: Database) -> list[ToolSummary]:
    """Return one summary per tool, most calls first."""

    def read(conn: apsw.Connection) -> list[ToolSummary]:
        return [
            ToolSummary(str(t), int(n), int(e or 0), int(avg or 0), int(mx or 0))
            for t, n, e, avg, mx in conn.execute(
                "SELECT tool, count(*), sum(is_error), avg(took_us), max(took_us) "
                "FROM tool_calls GROUP BY tool ORDER BY count(*) DESC, tool"
            )
        ]

    return db.read(read)


def tool_calls(db: Database, tool: str, *, limit: int) -> list[ToolCallRecord]:
    """Return the newest ``limit`` + 1 calls of one tool across the store, in record order.

    One more than ``limit`` tells the caller that older calls were left out.
    """
    return _newest_calls(db, "tool", tool, limit)


def session_calls(db: Database, session_id: str, *, limit: int) -> list[ToolCallRecord]:
    """Return the newest ``limit`` + 1 calls of one session, in record order (index seek)."""
    return _newest_calls(db, "session_id", session_id, limit)


def _newest_calls(db: Database, column: str, value: str, limit: int) -> list[ToolCallRecord]:
    assert column in ("tool", "session_id")  # both have a (column, seq) index

    def read(conn: apsw.Connection) -> list[ToolCallRecord]:
        found = conn.execute(
            f"SELECT {rows.AUDIT_COLUMNS} FROM tool_calls WHERE {column} = ? "
            "ORDER BY seq DESC LIMIT ?",
            (value, limit + 1),
        ).fetchall()
        return [rows.audit_from_row(r) for r in reversed(found)]

    return db.read(read)
