"""``TailSuite``: ``events.read_tail``, backward paging with ``events.read_before``, and
its lean form ``events.read_data_before``.

Pins the rules of :mod:`sqlstore.backward`: the newest records in append order
with gaps and cursors, pages that walk back to the start without overlap, the
cursor errors of ``read_after``, and the argument errors for limits.
"""

from __future__ import annotations

import base64
import json

import pytest

from sqlstore.conformance.base import SuiteBase
from sqlstore.conformance.fixtures import numbered
from sqlstore.cursor import encode_cursor, parse_cursor
from sqlstore.errors import CursorExpired, CursorMalformed, InvalidSessionId
from sqlstore.events import Event, LogRecord
from sqlstore.ports import Store

PAGED_RECORDS = 23
PAGE = 5


def texts(records: list[LogRecord]) -> list[str]:
    """Return each record's event text, or ``gap:<reason>`` for a gap."""
    return [r.event.text if r.event is not None else f"gap:{r.gap_reason}" for r in records]


class TailSuite(SuiteBase):
    """The end of a log reads newest-last, page by page backwards, with resumable cursors."""

    __test__ = False

    def test_tail_returns_the_last_records_in_append_order(self, store: Store) -> None:
        """read_tail(id, 3) of 10 records is records 8-10 with the cursors read_after gives."""
        store.events.append_events("conf-tail-last", numbered(10, "t"))
        tail = store.events.read_tail("conf-tail-last", 3)
        forward = list(store.events.read_after("conf-tail-last"))[-3:]
        assert tail == forward
        assert texts(tail) == ["t-7", "t-8", "t-9"]
        assert not any(r.live for r in tail)

    def test_tail_includes_gaps_and_short_logs(self, store: Store) -> None:
        """Gaps are records of the tail; a limit above the length returns the whole log."""
        store.events.append_event("conf-tail-gap", Event(type="note", text="a"))
        store.events.append_gap("conf-tail-gap", "lost")
        store.events.append_event("conf-tail-gap", Event(type="note", text="b"))
        assert texts(store.events.read_tail("conf-tail-gap", 2)) == ["gap:lost", "b"]
        assert texts(store.events.read_tail("conf-tail-gap", 100)) == ["a", "gap:lost", "b"]

    def test_tail_of_unknown_id_is_empty(self, store: Store) -> None:
        """An id without a log has an empty tail and nothing before its end."""
        assert store.events.read_tail("conf-tail-unknown", 5) == []
        assert store.events.read_before("conf-tail-unknown", "", limit=5) == []

    def test_tail_pages_backwards_to_the_start_without_overlap(self, store: Store) -> None:
        """Pages of 5 from the end, each before the previous page's first cursor, cover 23 once."""
        store.events.append_events("conf-tail-page", numbered(PAGED_RECORDS, "p"))
        pages = [store.events.read_tail("conf-tail-page", PAGE)]
        while pages[-1]:
            pages.append(
                store.events.read_before("conf-tail-page", pages[-1][0].cursor, limit=PAGE)
            )
        assert [len(p) for p in pages] == [5, 5, 5, 5, 3, 0]
        walked = [text for page in reversed(pages) for text in texts(page)]
        assert walked == [f"p-{i}" for i in range(PAGED_RECORDS)]
        assert store.events.read_before("conf-tail-page", "", limit=PAGE) == pages[0]

    def test_tail_cursors_resume_forwards(self, store: Store) -> None:
        """read_after from a tail record's cursor yields exactly the records after it."""
        store.events.append_events("conf-tail-resume", numbered(6, "r"))
        tail = store.events.read_tail("conf-tail-resume", 2)
        store.events.append_event("conf-tail-resume", Event(type="note", text="new"))
        after = list(store.events.read_after("conf-tail-resume", tail[0].cursor))
        assert texts(after) == ["r-5", "new"]
        middle = store.events.read_before("conf-tail-resume", tail[1].cursor, limit=2)
        assert texts(middle) == ["r-3", "r-4"]

    def test_tail_limits_must_be_positive_ints(self, store: Store) -> None:
        """Limits of 0 or below are ValueErrors, non-ints TypeErrors, bad ids InvalidSessionId."""
        store.events.append_events("conf-tail-limit", numbered(2))
        for bad in (0, -1):
            with pytest.raises(ValueError, match="limit"):
                store.events.read_tail("conf-tail-limit", bad)
            with pytest.raises(ValueError, match="limit"):
                store.events.read_before("conf-tail-limit", "", limit=bad)
        for wrong in (True, "3", 2.0, None):
            with pytest.raises(TypeError, match="limit"):
                store.events.read_tail("conf-tail-limit", wrong)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="before"):
            store.events.read_before("conf-tail-limit", None, limit=2)  # type: ignore[arg-type]
        with pytest.raises(InvalidSessionId):
            store.events.read_tail("", 2)

    def test_tail_foreign_and_bad_cursors_are_malformed(self, store: Store) -> None:
        """Another session's cursor, garbage, or a position past the end → CursorMalformed."""
        other = store.events.append_events("conf-tail-other", numbered(2))
        mine = store.events.append_events("conf-tail-own", numbered(2))
        for bad in (other[0], "!!!", "eyJ2IjoiY3VyLzEifQ"):
            with pytest.raises(CursorMalformed):
                store.events.read_before("conf-tail-own", bad, limit=2)
        assert store.events.read_tail("conf-tail-own", 1)[0].cursor == mine[-1]
        past_end = _with_position(mine[-1], "conf-tail-own", 9)
        with pytest.raises(CursorMalformed, match="past the end"):
            store.events.read_before("conf-tail-own", past_end, limit=2)

    def test_tail_cursor_of_a_replaced_log_has_expired(self, store: Store) -> None:
        """After the log is reset, a cursor of the old generation raises CursorExpired."""
        cursors = store.events.append_events("conf-tail-expired", numbered(3))
        self.reset_log(store, "conf-tail-expired")
        with pytest.raises(CursorExpired):
            store.events.read_before("conf-tail-expired", cursors[-1], limit=2)
        store.events.append_events("conf-tail-expired", numbered(4))
        with pytest.raises(CursorExpired):
            store.events.read_before("conf-tail-expired", cursors[-1], limit=2)

    def test_data_tail_matches_read_before(self, store: Store) -> None:
        """read_data_before is read_before as (position, type, data); a gap is ("", None)."""
        sid = "conf-data-tail"
        store.events.append_events(sid, numbered(4, "d"))
        store.events.append_gap(sid, "lost")
        store.events.append_event(sid, Event(type="note", data={"k": [1, "two", None]}))
        for limit in (1, 3, 100):
            page = store.events.read_data_before(sid, limit=limit)
            records = store.events.read_before(sid, "", limit=limit)
            assert [pos for pos, _, _ in page.records] == [
                _position(r.cursor, sid) for r in records
            ]
            assert [(kind, data) for _, kind, data in page.records] == [
                ("", None) if r.event is None else (r.event.type, r.event.data) for r in records
            ]
            cursor = encode_cursor(sid, page.generation, page.records[-1][0])
            assert cursor == records[-1].cursor
        tail = store.events.read_data_before(sid, limit=2).records
        assert tail == [(5, "", None), (6, "note", {"k": [1, "two", None]})]

    def test_data_pages_walk_back_without_overlap(self, store: Store) -> None:
        """Pages of read_data_before, each before its predecessor's first record, cover the log."""
        sid = "conf-data-page"
        store.events.append_events(sid, numbered(PAGED_RECORDS, "p"))
        seen: list[int] = []
        page = store.events.read_data_before(sid, limit=PAGE)
        while page.records:
            seen[:0] = [pos for pos, _, _ in page.records]
            before = encode_cursor(sid, page.generation, page.records[0][0])
            page = store.events.read_data_before(sid, before, limit=PAGE)
        assert seen == list(range(1, PAGED_RECORDS + 1))

    def test_data_tail_errors_are_read_befores(self, store: Store) -> None:
        """Unknown id → empty page; bad limits, foreign and expired cursors raise as read_before."""
        assert store.events.read_data_before("conf-data-none", limit=3).records == []
        with pytest.raises(ValueError, match="limit"):
            store.events.read_data_before("conf-data-none", limit=0)
        other = store.events.append_events("conf-data-other", numbered(2))
        cursors = store.events.append_events("conf-data-err", numbered(3))
        with pytest.raises(CursorMalformed):
            store.events.read_data_before("conf-data-err", other[0], limit=2)
        self.reset_log(store, "conf-data-err")
        with pytest.raises(CursorExpired):
            store.events.read_data_before("conf-data-err", cursors[-1], limit=2)


def _with_position(cursor: str, session_id: str, position: int) -> str:
    """Return a cursor of the same log generation as ``cursor`` but at ``position``."""
    raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    generation = json.loads(raw)["g"]
    return encode_cursor(session_id, generation, position)


def _position(cursor: str, session_id: str) -> int:
    """Return the position a cursor names."""
    return parse_cursor(cursor, session_id)[1]
