"""The session pages of the viewer: the list, one session, its timeline and tool calls.

Handlers are plain functions (Starlette runs them in its thread pool, so the
blocking store reads never stall the event loop). Every value reaches the page
through an autoescaping template.
"""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse

from sqlstore import clock
from sqlstore.errors import SessionNotFound
from sqlstore.events import LogRecord
from sqlstore.integrations import transcripts
from sqlstore.model import Kind, State
from sqlstore.sqlite import browse, browse_records
from sqlstore.ui import present
from sqlstore.ui.context import Viewer

SESSIONS_PER_PAGE = 50
"""Rows of the session list per page."""

MESSAGES_PER_PAGE = 100
"""Messages of the conversation shown per page (the newest by default)."""

RECORDS_PER_PAGE = 100
"""Records of the timeline per page (the tail by default)."""

CHILDREN_SHOWN = 50
"""Child sessions listed on a session page."""

AUDIT_ROWS_SHOWN = 500
"""Tool calls listed per page of the tool-call views."""


STATE_NAMES = tuple(s.value for s in State)
KIND_NAMES = tuple(k.value for k in Kind)


class BadRequest(ValueError):
    """A query parameter the viewer cannot use; shown as a 400 page."""


def parse_day_or_time(text: str, *, end_of_day: bool) -> datetime | None:
    """Parse ``YYYY-MM-DD`` (UTC day) or an RFC 3339 time; ``""`` is None.

    Raises:
        BadRequest: neither form, or a time outside what sqlstore stores
            (nanoseconds in a signed 64-bit integer: 1677-09-21 to 2262-04-11 UTC).
    """
    text = text.strip()
    if not text:
        return None
    try:
        if len(text) == 10:
            day = datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC).date()
            moment = datetime.combine(day, time(0), tzinfo=UTC)
            moment = moment + timedelta(days=1) if end_of_day else moment
        else:
            moment = clock.parse_rfc3339(text)
        in_range = -(2**63) <= clock.to_ns(moment) < 2**63
    except OverflowError:
        in_range = False
    except ValueError:
        raise BadRequest(f"not a date (YYYY-MM-DD) or RFC 3339 time: {text!r}") from None
    if not in_range:
        raise BadRequest(
            f"{text!r} is outside the times sqlstore stores (1677-09-21 to 2262-04-11)"
        )
    return moment


def session_filter(request: Request) -> browse.SessionFilter:
    """Build the list filter from the query string."""
    q = request.query_params
    states = tuple(s for s in q.getlist("state") if s in STATE_NAMES)
    kinds = tuple(k for k in q.getlist("kind") if k in KIND_NAMES)
    label = q.get("label", "").strip()
    key, _, value = label.partition("=")
    if label and (not key or len(key) > browse.LABEL_KEY_MAX_CHARS):
        raise BadRequest("write the label filter as key=value")
    return browse.SessionFilter(
        states=states,
        kinds=kinds,
        owner=q.get("owner", "").strip(),
        label_key=key.strip(),
        label_value=value.strip(),
        text=q.get("q", "").strip(),
        modified_after=parse_day_or_time(q.get("after", ""), end_of_day=False),
        modified_before=parse_day_or_time(q.get("before", ""), end_of_day=True),
    )


def sessions_page(viewer: Viewer, request: Request) -> HTMLResponse:
    """The session list: newest first, filtered, keyset-paged both ways, with counts."""
    flt = session_filter(request)
    q = request.query_params
    try:
        listing = browse.list_sessions(
            viewer.store.db,
            flt,
            limit=SESSIONS_PER_PAGE,
            older_than=q.get("older", ""),
            newer_than=q.get("newer", ""),
            count=flt.active(),
        )
    except browse.BadListCursor as exc:
        raise BadRequest(f"{exc}; start again from the first page") from None
    counts = viewer.counts()
    matching = listing.matching if listing.matching >= 0 else counts.total
    keep = [(k, v) for k, v in q.multi_items() if k not in ("older", "newer")]
    return HTMLResponse(
        viewer.render(
            "sessions.html",
            title="Sessions",
            nav="sessions",
            listing=listing,
            matching=matching,
            counts=counts,
            flt=flt,
            raw=q,
            keep=keep,
            states=STATE_NAMES,
            kinds=KIND_NAMES,
        )
    )


def _session_id(request: Request) -> str:
    sid = request.query_params.get("id", "")
    if not sid:
        raise BadRequest("the page needs ?id=SESSION_ID")
    return sid


