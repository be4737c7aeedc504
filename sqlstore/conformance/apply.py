"""``ApplySuite``: ``store.apply`` — snapshot, events and audit of one session as one unit.

The unit is all or nothing and conditional like ``save``: a conflict, a bad
event or an audit row of another session leaves snapshot, log and audit trail
as they were. Read-modify-write loops on threads and on two OS processes,
retrying on ``VersionConflict``, lose no update and never store state apart from
the event that changed it.
"""

from __future__ import annotations

import threading

import pytest

from sqlstore.audit import ToolCallRecord
from sqlstore.changes import Applied
from sqlstore.conformance.base import (
    FOLLOW_TIMEOUT_S,
    ProcessTarget,
    SuiteBase,
    needs_second_process,
)
from sqlstore.conformance.fixtures import numbered
from sqlstore.conformance.process import increment, workers
from sqlstore.errors import InvalidEvent, VersionConflict
from sqlstore.events import MAX_RECORD_BYTES, Event
from sqlstore.ports import Store
from sqlstore.session import Session

LOOP_WRITERS = 4
LOOP_ROUNDS = 15
PROCESS_ROUNDS = 25


def counted(store: Store, session_id: str) -> tuple[int, list[int]]:
    """Return the snapshot's ``count`` label and the ``seq`` of every ``count`` event."""
    session = store.sessions.load(session_id)
    seqs = [e.seq for e in store.events.read(session_id) if e.type == "count"]
    return int(session.labels.get("count", "0")), seqs


