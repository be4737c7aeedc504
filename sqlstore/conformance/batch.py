"""``BatchSuite``: ``events.append_events`` — whole batches, in order, all or none.

Covers cursors per record, the empty batch, bad input that writes nothing
(wrong types, a too-large record), batches from many threads staying whole and
in caller order, and — with a second OS process — that a reader never sees part
of a batch, not even after the writer was killed with ``SIGKILL`` mid-batch.
"""

from __future__ import annotations

import os
import random
import signal
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
from sqlstore.conformance.process import Worker, workers
from sqlstore.errors import InvalidEvent, InvalidSessionId
from sqlstore.events import MAX_RECORD_BYTES, Event
from sqlstore.ports import Store
from sqlstore.session import Session

THREADS = 8
BATCHES_PER_THREAD = 10
BATCH_SIZE = 5
KILL_ROUNDS = 3
KILL_BATCH = 20


def batch_of(tag: str, index: int, size: int) -> list[Event]:
    """Return batch number ``index`` of ``tag``: ``size`` events that name batch and slot."""
    return [
        Event(type="note", seq=slot, text=tag, data={"batch": index, "slot": slot, "of": size})
        for slot in range(size)
    ]


def whole_batches(events: list[Event]) -> list[tuple[str, int]]:
    """Return (tag, batch) of each batch in log order; fail if one is split, torn or reordered."""
    found: list[tuple[str, int]] = []
    at = 0
    while at < len(events):
        head = events[at]
        size = int(head.data["of"])
        chunk = events[at : at + size]
        want = [(head.text, head.data["batch"], slot) for slot in range(size)]
        got = [(e.text, e.data.get("batch"), e.data.get("slot")) for e in chunk]
        assert got == want, f"batch at record {at + 1} is not whole: {got}"
        found.append((head.text, int(head.data["batch"])))
        at += size
    return found


