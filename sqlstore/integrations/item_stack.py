"""A stack of items kept in an append-only event log: push by appending, pop by a marker.

The OpenAI Agents SDK's session is a list with "append many" and "remove the
newest" (``pop_item``). The event log never changes a record, so the list is
defined by replaying the log in order: an *item* record pushes its item, a *pop*
record pops the newest one, any other record (a gap, a host's own event) is
ignored. Each pop record stores ``top``: the log position of the item that is
newest once the pop is done (0: none), so the list can be read from the end
without a replay. The item that precedes an item record at position ``p`` is
whatever is newest at ``p - 1``: the record at ``p - 1`` if it is an item, the
``top`` of a pop record there, or — for any other record — the answer at
``p - 2``. Reading the newest ``n`` items therefore costs ``n`` records plus one
index seek per pop they span, however long the history is.

Reads from the end use ``read_data_before`` (positions, types and data, no
cursor built per record); a forward replay takes positions from the records'
cursors (:func:`sqlstore.cursor.parse_cursor`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from sqlstore.cursor import encode_cursor, parse_cursor
from sqlstore.events import DataPage, Event, LogRecord
from sqlstore.model import JSON
from sqlstore.ports import EventLog

ITEM_EVENT = "openai_agents.item"
"""Event type of one session item (``data.item``, or ``data.item_json`` for exotic values)."""

POP_EVENT = "openai_agents.pop"
"""Event type of one ``pop_item`` (``data.top``: the newest item's position afterwards)."""

READ_ALL_CHUNK_RECORDS = 1_000
"""Records fetched per backward read when the whole list is wanted."""

ReadData = Callable[[str, int], DataPage]

ItemData = dict[str, JSON]
"""The ``data`` of an item record (``{"item": …}`` or ``{"item_json": …}``)."""


def newest(log: EventLog, session_id: str, limit: int | None) -> list[tuple[int, ItemData]]:
    """Return up to ``limit`` live items, newest first, as (position, the item record's data).

    ``limit=None`` returns every live item. Reads happen in separate short
    transactions (``read_data_before``: no cursor or ``Event`` built per
    record); records never change, so the answer is the list as it was at the
    first read, unless the log is deleted meanwhile (then the store raises
    ``CursorExpired`` and the caller reads again).
    """

    def read(before: str, count: int) -> DataPage:
        return log.read_data_before(session_id, before, limit=count)

    return list(_walk(session_id, read, limit))


def _walk(session_id: str, read: ReadData, limit: int | None) -> Iterator[tuple[int, ItemData]]:
    wanted = READ_ALL_CHUNK_RECORDS if limit is None else limit
    if wanted <= 0:
        return
    found = 0
    generation = ""
    chunk: dict[int, tuple[str, ItemData | None]] = {}
    want: int | None = None  # the position to interpret next; None: the last record
    before = ""
    while want is None or want > 0:
        if want is None or want not in chunk:
            if want is not None:
                before = encode_cursor(session_id, generation, want + 1)
            count = wanted - found if limit is not None else READ_ALL_CHUNK_RECORDS
            page = read(before, max(count, 1))
            if not page.records:
                return
            generation = page.generation
            chunk = {pos: (kind, data) for pos, kind, data in page.records}
            if want is None:
                want = page.records[-1][0]
            elif want not in chunk:
                raise AssertionError(f"log position {want} was not returned")  # pragma: no cover
        kind, data = chunk[want]
        if kind == ITEM_EVENT and data is not None:
            yield want, data
            found += 1
            if limit is not None and found >= limit:
                return
            want -= 1
        elif kind == POP_EVENT and data is not None:
            top = data.get("top")
            want = top if isinstance(top, int) and 0 <= top < want else 0
        else:
            want -= 1


def pop_record(popped: int, top: int) -> Event:
    """Return the pop record for the item at ``popped``; ``top`` is the newest item left."""
    return Event(POP_EVENT, data={"popped": popped, "top": top})


def replay(records: Sequence[LogRecord] | Iterator[LogRecord], session_id: str) -> list[Event]:
    """Return the live item events, oldest first, by replaying a whole log forwards."""
    stack: list[tuple[int, Event]] = []
    for rec in records:
        event = rec.event
        if event is None:
            continue
        if event.type == ITEM_EVENT:
            stack.append((parse_cursor(rec.cursor, session_id)[1], event))
        elif event.type == POP_EVENT:
            top = event.data.get("top")
            limit = top if isinstance(top, int) else 0
            while stack and stack[-1][0] > limit:
                stack.pop()
    return [event for _, event in stack]
