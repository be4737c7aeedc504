"""The logical state of a sqlstore file, as the power-cut checks compare it.

The same function runs in the process under test (after each acknowledged call,
through the store's own reader) and in the checker (on each recovered image), so
"the image holds the state after call *n*" is a comparison of two digests.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import apsw

EMPTY = "empty"
"""The digest of a file that holds no sqlstore schema yet (or does not exist)."""

_PARTS = ("sessions", "snapshots", "event_logs", "events", "tool_calls")


def _sha(value: object) -> str:
    return hashlib.sha256(repr(value).encode("utf-8", "surrogatepass")).hexdigest()[:20]


def _tag(body: bytes, is_gap: int) -> str:
    """``seq:text`` of an event body (the workloads put their tags there)."""
    if is_gap:
        return "gap:" + body.decode("utf-8", "replace")[:24]
    try:
        data = json.loads(body)
    except ValueError:
        return "raw:" + hashlib.sha256(body).hexdigest()[:12]
    if not isinstance(data, dict):
        return "raw:" + hashlib.sha256(body).hexdigest()[:12]
    return f"{data.get('seq')}:{str(data.get('text', ''))[:24]}"


def tables(conn: apsw.Connection) -> list[str]:
    """Return the names of the file's tables (SQLite's own included), sorted."""
    return sorted(
        str(row[0])
        for row in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")
        if row[0] != "sqlite_stat1"
    )


def dump(conn: apsw.Connection, *, content_only: bool = False) -> dict[str, Any]:
    """Return ``{"digest", "sessions"}`` of the file ``conn`` reads.

    ``digest`` covers every row of every table (``EMPTY`` without the schema);
    ``sessions`` maps each session id found in any per-session table to what of
    it exists: ``row`` and ``snapshot`` (digests or None), ``title``, ``log`` (the event_logs
    length or None), ``events`` (the ``seq:text`` tags in position order) and
    ``audit`` (call ids in record order). With ``content_only`` the digest leaves
    out times, versions, generations, sequence numbers and bookkeeping tables
    (migrate's "same result as an uninterrupted run").
    """
    names = tables(conn)
    if "sessions" not in names:
        return {"digest": EMPTY, "sessions": {}}
    whole = hashlib.sha256()
    for name in names:
        if content_only and name not in _PARTS:
            continue
        whole.update(b"\x00table " + name.encode())
        for row in conn.execute(f'SELECT * FROM "{name}" ORDER BY 1, 2'):
            _feed(whole, _content(name, row) if content_only else row)
    sessions: dict[str, dict[str, Any]] = {}

    def entry(sid: str) -> dict[str, Any]:
        return sessions.setdefault(
            sid,
            {"row": None, "title": None, "snapshot": None, "log": None, "events": [], "audit": []},
        )

    for row in conn.execute("SELECT * FROM sessions"):
        entry(row[0]).update(row=_sha(row), title=row[7])
    for sid, body in conn.execute("SELECT id, body FROM snapshots"):
        entry(sid)["snapshot"] = hashlib.sha256(body).hexdigest()[:20]
    for sid, length in conn.execute("SELECT session_id, length FROM event_logs"):
        entry(sid)["log"] = length
    for sid, is_gap, body in conn.execute(
        "SELECT session_id, is_gap, body FROM events ORDER BY session_id, pos"
    ):
        entry(sid)["events"].append(_tag(body, is_gap))
    for sid, call in conn.execute("SELECT session_id, call_id FROM tool_calls ORDER BY seq"):
        entry(sid)["audit"].append(call)
    return {"digest": whole.hexdigest()[:20], "sessions": sessions}


def _feed(h: Any, row: tuple[Any, ...]) -> None:
    """Add one row to a digest: each value with its type and length (blobs as they are)."""
    h.update(b"\x00row")
    for value in row:
        raw = value if isinstance(value, bytes) else repr(value).encode("utf-8", "surrogatepass")
        h.update(b"%s:%d:" % (type(value).__name__.encode(), len(raw)))
        h.update(raw)


def _content(table: str, row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A row without the columns that depend on when or in which run it was written."""
    if table == "sessions":
        return row[:11]  # up to estimated_bytes: no modified_at_ns, version
    if table == "event_logs":
        return (row[0], row[2])  # session_id, length
    if table == "events":
        return (row[0], row[1], row[2], row[3], row[5])  # no at_ns
    if table == "tool_calls":
        return (row[1], row[2], row[3], row[4], row[5], row[6], row[10])  # no seq, times
    return row


def session_is_whole(found: dict[str, Any]) -> bool:
    """True when a session found in an image has its inventory row and snapshot."""
    return found["row"] is not None and found["snapshot"] is not None