class BatchSuite(SuiteBase):
    """A batch of events is stored whole or not at all, in order, with a cursor per record."""

    __test__ = False

    def test_batch_appends_in_order_with_a_cursor_per_record(self, store: Store) -> None:
        """Five events come back in order and the returned cursors are those of read_after."""
        events = numbered(5, "b")
        cursors = store.events.append_events("conf-batch-order", events)
        records = list(store.events.read_after("conf-batch-order"))
        assert [r.event for r in records] == events
        assert cursors == [r.cursor for r in records]
        assert len(set(cursors)) == 5

    def test_batch_continues_single_appends_and_resumes_mid_batch(self, store: Store) -> None:
        """A batch takes the next positions after single appends; its cursors resume reads."""
        store.events.append_event("conf-batch-mix", Event(type="note", text="one"))
        cursors = store.events.append_events("conf-batch-mix", numbered(3, "m"))
        store.events.append_gap("conf-batch-mix", "lost")
        after = list(store.events.read_after("conf-batch-mix", cursors[0]))
        assert [r.event.text if r.event else r.gap_reason for r in after] == ["m-1", "m-2", "lost"]
        assert [r.kind for r in store.events.read_after("conf-batch-mix", cursors[-1])] == ["gap"]

    def test_batch_empty_writes_nothing(self, store: Store) -> None:
        """An empty batch returns [] and changes neither the log nor the session's version."""
        store.sessions.save(Session.new("conf-batch-empty"))
        _, version = store.sessions.load_versioned("conf-batch-empty")
        assert store.events.append_events("conf-batch-empty", []) == []
        assert store.events.append_events("conf-batch-none", ()) == []
        assert store.sessions.load_versioned("conf-batch-empty")[1] == version
        assert list(store.events.read("conf-batch-empty")) == []
        assert store.events.read_tail("conf-batch-none", 5) == []

    def test_batch_counts_as_one_write_of_the_session(self, store: Store) -> None:
        """A batch advances modified_at and the version, and load_versioned reports it."""
        saved = store.sessions.save(Session.new("conf-batch-version"))
        before = store.sessions.meta("conf-batch-version")
        store.events.append_events("conf-batch-version", numbered(4))
        after = store.sessions.meta("conf-batch-version")
        assert after.version > saved and after.modified_at >= before.modified_at
        assert store.sessions.load_versioned("conf-batch-version")[1] == after.version

    def test_batch_with_a_bad_item_writes_nothing(self, store: Store) -> None:
        """A non-event in the middle fails naming its index, and no event of the batch is stored."""
        store.events.append_event("conf-batch-bad", Event(type="note", text="kept"))
        bad: list[object] = [Event(type="note"), "not an event", Event(type="note")]
        with pytest.raises(InvalidEvent, match=r"events\[1\]"):
            store.events.append_events("conf-batch-bad", bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidEvent, match=r"events\[0\]"):
            store.events.append_events("conf-batch-bad", [Event(type="")])
        assert [e.text for e in store.events.read("conf-batch-bad")] == ["kept"]

    def test_batch_with_a_too_large_record_writes_nothing(self, store: Store) -> None:
        """One event over MAX_RECORD_BYTES fails the batch; the events before it are not stored."""
        huge = Event(type="blob", text="x" * (MAX_RECORD_BYTES + 1))
        batch = [*numbered(2, "before"), huge, *numbered(2, "after")]
        with pytest.raises(InvalidEvent, match=r"events\[2\].*limit"):
            store.events.append_events("conf-batch-huge", batch)
        assert list(store.events.read("conf-batch-huge")) == []
        assert store.events.read_tail("conf-batch-huge", 10) == []

    def test_batch_rejects_wrong_containers_and_ids(self, store: Store) -> None:
        """A bare Event or a string is a TypeError, a bad id InvalidSessionId, even when empty."""
        with pytest.raises(TypeError, match="sequence of Event"):
            store.events.append_events("conf-batch-type", Event(type="note"))  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            store.events.append_events("conf-batch-type", "note")  # type: ignore[arg-type]
        with pytest.raises(InvalidSessionId):
            store.events.append_events("", [])
        assert list(store.events.read("conf-batch-type")) == []

    def test_batch_threads_keep_batches_whole_and_in_caller_order(self, store: Store) -> None:
        """8 threads x 10 batches on 4 ids: batches stay contiguous, each thread's in order."""
        errors: list[str] = []
        start = threading.Barrier(THREADS)

        def writer(slot: int) -> None:
            try:
                start.wait(FOLLOW_TIMEOUT_S)
                for index in range(BATCHES_PER_THREAD):
                    batch = batch_of(f"t{slot}", index, BATCH_SIZE)
                    store.events.append_events(f"conf-batch-conc-{slot % 4}", batch)
            except Exception as exc:  # collected and asserted on the test thread
                errors.append(f"thread {slot}: {exc!r}")

        threads = [threading.Thread(target=writer, args=(slot,)) for slot in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(FOLLOW_TIMEOUT_S * 2)
        assert not any(thread.is_alive() for thread in threads), "a writer thread hung"
        assert errors == []
        for log in range(4):
            order = whole_batches(list(store.events.read(f"conf-batch-conc-{log}")))
            assert len(order) == 2 * BATCHES_PER_THREAD
            for slot in (log, log + 4):
                mine = [index for tag, index in order if tag == f"t{slot}"]
                assert mine == list(range(BATCHES_PER_THREAD))

    @needs_second_process
    def test_batch_other_process_never_sees_part_of_a_batch(
        self, pair: tuple[Store, Store], process_target: ProcessTarget
    ) -> None:
        """While a second process appends batches of 10, every tail read here sees whole batches."""
        first, _ = pair
        with workers(process_target, 1) as (worker,):
            worker.send("append_batches", "conf-batch-proc", 10, 30, 200, 0.02)
            worker.receive()  # started
            seen: set[int] = set()
            deadline = time.monotonic() + FOLLOW_TIMEOUT_S
            while time.monotonic() < deadline:
                tail = first.events.read_tail("conf-batch-proc", 10)
                length = len(list(first.events.read("conf-batch-proc")))
                assert length % 10 == 0, f"a reader saw {length} records: part of a batch"
                if tail:
                    assert tail[0].event is not None and tail[0].event.data["slot"] == 0
                seen.add(length)
                if length == 300:
                    break
            assert worker.receive() == 30
        whole_batches(list(first.events.read("conf-batch-proc")))
        assert len(seen) > 1, "the reader never saw the log between batches"

    @needs_second_process
    def test_batch_kill_9_mid_batch_leaves_only_whole_batches(
        self, pair: tuple[Store, Store], process_target: ProcessTarget
    ) -> None:
        """A writer killed with SIGKILL while appending big batches leaves only whole ones."""
        rng = random.Random(20260601)
        session_id = "conf-batch-kill"
        for round_ in range(KILL_ROUNDS):
            worker = Worker(process_target)
            try:
                worker.send("append_batches", session_id, KILL_BATCH, 0, 4096, 0.0)
                worker.receive()  # the first batch is committed
                time.sleep(rng.uniform(0.02, 0.2))
                os.kill(worker.pid, signal.SIGKILL)
            finally:
                worker.close()
            with process_target.open() as fresh:  # a new handle recovers what the writer left
                order = whole_batches(list(fresh.events.read(session_id)))
                assert order, f"round {round_}: not even the first batch is stored"
                fresh.events.append_events(session_id, batch_of("parent", round_, 3))
