"""``CursorSuite``: cursored reads of ``store.events`` (SPEC §3.2; mecatl 8.8, all 16 cases).

Needs ``make_store`` and ``make_pair``; the cross-process cases also need
``second_process_target``. ``reset_log`` (default: ``sessions.delete``) is how
a log is replaced by a new generation. Follows run on a background thread and
every wait is bounded by ``FOLLOW_TIMEOUT_S``.
"""

from __future__ import annotations

import base64
import json
import threading
import time

import pytest

from sqlstore.conformance.base import (
    FOLLOW_TIMEOUT_S,
    ProcessTarget,
    SuiteBase,
    needs_second_process,
)
from sqlstore.conformance.fixtures import numbered
from sqlstore.conformance.follow import Follower
from sqlstore.conformance.process import workers
from sqlstore.errors import CursorExpired, CursorMalformed
from sqlstore.events import Event, LogRecord
from sqlstore.ports import EventLog, Store

LIVE_ATTEMPTS = 40
"""Appends tried (50 ms apart) until one arrives after the follower has drained the log."""


def drain(events: EventLog, session_id: str, after: str = "", limit: int = 0) -> list[LogRecord]:
    """Read every record after ``after`` (no follow), checking each carries a cursor."""
    records = list(events.read_after(session_id, after, limit=limit))
    assert all(r.cursor for r in records), "a record came back with an empty cursor"
    return records


def texts(records: list[LogRecord]) -> list[str]:
    """Return the event texts of ``records`` ("<gap>" for a gap)."""
    return ["<gap>" if r.event is None else r.event.text for r in records]


def cursor_doc(cursor: str) -> dict[str, object]:
    """Decode a ``cur/1`` cursor to its JSON object."""
    raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    doc = json.loads(raw)
    assert isinstance(doc, dict)
    return doc


def craft(doc: object) -> str:
    """Encode any JSON value the way a cursor is encoded (unpadded base64url)."""
    raw = json.dumps(doc, separators=(",", ":")).encode("utf-8")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


MALFORMED_VARIANTS = (
    "not base64",
    "base64 of non-JSON",
    "unknown version",
    "unknown field",
    "foreign session",
    "non-string field",
    "JSON array",
    "foreign session, other generation",
    "unknown version, other generation",
)


def malformed_variants(real: str) -> dict[str, str]:
    """Return the strictly malformed cursors derived from a real cursor of the same log."""
    doc = cursor_doc(real)
    return {
        "not base64": "%%not*base64%%",
        "base64 of non-JSON": base64.urlsafe_b64encode(b"not json at all").decode().rstrip("="),
        "unknown version": craft({**doc, "v": "cur/999"}),
        "unknown field": craft({**doc, "x": "1"}),
        "foreign session": craft({**doc, "s": "conf-someone-else"}),
        "non-string field": craft({**doc, "p": 1}),
        "JSON array": craft([doc["v"], doc["s"], doc["g"], doc["p"]]),
        # Malformed is decided before the generation is compared (SPEC §3.2 order).
        "foreign session, other generation": craft(
            {**doc, "s": "conf-someone-else", "g": "0123456789abcdef"}
        ),
        "unknown version, other generation": craft(
            {**doc, "v": "cur/999", "g": "0123456789abcdef"}
        ),
    }


