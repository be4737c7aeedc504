"""``VersionSuite``: ``sessions.load_versioned`` and conditional ``sessions.save``.

Pins the rules of :mod:`sqlstore.changes`: ``save`` returns the new version,
``expected_version`` ``n`` needs the stored version ``n``, ``0`` needs no
stored session, a mismatch raises ``VersionConflict`` (with the stored version
and a hint) and changes nothing, every write to a session moves its version,
and versions are never reused — not even after delete and re-create. Conditional
writers racing on threads, handles and OS processes have exactly one winner.
"""

from __future__ import annotations

import threading

import pytest

from sqlstore.conformance.base import (
    FOLLOW_TIMEOUT_S,
    ProcessTarget,
    SuiteBase,
    needs_second_process,
)
from sqlstore.conformance.fixtures import assert_same_session, representative_session
from sqlstore.conformance.process import workers
from sqlstore.errors import SessionNotFound, StoreError, VersionConflict
from sqlstore.events import Event
from sqlstore.ports import Store
from sqlstore.session import Session

RACERS = 8
PROCESS_RACES = 20


def save_race(handles: tuple[Store, Store], session_id: str, version: int) -> list[str]:
    """Save ``session_id`` conditionally from ``RACERS`` threads at once; return the outcomes."""
    barrier = threading.Barrier(RACERS)
    outcomes = [""] * RACERS

    def attempt(slot: int) -> None:
        session = Session.new(session_id, title=f"racer-{slot}")
        barrier.wait(FOLLOW_TIMEOUT_S)
        try:
            handles[slot % 2].sessions.save(session, expected_version=version)
            outcomes[slot] = "won"
        except VersionConflict:
            outcomes[slot] = "lost"
        except Exception as exc:  # reported as the outcome; the caller asserts on it
            outcomes[slot] = f"error: {exc!r}"

    threads = [threading.Thread(target=attempt, args=(slot,)) for slot in range(RACERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(FOLLOW_TIMEOUT_S)
    return outcomes


class VersionSuite(SuiteBase):
    """Snapshots carry a version; conditional saves win only against the version they read."""

    __test__ = False

    def test_version_load_versioned_matches_save_and_meta(self, store: Store) -> None:
        """save returns the version load_versioned and meta report, with the snapshot intact."""
        session = representative_session("conf-ver-load")
        version = store.sessions.save(session)
        got, got_version = store.sessions.load_versioned("conf-ver-load")
        assert_same_session(got, session)
        assert got_version == version == store.sessions.meta("conf-ver-load").version
        assert version >= 1

    def test_version_load_versioned_missing_names_the_id(self, store: Store) -> None:
        """load_versioned of an unknown id raises SessionNotFound naming it."""
        with pytest.raises(SessionNotFound, match="conf-ver-missing"):
            store.sessions.load_versioned("conf-ver-missing")

    def test_version_grows_with_every_write(self, store: Store) -> None:
        """Saves, appends, batches and audit records each move the version forward."""
        seen = [store.sessions.save(Session.new("conf-ver-grow"))]
        seen.append(store.sessions.save(Session.new("conf-ver-grow", title="two")))
        store.events.append_event("conf-ver-grow", Event(type="note"))
        seen.append(store.sessions.load_versioned("conf-ver-grow")[1])
        store.events.append_events("conf-ver-grow", [Event(type="note"), Event(type="note")])
        seen.append(store.sessions.load_versioned("conf-ver-grow")[1])
        assert seen == sorted(seen) and len(set(seen)) == len(seen)

    def test_version_conditional_save_with_current_version(self, store: Store) -> None:
        """A save expecting the stored version succeeds and returns a higher one."""
        first = store.sessions.save(Session.new("conf-ver-cond", title="one"))
        second = store.sessions.save(
            Session.new("conf-ver-cond", title="two"), expected_version=first
        )
        assert second > first
        session, version = store.sessions.load_versioned("conf-ver-cond")
        assert (session.title, version) == ("two", second)

    def test_version_stale_save_conflicts_and_changes_nothing(self, store: Store) -> None:
        """A save expecting an old version raises VersionConflict and leaves the row as it was."""
        old = store.sessions.save(Session.new("conf-ver-stale", title="one"))
        current = store.sessions.save(Session.new("conf-ver-stale", title="two"))
        before = store.sessions.meta("conf-ver-stale")
        with pytest.raises(VersionConflict) as caught:
            store.sessions.save(Session.new("conf-ver-stale", title="three"), expected_version=old)
        error = caught.value
        assert isinstance(error, StoreError)
        assert (error.stored_version, error.expected_version) == (current, old)
        assert error.hint and "conf-ver-stale" in str(error)
        assert store.sessions.meta("conf-ver-stale") == before
        assert store.sessions.load("conf-ver-stale").title == "two"

    def test_version_missing_session_conflicts_unless_zero(self, store: Store) -> None:
        """expected_version=n on a missing session conflicts (stored None); 0 creates it."""
        with pytest.raises(VersionConflict) as caught:
            store.sessions.save(Session.new("conf-ver-new"), expected_version=3)
        assert caught.value.stored_version is None
        assert [s.id for s in store.sessions.list()] == []
        version = store.sessions.save(Session.new("conf-ver-new"), expected_version=0)
        assert store.sessions.load_versioned("conf-ver-new")[1] == version
        with pytest.raises(VersionConflict) as again:
            store.sessions.save(Session.new("conf-ver-new", title="x"), expected_version=0)
        assert again.value.stored_version == version
        assert store.sessions.load("conf-ver-new").title == ""

    def test_version_append_makes_a_read_version_stale(self, store: Store) -> None:
        """An event appended after load_versioned makes a save with the read version conflict."""
        store.sessions.save(Session.new("conf-ver-append"))
        session, version = store.sessions.load_versioned("conf-ver-append")
        store.events.append_event("conf-ver-append", Event(type="note"))
        with pytest.raises(VersionConflict):
            store.sessions.save(session, expected_version=version)

    def test_version_never_reused_after_delete_and_recreate(self, store: Store) -> None:
        """A version read before a delete never matches the re-created session."""
        old = store.sessions.save(Session.new("conf-ver-reuse"))
        store.sessions.delete("conf-ver-reuse")
        new = store.sessions.save(Session.new("conf-ver-reuse", title="again"))
        assert new > old
        with pytest.raises(VersionConflict):
            store.sessions.save(Session.new("conf-ver-reuse", title="stale"), expected_version=old)
        assert store.sessions.load("conf-ver-reuse").title == "again"

    def test_version_bad_expected_versions_are_refused(self, store: Store) -> None:
        """A negative expected_version is a ValueError, a non-int a TypeError; nothing saved."""
        session = Session.new("conf-ver-badarg")
        with pytest.raises(ValueError, match="expected_version"):
            store.sessions.save(session, expected_version=-1)
        for bad in (True, "1", 1.0):
            with pytest.raises(TypeError, match="expected_version"):
                store.sessions.save(session, expected_version=bad)  # type: ignore[arg-type]
        assert [s.id for s in store.sessions.list()] == []

    def test_version_racing_threads_have_one_winner(self, pair: tuple[Store, Store]) -> None:
        """8 threads on two handles saving with the same expected version: exactly one wins."""
        for race in range(5):
            session_id = f"conf-ver-race-{race}"
            version = pair[0].sessions.save(Session.new(session_id))
            outcomes = save_race(pair, session_id, version)
            assert sorted(outcomes) == ["lost"] * (RACERS - 1) + ["won"], outcomes
            winner = pair[1].sessions.load(session_id).title
            assert winner == f"racer-{outcomes.index('won')}"

    @needs_second_process
    def test_version_racing_processes_have_one_winner(
        self, pair: tuple[Store, Store], process_target: ProcessTarget
    ) -> None:
        """Two OS processes saving with the same expected version: one wins each of 20 races."""
        first, _ = pair
        cases = [
            (f"conf-ver-prace-{i}", first.sessions.save(Session.new(f"conf-ver-prace-{i}")))
            for i in range(PROCESS_RACES)
        ]
        with workers(process_target, 2, barrier=True) as racers:
            for racer in racers:
                racer.send("race_save", cases, FOLLOW_TIMEOUT_S)
            results = [racer.receive(FOLLOW_TIMEOUT_S * 2) for racer in racers]
        for index, pair_of in enumerate(zip(*results, strict=True)):
            assert sorted(pair_of) == ["lost", "won"], (index, pair_of)