class ApplySuite(SuiteBase):
    """One session's snapshot, events and audit rows are written together or not at all."""

    __test__ = False

    def test_apply_writes_snapshot_events_and_audit_together(self, store: Store) -> None:
        """Everything of the unit is stored; Applied holds the new version and the cursors."""
        session = Session.new("conf-apply-all", title="state")
        audit = [ToolCallRecord("conf-apply-all", call_id="c1", tool="Bash", result="ok")]
        applied = store.apply("conf-apply-all", snapshot=session, events=numbered(3), audit=audit)
        assert isinstance(applied, Applied)
        _, version = store.sessions.load_versioned("conf-apply-all")
        assert applied.version == version >= 1
        records = list(store.events.read_after("conf-apply-all"))
        assert applied.cursors == [r.cursor for r in records]
        assert [r.event for r in records] == numbered(3)
        assert [(r.call_id, r.tool) for r in store.audit.list("conf-apply-all")] == [("c1", "Bash")]

    def test_apply_is_one_version_step_and_chains(self, store: Store) -> None:
        """The version from one apply is the expected version of the next."""
        first = store.apply("conf-apply-chain", snapshot=Session.new("conf-apply-chain"))
        second = store.apply("conf-apply-chain", events=numbered(2), expected_version=first.version)
        third = store.apply(
            "conf-apply-chain",
            snapshot=Session.new("conf-apply-chain", title="3"),
            expected_version=second.version,
        )
        assert first.version < second.version < third.version
        assert store.sessions.load_versioned("conf-apply-chain")[1] == third.version

    def test_apply_expected_zero_creates_once(self, store: Store) -> None:
        """expected_version=0 creates the session; a second one conflicts and writes nothing."""
        store.apply(
            "conf-apply-zero",
            snapshot=Session.new("conf-apply-zero", title="first"),
            events=numbered(1),
            expected_version=0,
        )
        with pytest.raises(VersionConflict) as caught:
            store.apply(
                "conf-apply-zero",
                snapshot=Session.new("conf-apply-zero", title="second"),
                events=numbered(2, "late"),
                audit=[ToolCallRecord("conf-apply-zero", call_id="late")],
                expected_version=0,
            )
        assert caught.value.stored_version is not None
        assert store.sessions.load("conf-apply-zero").title == "first"
        assert len(list(store.events.read("conf-apply-zero"))) == 1
        assert store.audit.list("conf-apply-zero") == []

    def test_apply_conflict_leaves_everything_as_it_was(self, store: Store) -> None:
        """A stale expected version stores none of snapshot, events or audit rows."""
        old = store.apply("conf-apply-stale", snapshot=Session.new("conf-apply-stale")).version
        store.events.append_event("conf-apply-stale", Event(type="note", text="other writer"))
        before = store.sessions.meta("conf-apply-stale")
        with pytest.raises(VersionConflict) as caught:
            store.apply(
                "conf-apply-stale",
                snapshot=Session.new("conf-apply-stale", title="lost"),
                events=numbered(3),
                audit=[ToolCallRecord("conf-apply-stale", call_id="x")],
                expected_version=old,
            )
        assert caught.value.stored_version == before.version
        assert store.sessions.meta("conf-apply-stale") == before
        assert [e.text for e in store.events.read("conf-apply-stale")] == ["other writer"]
        assert store.audit.list("conf-apply-stale") == []

    def test_apply_without_snapshot_on_a_new_session(self, store: Store) -> None:
        """Events without a snapshot are stored, no session is created, and the version is 0."""
        applied = store.apply("conf-apply-nosnap", events=numbered(2))
        assert applied.version == 0 and len(applied.cursors) == 2
        assert [s.id for s in store.sessions.list()] == []
        assert len(list(store.events.read("conf-apply-nosnap"))) == 2
        with pytest.raises(VersionConflict):
            store.apply("conf-apply-nosnap", events=numbered(1), expected_version=1)
        assert len(list(store.events.read("conf-apply-nosnap"))) == 2

    def test_apply_nothing_checks_the_version_only(self, store: Store) -> None:
        """An empty apply returns the current version (0 when missing) and writes nothing."""
        assert store.apply("conf-apply-empty") == Applied(0, [])
        assert store.apply("conf-apply-empty", expected_version=0) == Applied(0, [])
        version = store.sessions.save(Session.new("conf-apply-empty"))
        before = store.sessions.meta("conf-apply-empty")
        assert store.apply("conf-apply-empty", expected_version=version) == Applied(version, [])
        with pytest.raises(VersionConflict):
            store.apply("conf-apply-empty", expected_version=version + 1)
        assert store.sessions.meta("conf-apply-empty") == before

    def test_apply_bad_input_writes_nothing(self, store: Store) -> None:
        """Another session's snapshot or audit row, a bad or too-large event: nothing stored."""
        mine = Session.new("conf-apply-bad")
        with pytest.raises(ValueError, match="conf-apply-other"):
            store.apply("conf-apply-bad", snapshot=Session.new("conf-apply-other"))
        with pytest.raises(ValueError, match=r"audit\[0\]"):
            store.apply("conf-apply-bad", snapshot=mine, audit=[ToolCallRecord("conf-apply-other")])
        with pytest.raises(InvalidEvent, match=r"events\[1\]"):
            store.apply("conf-apply-bad", snapshot=mine, events=[Event("a"), Event("")])
        huge = Event(type="blob", text="x" * (MAX_RECORD_BYTES + 1))
        with pytest.raises(InvalidEvent):
            store.apply("conf-apply-bad", snapshot=mine, events=[Event("a"), huge])
        with pytest.raises(TypeError):
            store.apply("conf-apply-bad", snapshot="not a session")  # type: ignore[arg-type]
        assert [s.id for s in store.sessions.list()] == []
        assert list(store.events.read("conf-apply-bad")) == []
        assert store.audit.list("conf-apply-bad") == []

    def test_apply_loops_on_threads_lose_no_update(self, pair: tuple[Store, Store]) -> None:
        """4 threads on two handles increment one counter 15 times each: 60, one event each."""
        session_id = "conf-apply-loop"
        pair[0].apply(session_id, snapshot=Session.new(session_id), expected_version=0)
        errors: list[str] = []

        def writer(slot: int) -> None:
            try:
                increment(pair[slot % 2], session_id, LOOP_ROUNDS)
            except Exception as exc:  # collected and asserted on the test thread
                errors.append(repr(exc))

        threads = [threading.Thread(target=writer, args=(i,)) for i in range(LOOP_WRITERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(FOLLOW_TIMEOUT_S * 2)
        assert errors == [] and not any(t.is_alive() for t in threads)
        total = LOOP_WRITERS * LOOP_ROUNDS
        assert counted(pair[1], session_id) == (total, list(range(1, total + 1)))

    @needs_second_process
    def test_apply_loops_in_two_processes_lose_no_update(
        self, pair: tuple[Store, Store], process_target: ProcessTarget
    ) -> None:
        """Two OS processes incrementing one counter by apply: every update and event is kept."""
        session_id = "conf-apply-ploop"
        first, _ = pair
        first.apply(session_id, snapshot=Session.new(session_id), expected_version=0)
        with workers(process_target, 2) as writers:
            for writer in writers:
                writer.send("increment", session_id, PROCESS_ROUNDS)
            for writer in writers:
                writer.receive(FOLLOW_TIMEOUT_S * 4)
        total = 2 * PROCESS_ROUNDS
        assert counted(first, session_id) == (total, list(range(1, total + 1)))