class CursorSuite(SuiteBase):
    """Cursors resume exactly, limits are total budgets, follows see new and reset logs."""

    __test__ = False

    def test_cursor_replay_from_start(self, store: Store) -> None:
        """append_event returns distinct cursors; read_after('') replays them, not live."""
        cursors = [store.events.append_event("conf-cur", e) for e in numbered(4)]
        assert all(cursors) and len(set(cursors)) == 4
        records = drain(store.events, "conf-cur")
        assert [r.kind for r in records] == ["event"] * 4
        assert [r.live for r in records] == [False] * 4
        assert [r.cursor for r in records] == cursors
        assert [r.event for r in records] == numbered(4)

    def test_cursor_resumes_strictly_after(self, store: Store) -> None:
        """For each of 5 cursors, a read gives exactly the records after it."""
        cursors = [store.events.append_event("conf-cur", e) for e in numbered(5)]
        for index, cursor in enumerate(cursors):
            records = drain(store.events, "conf-cur", cursor)
            assert texts(records) == [f"e-{i}" for i in range(index + 1, 5)], index
            assert [r.cursor for r in records] == cursors[index + 1 :]

    def test_cursor_newest_yields_nothing(self, store: Store) -> None:
        """The cursor of the last record reads nothing."""
        cursors = [store.events.append_event("conf-cur", e) for e in numbered(3)]
        assert drain(store.events, "conf-cur", cursors[-1]) == []

    def test_cursor_unknown_id_is_empty(self, store: Store) -> None:
        """read_after of an id without a log is an empty sequence."""
        assert drain(store.events, "conf-cur-unknown") == []
        assert drain(store.events, "conf-cur-unknown", limit=3) == []

    def test_cursor_limit_pages_resume_exactly(self, store: Store) -> None:
        """Pages of limit 3 over 10 records skip and repeat nothing; the last cursor resumes."""
        cursors = [store.events.append_event("conf-cur", e) for e in numbered(10)]
        seen: list[LogRecord] = []
        after = ""
        sizes = []
        while True:
            page = drain(store.events, "conf-cur", after, limit=3)
            sizes.append(len(page))
            if not page:
                break
            seen.extend(page)
            after = page[-1].cursor
        assert sizes == [3, 3, 3, 1, 0]
        assert [r.cursor for r in seen] == cursors
        assert texts(seen) == [f"e-{i}" for i in range(10)]

    def test_cursor_legacy_append_in_cursor_space(self, store: Store) -> None:
        """A plain append takes a position between cursored appends and is read after them."""
        first = store.events.append_event("conf-cur", Event(type="note", text="one"))
        store.events.append("conf-cur", Event(type="note", text="legacy"))
        third = store.events.append_event("conf-cur", Event(type="note", text="three"))
        records = drain(store.events, "conf-cur", first)
        assert texts(records) == ["legacy", "three"]
        assert records[1].cursor == third
        assert texts(drain(store.events, "conf-cur", records[0].cursor)) == ["three"]

    def test_cursor_foreign_cursor_is_malformed(self, store: Store) -> None:
        """A cursor issued for session A is rejected on session B, never resolved."""
        a_cursors = [store.events.append_event("conf-cur-a", e) for e in numbered(5)]
        for event in numbered(5):
            store.events.append_event("conf-cur-b", event)
        for cursor in (a_cursors[0], a_cursors[2]):
            with pytest.raises(CursorMalformed):
                drain(store.events, "conf-cur-b", cursor)

    def test_cursor_gap_uses_a_limit_slot(self, store: Store) -> None:
        """[event, gap, event] read with limit 2 gives [event, gap]; resuming gives the event."""
        store.events.append_event("conf-cur", Event(type="note", text="before"))
        gap = store.events.append_gap("conf-cur", "lost 3 records")
        store.events.append_event("conf-cur", Event(type="note", text="after"))
        records = drain(store.events, "conf-cur", limit=2)
        assert [r.kind for r in records] == ["event", "gap"]
        assert records[1].cursor == gap and records[1].event is None
        assert records[1].gap_reason == "lost 3 records"
        assert texts(drain(store.events, "conf-cur", records[1].cursor)) == ["after"]

    def test_cursor_limit_ends_a_follow(self, store: Store) -> None:
        """A following read with limit 2 over 3 records ends by itself after 2."""
        for event in numbered(3):
            store.events.append_event("conf-cur", event)
        follower = Follower(store.events, "conf-cur", limit=2)
        assert follower.wait_end() is None
        assert texts(follower.pending()) == ["e-0", "e-1"]

    def test_cursor_follow_delivers_live_appends(self, store: Store) -> None:
        """A follower gets old records not live, later appends live, and ends cleanly on stop."""
        store.events.append_event("conf-cur", Event(type="note", text="existing"))
        with Follower(store.events, "conf-cur") as follower:
            first = follower.take(1)[0]
            assert (texts([first]), first.live) == (["existing"], False)
            live: list[LogRecord] = []
            for attempt in range(LIVE_ATTEMPTS):
                time.sleep(0.05)  # give the follower time to reach the tail (not asserted)
                cursor = store.events.append_event(
                    "conf-cur", Event(type="note", text=f"n{attempt}")
                )
                record = follower.take(1)[0]
                assert (texts([record]), record.cursor) == ([f"n{attempt}"], cursor)
                if record.live:
                    live.append(record)
                    break
            assert live, "no appended record was delivered with live=True"
            store.events.append_event("conf-cur", Event(type="note", text="later"))
            assert follower.take(1)[0].live is True
        assert follower.error is None

    def test_cursor_gap_is_skipped_by_read(self, store: Store) -> None:
        """A gap has a cursor and reason, resuming from it gives the next event; read skips it."""
        store.events.append_event("conf-cur", Event(type="note", text="before"))
        gap = store.events.append_gap("conf-cur", "producer restarted")
        store.events.append_event("conf-cur", Event(type="note", text="after"))
        assert gap
        gaps = [r for r in drain(store.events, "conf-cur") if r.kind == "gap"]
        assert [(g.cursor, g.gap_reason) for g in gaps] == [(gap, "producer restarted")]
        assert texts(drain(store.events, "conf-cur", gap)) == ["after"]
        assert [e.text for e in store.events.read("conf-cur")] == ["before", "after"]

    def test_cursor_expires_after_reset(self, store: Store) -> None:
        """After the log is reset and recreated, an old cursor raises CursorExpired."""
        cursors = [store.events.append_event("conf-cur", e) for e in numbered(3)]
        self.reset_log(store, "conf-cur")
        store.events.append_event("conf-cur", Event(type="note", text="new log"))
        with pytest.raises(CursorExpired):
            drain(store.events, "conf-cur", cursors[1])
        assert texts(drain(store.events, "conf-cur")) == ["new log"]

    def test_cursor_reset_during_follow_expires(self, store: Store) -> None:
        """A follower parked at the tail gets CursorExpired when the log is reset."""
        store.events.append_event("conf-cur", Event(type="note", text="old"))
        follower = Follower(store.events, "conf-cur")
        try:
            assert texts(follower.take(1)) == ["old"]
            store.events.append_event("conf-cur", Event(type="note", text="old-2"))
            assert texts(follower.take(1)) == ["old-2"]
            time.sleep(0.05)  # let the follower park at the tail (either way it must expire)
            self.reset_log(store, "conf-cur")
            store.events.append_event("conf-cur", Event(type="note", text="new log"))
            error = follower.wait_end()
        finally:
            follower.stop.set()
        assert isinstance(error, CursorExpired), f"follower ended with {error!r}"
        assert "new log" not in texts(follower.pending())

    @pytest.mark.parametrize("variant", MALFORMED_VARIANTS)
    def test_cursor_malformed_is_rejected(self, store: Store, variant: str) -> None:
        """Each strictly malformed cursor raises CursorMalformed."""
        real = store.events.append_event("conf-cur", Event(type="note"))
        store.events.append_event("conf-cur", Event(type="note"))
        with pytest.raises(CursorMalformed):
            drain(store.events, "conf-cur", malformed_variants(real)[variant])

    @pytest.mark.parametrize("position", ["999", "-1", "abc", ""])
    def test_cursor_unresolvable_position(self, store: Store, position: str) -> None:
        """A current-generation cursor naming no record boundary raises Malformed or Expired."""
        real = store.events.append_event("conf-cur", Event(type="note"))
        store.events.append_event("conf-cur", Event(type="note"))
        bad = craft({**cursor_doc(real), "p": position})
        with pytest.raises((CursorMalformed, CursorExpired)):
            drain(store.events, "conf-cur", bad)

    def test_cursor_follow_sees_concurrent_appends(self, store: Store) -> None:
        """50 appends made while following all arrive in order, with the cursors append returned."""
        cursors: list[str] = []
        with Follower(store.events, "conf-cur") as follower:
            appender = threading.Thread(
                target=lambda: cursors.extend(
                    store.events.append_event("conf-cur", e) for e in numbered(50)
                )
            )
            appender.start()
            records = follower.take(50)
            appender.join(follower.timeout_s)
        assert texts(records) == [f"e-{i}" for i in range(50)]
        assert [r.cursor for r in records] == cursors

    def test_cursor_follower_adopts_a_new_log(self, store: Store) -> None:
        """A follower started before the log exists receives its records without expiring."""
        with Follower(store.events, "conf-cur-later") as follower:
            time.sleep(0.1)  # let the follower park before the log exists (not asserted)
            first = store.events.append_event("conf-cur-later", Event(type="note", text="one"))
            assert [r.cursor for r in follower.take(1)] == [first]
            second = store.events.append_event("conf-cur-later", Event(type="note", text="two"))
            assert [r.cursor for r in follower.take(1)] == [second]
        assert follower.error is None

    def test_cursor_second_handle_observes(self, pair: tuple[Store, Store]) -> None:
        """A second handle on the same state replays, resumes and follows the first's appends."""
        first, second = pair
        cursors = [first.events.append_event("conf-cur", e) for e in numbered(3)]
        assert [r.cursor for r in drain(second.events, "conf-cur")] == cursors
        assert texts(drain(second.events, "conf-cur", cursors[0])) == ["e-1", "e-2"]
        with Follower(second.events, "conf-cur", cursors[-1]) as follower:
            live = first.events.append_event("conf-cur", Event(type="note", text="from first"))
            record = follower.take(1)[0]
        assert (texts([record]), record.cursor) == (["from first"], live)
        assert [e.text for e in second.events.read("conf-cur")][-1] == "from first"

    @needs_second_process
    def test_cursor_second_process_appends_while_parent_follows(
        self, pair: tuple[Store, Store], process_target: ProcessTarget
    ) -> None:
        """Events a child process appends reach a follower in the parent, in order."""
        first, _ = pair
        start = first.events.append_event("conf-cur", Event(type="note", text="parent"))
        with (
            workers(process_target, 1) as (child,),
            Follower(first.events, "conf-cur", start) as follower,
        ):
            sent = [e.to_json() for e in numbered(5, "child")]
            cursors = child.call("append", "conf-cur", sent)
            records = follower.take(5)
        assert texts(records) == [f"child-{i}" for i in range(5)]
        assert [r.cursor for r in records] == cursors

    @needs_second_process
    def test_cursor_second_process_creates_log_a_follower_waits_for(
        self, pair: tuple[Store, Store], process_target: ProcessTarget
    ) -> None:
        """A parent follower started before the log exists adopts the log a child creates."""
        first, _ = pair
        with (
            workers(process_target, 1) as (child,),
            Follower(first.events, "conf-cur-new") as follower,
        ):
            time.sleep(0.1)  # let the follower park before the log exists (not asserted)
            sent = [e.to_json() for e in numbered(3, "child")]
            cursors = child.call("append", "conf-cur-new", sent)
            records = follower.take(3)
        assert follower.error is None
        assert texts(records) == ["child-0", "child-1", "child-2"]
        assert [r.cursor for r in records] == cursors

    @needs_second_process
    def test_cursor_second_process_reset_expires_parent_follower(
        self, pair: tuple[Store, Store], process_target: ProcessTarget
    ) -> None:
        """A child deleting and recreating the log expires a follower parked in the parent."""
        first, _ = pair
        start = first.events.append_event("conf-cur", Event(type="note", text="old"))
        with workers(process_target, 1) as (child,):
            follower = Follower(first.events, "conf-cur", start)
            try:
                first.events.append_event("conf-cur", Event(type="note", text="old-2"))
                assert texts(follower.take(1)) == ["old-2"]
                time.sleep(0.05)  # let the follower park at the tail (either way it must expire)
                child.call("delete", "conf-cur")
                child.call("append", "conf-cur", [Event(type="note", text="new log").to_json()])
                error = follower.wait_end()
            finally:
                follower.stop.set()
        assert isinstance(error, CursorExpired), f"follower ended with {error!r}"
        assert "new log" not in texts(follower.pending())

    @needs_second_process
    def test_cursor_second_process_follows_parent_appends(
        self, pair: tuple[Store, Store], process_target: ProcessTarget
    ) -> None:
        """A child process following the log receives the parent's later appends in order."""
        first, _ = pair
        start = first.events.append_event("conf-cur", Event(type="note", text="parent"))
        with workers(process_target, 1) as (child,):
            child.send("follow", "conf-cur", start, 5, FOLLOW_TIMEOUT_S)
            assert child.receive() == "following"
            cursors = [first.events.append_event("conf-cur", e) for e in numbered(5, "p")]
            records = child.receive(FOLLOW_TIMEOUT_S + 5)
        assert [r["event"]["text"] for r in records] == [f"p-{i}" for i in range(5)]
        assert [r["cursor"] for r in records] == cursors
