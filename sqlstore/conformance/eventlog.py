"""``EventLogSuite``: the plain ``append``/``read`` contract of ``store.events`` (mecatl 8.7)."""

from __future__ import annotations

import json
import threading

from sqlstore.conformance.base import FOLLOW_TIMEOUT_S, SuiteBase
from sqlstore.conformance.fixtures import numbered, representative_events
from sqlstore.events import MAX_RECORD_BYTES, Event
from sqlstore.ports import Store

LARGE_EVENT_TEXT = "0123456789abcdefghijklmnopqrstuvwxyzABC\n" * 4096  # 40 chars x 4096
FRAMING_EVENTS = 80
FRAMING_EVENT_BYTES = 64 * 1024
HUGE_EVENT_BYTES = 16 * 2**20
CONCURRENT_IDS = 8
CONCURRENT_APPENDS = 25
READ_EVERY = 5


def event_json(event: Event) -> str:
    """Return the event re-marshalled to canonical JSON text, for whole-event comparison."""
    return json.dumps(event.to_json(), sort_keys=True, ensure_ascii=False)


class EventLogSuite(SuiteBase):
    """Events come back in append order, per id, whole, and reads never block writers."""

    __test__ = False

    def test_eventlog_append_then_read_in_order(self, store: Store) -> None:
        """Representative events read back in append order with every field intact."""
        events = representative_events("conf-eventlog-order")
        for event in events:
            store.events.append("conf-eventlog-order", event)
        got = list(store.events.read("conf-eventlog-order"))
        assert [(e.type, e.seq, e.turn, e.text) for e in got] == [
            (e.type, e.seq, e.turn, e.text) for e in events
        ]
        assert [event_json(e) for e in got] == [event_json(e) for e in events]

    def test_eventlog_unknown_id_reads_empty(self, store: Store) -> None:
        """Reading an id that never had events yields nothing and raises nothing."""
        assert list(store.events.read("conf-eventlog-unknown")) == []

    def test_eventlog_ids_keep_distinct_logs(self, store: Store) -> None:
        """Interleaved appends to two ids stay in their own logs."""
        for index in range(4):
            store.events.append("conf-log-a", Event(type="note", seq=index, text=f"a{index}"))
            store.events.append("conf-log-b", Event(type="note", seq=index, text=f"b{index}"))
        assert [e.text for e in store.events.read("conf-log-a")] == ["a0", "a1", "a2", "a3"]
        assert [e.text for e in store.events.read("conf-log-b")] == ["b0", "b1", "b2", "b3"]

    def test_eventlog_read_does_not_reorder_by_seq(self, store: Store) -> None:
        """Events with seq 30, 10, 20 come back as 30, 10, 20."""
        for seq in (30, 10, 20):
            store.events.append("conf-log-seq", Event(type="note", seq=seq))
        assert [e.seq for e in store.events.read("conf-log-seq")] == [30, 10, 20]

    def test_eventlog_large_event_round_trips(self, store: Store) -> None:
        """One event of 160 KiB of text round-trips exactly."""
        assert len(LARGE_EVENT_TEXT) == 163_840
        event = Event(type="tool.result", seq=1, text=LARGE_EVENT_TEXT, data={"n": 1})
        store.events.append("conf-log-large", event)
        assert list(store.events.read("conf-log-large")) == [event]

    def test_eventlog_many_large_events_in_order(self, store: Store) -> None:
        """80 events of 64 KiB each, with a unique %05d: prefix, come back all and in order."""
        filler = "x" * (FRAMING_EVENT_BYTES - 6)
        for index in range(FRAMING_EVENTS):
            store.events.append("conf-log-frames", Event(type="note", text=f"{index:05d}:{filler}"))
        got = [e.text for e in store.events.read("conf-log-frames")]
        assert len(got) == FRAMING_EVENTS
        assert [text[:6] for text in got] == [f"{i:05d}:" for i in range(FRAMING_EVENTS)]
        assert all(len(text) == FRAMING_EVENT_BYTES for text in got)

    def test_eventlog_huge_event_round_trips(self, store: Store) -> None:
        """A 16 MiB event (well inside MAX_RECORD_BYTES) round-trips exactly."""
        assert HUGE_EVENT_BYTES < MAX_RECORD_BYTES
        text = "".join(chr(0x41 + i % 26) for i in range(4096)) * (HUGE_EVENT_BYTES // 4096)
        store.events.append("conf-log-huge", Event(type="blob", text=text))
        got = list(store.events.read("conf-log-huge"))
        assert len(got) == 1 and got[0].text == text

    def test_eventlog_early_break_releases(self, store: Store) -> None:
        """Breaking out of a read early leaves the log fully readable and writable."""
        for event in numbered(5):
            store.events.append("conf-log-break", event)
        reader = store.events.read("conf-log-break")
        for _ in reader:
            break
        assert len(list(store.events.read("conf-log-break"))) == 5
        store.events.append("conf-log-break", Event(type="note", text="after-break"))
        assert len(list(store.events.read("conf-log-break"))) == 6
        store.sessions.delete("conf-log-break")
        assert list(store.events.read("conf-log-break")) == []
        del reader

    def test_eventlog_concurrent_appends_and_reads(self, store: Store) -> None:
        """8 ids x 25 appends on threads, reading every 5th: each id ends with its 25 in order."""
        errors: list[str] = []
        start = threading.Barrier(CONCURRENT_IDS)

        def writer(slot: int) -> None:
            session_id = f"conf-log-conc-{slot}"
            try:
                start.wait(FOLLOW_TIMEOUT_S)
                for index in range(CONCURRENT_APPENDS):
                    store.events.append(session_id, Event(type="note", seq=index, text=session_id))
                    if (index + 1) % READ_EVERY == 0:
                        seen = [(e.text, e.seq) for e in store.events.read(session_id)]
                        if seen != [(session_id, i) for i in range(index + 1)]:
                            errors.append(f"{session_id} after {index + 1} appends read {seen}")
            except Exception as exc:  # collected and asserted on the test thread
                errors.append(f"{session_id}: {exc!r}")

        threads = [threading.Thread(target=writer, args=(slot,)) for slot in range(CONCURRENT_IDS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(FOLLOW_TIMEOUT_S * 2)
        assert not any(thread.is_alive() for thread in threads), "a writer thread hung"
        assert errors == []
        for slot in range(CONCURRENT_IDS):
            session_id = f"conf-log-conc-{slot}"
            got = [(e.text, e.seq) for e in store.events.read(session_id)]
            assert got == [(session_id, i) for i in range(CONCURRENT_APPENDS)]
