"""Live follow of a timeline: server-sent events fed by ``events.read_after(follow=True)``.

``GET /stream?id=SESSION&after=CURSOR`` answers ``text/event-stream``. One
thread per stream runs the store's own following read (which, across
processes, polls ``PRAGMA data_version`` and wakes within milliseconds of a
commit) and hands each record to the event loop; the response sends it as
``event: record`` with the record's cursor as the SSE ``id``, so a browser that
reconnects (``EventSource`` does so by itself) resumes after the last record it
got (``Last-Event-ID``). A comment line every :data:`HEARTBEAT_S` keeps proxies
and the browser from timing out an idle stream.

The stream ends when the browser goes away, when the server stops (every
stream's stop event is set), or with ``event: failure`` when the log can no
longer be followed (for example ``CursorExpired``: the session was deleted and
recreated).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import AsyncIterator
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse

from sqlstore.errors import StoreError
from sqlstore.events import LogRecord
from sqlstore.ui.context import Viewer
from sqlstore.ui.pages import log_rows

HEARTBEAT_S = 15.0
"""Seconds between keep-alive comments on an idle stream."""

BATCH_MAX_RECORDS = 256
"""Records sent per wake-up at most (a burst is split into several batches)."""

_END = object()


def _frame(event: str, data: Any, event_id: str = "") -> str:
    lines = [f"event: {event}"]
    if event_id:
        lines.append(f"id: {event_id}")
    lines.append("data: " + json.dumps(data, ensure_ascii=False))
    return "\n".join(lines) + "\n\n"


async def stream(viewer: Viewer, request: Request) -> Response:
    """Serve the live records of one log after a cursor."""
    sid = request.query_params.get("id", "")
    after = request.headers.get("last-event-id") or request.query_params.get("after", "")
    if not sid:
        return PlainTextResponse("the stream needs ?id=SESSION_ID\n", status_code=400)
    try:  # a bad cursor is refused up front, with a status the page can show
        await run_in_threadpool(lambda: list(viewer.store.events.read_after(sid, after, limit=1)))
    except StoreError as exc:
        return PlainTextResponse(f"{exc}\n", status_code=400)
    stop = viewer.open_stream()
    if stop is None:
        return PlainTextResponse("too many live streams; try again later\n", status_code=503)
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Any] = asyncio.Queue()

    def put(item: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed while shutting down
            loop.call_soon_threadsafe(queue.put_nowait, item)

    def pump() -> None:
        try:
            for record in viewer.store.events.read_after(sid, after, follow=True, stop=stop):
                put(record)
        except StoreError as exc:
            put(exc)
        finally:
            put(_END)

    threading.Thread(target=pump, name=f"sqlstore-ui-live-{sid[:40]}", daemon=True).start()
    return StreamingResponse(
        _frames(viewer, sid, queue, stop),
        media_type="text/event-stream",
        headers={"x-accel-buffering": "no"},
    )


async def _frames(
    viewer: Viewer, sid: str, queue: asyncio.Queue[Any], stop: threading.Event
) -> AsyncIterator[str]:
    try:
        yield "retry: 1000\n\n"
        while True:
            try:
                item = await asyncio.wait_for(queue.get(), HEARTBEAT_S)
            except TimeoutError:
                yield ": keep-alive\n\n"
                continue
            batch = [item]
            while len(batch) < BATCH_MAX_RECORDS and not queue.empty():
                batch.append(queue.get_nowait())
            records = [r for r in batch if isinstance(r, LogRecord)]
            if records:
                for frame in await run_in_threadpool(_record_frames, viewer, sid, records):
                    yield frame
            failure = next((x for x in batch if isinstance(x, StoreError)), None)
            if failure is not None:
                yield _frame("failure", {"error": str(failure), "hint": failure.hint or ""})
                return
            if any(x is _END for x in batch):
                yield _frame("end", {})
                return
    finally:
        viewer.close_stream(stop)


def _record_frames(viewer: Viewer, sid: str, records: list[LogRecord]) -> list[str]:
    return [_frame("record", row, row["cursor"]) for row in log_rows(viewer, sid, records)]