def session_page(viewer: Viewer, request: Request) -> HTMLResponse:
    """One session: summary, lineage, the conversation (paged) and links to its views."""
    sid = _session_id(request)
    meta = browse.session_meta(viewer.store.db, sid)
    if meta is None:
        raise SessionNotFound(sid)
    session = viewer.store.sessions.load(sid)
    rebuilt = transcripts.conversation(viewer.store, session)  # framework sessions: the log
    if rebuilt is not None:
        session.messages = rebuilt
    graph = None if viewer.threads is None else viewer.threads.lines(viewer.store, sid)
    total = len(session.messages)
    start_text = request.query_params.get("from", "")
    start = max(0, total - MESSAGES_PER_PAGE)
    if start_text:
        # isdigit() also accepts "²", which int() refuses; and int() refuses > 4,300 digits.
        if not (start_text.isascii() and start_text.isdigit() and len(start_text) <= 18):
            raise BadRequest("from= takes a message number")
        start = min(int(start_text), max(0, total - 1))
    shown = list(enumerate(session.messages[start : start + MESSAGES_PER_PAGE], start=start))
    results = {
        m.tool_result.call_id: m.tool_result for m in session.messages if m.tool_result is not None
    }
    return HTMLResponse(
        viewer.render(
            "session.html",
            title=f"Session {present.one_line(sid, 60)}",
            nav="sessions",
            meta=meta,
            session=session,
            children=browse.children(viewer.store.db, sid, limit=CHILDREN_SHOWN),
            messages=shown,
            total_messages=total,
            log_length=browse_records.log_head(viewer.store.db, sid)[1],
            start=start,
            page_size=MESSAGES_PER_PAGE,
            results=results,
            part_view=present.part_view,
            graph=graph,
        )
    )


def log_rows(viewer: Viewer, sid: str, records: list[LogRecord]) -> list[dict[str, Any]]:
    """Return the timeline rows of records read from the store, with their write times."""
    positions = [browse_records.cursor_position(r.cursor) for r in records]
    times = browse_records.record_times(viewer.store.db, sid, positions)
    out = []
    for pos, rec in zip(positions, records, strict=True):
        is_gap = rec.kind == "gap"
        body: Any = rec.gap_reason if is_gap or rec.event is None else rec.event.to_json()
        etype = "" if rec.event is None else rec.event.type
        out.append(present.record_row(pos, is_gap, etype, times.get(pos), body, rec.cursor))
    return out


def timeline_page(viewer: Viewer, request: Request) -> HTMLResponse:
    """The event log: types, times, gaps; paged both ways by cursor; live follow at the tail.

    ``?after=C`` reads forwards (``events.read_after``), ``?before=C`` backwards
    (``events.read_before``), neither the tail (``events.read_tail``): the store's own
    cursored reads, so cursors are checked exactly as everywhere else.
    """
    sid = _session_id(request)
    q = request.query_params
    after = q.get("after")
    before = q.get("before", "")
    events = viewer.store.events
    if after is not None:
        records = list(events.read_after(sid, after, limit=RECORDS_PER_PAGE))
    elif before:
        records = events.read_before(sid, before, limit=RECORDS_PER_PAGE)
    else:
        records = events.read_tail(sid, RECORDS_PER_PAGE)
    generation, length = browse_records.log_head(viewer.store.db, sid)
    if generation is None and browse.session_meta(viewer.store.db, sid) is None:
        raise SessionNotFound(sid)
    rows = log_rows(viewer, sid, records)
    first = rows[0]["pos"] if rows else 0
    last = rows[-1]["pos"] if rows else 0
    return HTMLResponse(
        viewer.render(
            "timeline.html",
            title=f"Timeline {present.one_line(sid, 60)}",
            nav="sessions",
            sid=sid,
            length=length,
            generation=generation,
            rows=rows,
            earlier=rows[0]["cursor"] if first > 1 else "",
            later=rows[-1]["cursor"] if rows and last < length else "",
            # No records: past the end after a cursor (or an empty log) follows from there.
            at_tail=last >= length if rows else (after is not None or length == 0),
            tail_cursor=rows[-1]["cursor"] if rows else (after or ""),
        )
    )


def tools_page(viewer: Viewer, request: Request) -> HTMLResponse:
    """Tool calls: one session's audit trail, or the store by tool; errors first on demand."""
    q = request.query_params
    sid = q.get("id", "")
    tool = q.get("tool", "")
    errors_first = q.get("errors") == "first"
    summaries: list[browse_records.ToolSummary] = []
    if sid:
        records = browse_records.session_calls(viewer.store.db, sid, limit=AUDIT_ROWS_SHOWN)
        if not records and browse.session_meta(viewer.store.db, sid) is None:
            raise SessionNotFound(sid)
    elif tool:
        records = browse_records.tool_calls(viewer.store.db, tool, limit=AUDIT_ROWS_SHOWN)
    else:
        records = []
        summaries = browse_records.tool_summaries(viewer.store.db)
    truncated = len(records) > AUDIT_ROWS_SHOWN
    records = records[-AUDIT_ROWS_SHOWN:]  # the newest, in record order
    if errors_first:
        records.sort(key=lambda r: not r.is_error)  # stable: record order within each group
    longest = max((r.took_us for r in records), default=0)
    return HTMLResponse(
        viewer.render(
            "tools.html",
            title="Tool calls",
            nav="tools",
            sid=sid,
            tool=tool,
            errors_first=errors_first,
            records=records,
            truncated=truncated,
            longest=max(longest, 1),
            summaries=summaries,
            longest_mean=max((s.mean_took_us for s in summaries), default=1) or 1,
        )
    )
