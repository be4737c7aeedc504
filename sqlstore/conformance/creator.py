"""``CreatorSuite``: atomic ``sessions.create`` across handles, threads and processes.

Runs over two handles on the same durable state (``make_pair``; mecatl 8.5)
and, when the backend names a ``second_process_target``, over two OS processes
racing on the same ids.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from sqlstore.audit import ToolCallRecord
from sqlstore.conformance.base import (
    FOLLOW_TIMEOUT_S,
    ProcessTarget,
    SuiteBase,
    needs_second_process,
)
from sqlstore.conformance.fixtures import (
    ALICE,
    BOB,
    assert_same_session,
    numbered,
    representative_session,
)
from sqlstore.conformance.process import race_owner, workers
from sqlstore.errors import MetadataCursorRestart, SessionAlreadyExists, SnapshotError
from sqlstore.ports import Store
from sqlstore.session import Session

THREAD_RACES = 20
PROCESS_RACES = 50


def race_threads(handles: tuple[Store, Store], session_id: str) -> list[str]:
    """Create ``session_id`` from two threads (one per handle) at once; return both outcomes."""
    barrier = threading.Barrier(2)
    outcomes = ["", ""]

    def attempt(slot: int) -> None:
        session = Session.new(session_id, title=f"slot-{slot}")
        barrier.wait(FOLLOW_TIMEOUT_S)
        try:
            handles[slot].sessions.create(session)
            outcomes[slot] = "won"
        except SessionAlreadyExists:
            outcomes[slot] = "lost"
        except Exception as exc:  # reported as the outcome; the caller asserts on it
            outcomes[slot] = f"error: {exc!r}"

    threads = [threading.Thread(target=attempt, args=(slot,)) for slot in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(FOLLOW_TIMEOUT_S)
    return outcomes


class CreatorSuite(SuiteBase):
    """Exactly one creator wins an id; a losing create changes nothing anywhere."""

    __test__ = False

    def test_creator_create_then_load(self, pair: tuple[Store, Store]) -> None:
        """A created session loads back identically through the other handle."""
        first, second = pair
        first.sessions.create(representative_session("conf-create"))
        assert_same_session(
            second.sessions.load("conf-create"), representative_session("conf-create")
        )

    def test_creator_collides_with_saved_snapshot(self, pair: tuple[Store, Store]) -> None:
        """Create after a save raises SessionAlreadyExists and leaves the saved snapshot."""
        first, second = pair
        first.sessions.save(Session.new("conf-saved", title="winner"))
        with pytest.raises(SessionAlreadyExists) as caught:
            second.sessions.create(Session.new("conf-saved", title="loser"))
        assert "conf-saved" in str(caught.value)
        assert first.sessions.load("conf-saved").title == "winner"

    @pytest.mark.parametrize("loser_owner", ["same", "cross"])
    def test_creator_collision_preserves_winner(
        self, pair: tuple[Store, Store], loser_owner: str
    ) -> None:
        """A losing create (same or other owner) keeps the winner's snapshot, owner and row."""
        first, second = pair
        winner = Session.new("conf-collide", owner=ALICE, title="winner")
        first.sessions.create(winner)
        row = first.sessions.meta("conf-collide")
        loser = Session.new(
            "conf-collide", owner=ALICE if loser_owner == "same" else BOB, title="loser"
        )
        loser.record_user_prompt("should never be stored")
        with pytest.raises(SessionAlreadyExists):
            second.sessions.create(loser)
        assert_same_session(second.sessions.load("conf-collide"), winner)
        assert first.sessions.meta("conf-collide") == row
        assert second.sessions.meta("conf-collide") == row

    def test_creator_collision_preserves_pages_and_cursors(self, pair: tuple[Store, Store]) -> None:
        """A losing create leaves pages, page cursors, events, event cursors and audit intact."""
        first, second = pair
        for index in range(3):
            first.sessions.create(Session.new(f"conf-gen-{index}", owner=ALICE))
        cursors = [first.events.append_event("conf-gen-1", e) for e in numbered(3)]
        first.audit.record(ToolCallRecord(session_id="conf-gen-1", call_id="c1", tool="Bash"))
        page_one = first.sessions.page(1, owner=ALICE, enforce_owner=True)
        assert page_one.next_cursor
        page_two = first.sessions.page(1, page_one.next_cursor, owner=ALICE, enforce_owner=True)
        with pytest.raises(SessionAlreadyExists):
            second.sessions.create(Session.new("conf-gen-1", owner=BOB, title="loser"))
        for handle in (first, second):
            assert handle.sessions.page(1, owner=ALICE, enforce_owner=True) == page_one
            again = handle.sessions.page(1, page_one.next_cursor, owner=ALICE, enforce_owner=True)
            assert again == page_two
            after_first = list(handle.events.read_after("conf-gen-1", cursors[0]))
            assert [r.cursor for r in after_first] == cursors[1:]
            assert [e.text for e in handle.events.read("conf-gen-1")] == ["e-0", "e-1", "e-2"]
            assert [r.call_id for r in handle.audit.list("conf-gen-1")] == ["c1"]

    def test_creator_page_cursor_is_shared_across_handles(self, pair: tuple[Store, Store]) -> None:
        """A page cursor from one handle continues on the other; a save on either restarts it."""
        first, second = pair
        for index in range(3):
            first.sessions.create(Session.new(f"conf-share-{index}"))
        cursor = first.sessions.page(1).next_cursor
        assert cursor
        assert second.sessions.page(1, cursor) == first.sessions.page(1, cursor)
        second.sessions.save(Session.new("conf-share-late"))
        with pytest.raises(MetadataCursorRestart):
            first.sessions.page(1, cursor)

    def test_creator_concurrent_threads_have_one_winner(self, pair: tuple[Store, Store]) -> None:
        """Two threads creating the same id on the two handles: one wins, one gets AlreadyExists."""
        for race in range(THREAD_RACES):
            session_id = f"conf-race-thread-{race}"
            outcomes = race_threads(pair, session_id)
            assert sorted(outcomes) == ["lost", "won"], (session_id, outcomes)
            winner = outcomes.index("won")
            assert pair[1 - winner].sessions.load(session_id).title == f"slot-{winner}"

    @needs_second_process
    def test_creator_concurrent_processes_have_one_winner(
        self, tmp_path: Path, pair: tuple[Store, Store], process_target: ProcessTarget
    ) -> None:
        """Two OS processes racing create on the same ids 50 times: exactly one winner each time."""
        ids = [f"conf-race-proc-{i}" for i in range(PROCESS_RACES)]
        with workers(process_target, 2, barrier=True) as (left, right):
            left.send("race_create", ids, "left", FOLLOW_TIMEOUT_S)
            right.send("race_create", ids, "right", FOLLOW_TIMEOUT_S)
            outcomes = {"left": left.receive(), "right": right.receive()}
        first, _ = pair
        for index, session_id in enumerate(ids):
            pairing = sorted((outcomes["left"][index], outcomes["right"][index]))
            assert pairing == ["lost", "won"], (
                session_id,
                outcomes["left"][index],
                outcomes["right"][index],
            )
            marker = "left" if outcomes["left"][index] == "won" else "right"
            stored = first.sessions.load(session_id)
            assert stored.title == marker
            assert stored.owner == race_owner(marker)

    def test_creator_isolates_input_and_loaded_copies(self, pair: tuple[Store, Store]) -> None:
        """Changing the created object or a loaded copy does not reach the store."""
        first, second = pair
        session = representative_session("conf-create-iso")
        first.sessions.create(session)
        session.title = "changed"
        session.messages.clear()
        loaded = second.sessions.load("conf-create-iso")
        loaded.labels.clear()
        assert_same_session(
            first.sessions.load("conf-create-iso"), representative_session("conf-create-iso")
        )

    def test_creator_none_is_rejected(self, pair: tuple[Store, Store]) -> None:
        """Creating None raises SnapshotError (or TypeError) and stores nothing."""
        first, second = pair
        with pytest.raises((SnapshotError, TypeError)):
            first.sessions.create(None)  # type: ignore[arg-type]
        assert second.sessions.list() == []
