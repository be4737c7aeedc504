"""Reading an ADK session's events from its log: the newest N from the tail, or by time.

``get_session(num_recent_events=N)`` reads backwards from the end of the log
until it has N ADK events (other records — gaps, a host's own events — are
skipped), so it costs N records however long the session is. With
``after_timestamp`` the events with ``timestamp >= after_timestamp`` are kept;
the backward read stops at the first older event (ADK stamps events when they
are made, so a session's timestamps grow along its log). Events are returned
oldest first, ordered by timestamp with the append order breaking ties, as ADK's
SQL services order them.
"""

from __future__ import annotations

from typing import Any

from sqlstore.integrations.adk_events import EVENT_TYPE
from sqlstore.ports import EventLog

READ_CHUNK_RECORDS = 500
"""Records fetched per backward read when the number of events wanted is open."""


def read_events(
    log: EventLog, session_id: str, recent: int | None, after: float | None
) -> list[dict[str, Any]]:
    """Return the JSON of the session's events per ADK's ``GetSessionConfig`` fields."""
    if recent == 0:
        return []
    found: list[dict[str, Any]] = []  # newest first
    before = ""
    while recent is None or len(found) < recent:
        count = READ_CHUNK_RECORDS if recent is None else max(1, recent - len(found))
        records = (
            log.read_tail(session_id, count)
            if before == ""
            else log.read_before(session_id, before, limit=count)
        )
        if not records:
            break
        before = records[0].cursor
        older = False
        for rec in reversed(records):
            event = rec.event
            if event is None or event.type != EVENT_TYPE:
                continue
            stamp = event.data.get("timestamp")
            if after is not None and isinstance(stamp, int | float) and stamp < after:
                older = True
                break
            found.append(event.data)
            if recent is not None and len(found) >= recent:
                break
        if older:
            break
    found.reverse()
    found.sort(key=lambda data: float(data.get("timestamp") or 0.0))  # stable: ties keep log order
    return found
