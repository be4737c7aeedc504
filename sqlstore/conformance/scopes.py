"""``ScopesSuite``: scoped state (``store.scopes`` and ``store.apply(..., scopes=)``).

Scoped state is JSON by key per scope, merged with ``dict.update`` semantics,
apart from sessions: never listed as one, kept when any session is deleted,
written atomically with a session's unit by ``store.apply``, and refused whole
(nothing stored) when a value is not JSON or the unit's version check fails.
"""

from __future__ import annotations

import pytest

from sqlstore.conformance.base import SuiteBase
from sqlstore.errors import InvalidSessionId, VersionConflict
from sqlstore.events import Event
from sqlstore.ports import ScopedState, Store, scopes_of
from sqlstore.scopes import InvalidState
from sqlstore.session import Session


def scopes(store: Store) -> ScopedState:
    """Return the store's scoped state (the suite needs the capability)."""
    found = scopes_of(store)
    assert found is not None, "the backend offers no store.scopes"
    return found


class ScopesSuite(SuiteBase):
    """Scoped state merges by key, outlives sessions and commits with a session's unit."""

    __test__ = False

    def test_unknown_scope_is_empty(self, store: Store) -> None:
        """A scope nothing was written to reads as ``{}`` and is not listed."""
        assert scopes(store).get("conf-scope-none") == {}
        assert scopes(store).list("conf-scope-") == []

    def test_merge_updates_keys_and_keeps_the_others(self, store: Store) -> None:
        """A merge replaces the keys it names (None included) and keeps every other key."""
        state = scopes(store)
        state.merge("conf-scope-app", {"a": 1, "b": {"nested": [1, 2.5, "x"]}, "c": "keep"})
        state.merge("conf-scope-app", {"a": 2, "b": None, "ünï": "😊"})
        assert state.get("conf-scope-app") == {
            "a": 2,
            "b": None,
            "c": "keep",
            "ünï": "😊",
        }

    def test_scopes_are_isolated_and_listed_by_prefix(self, store: Store) -> None:
        """Each scope has its own state; ``list(prefix)`` returns the ids sorted."""
        state = scopes(store)
        state.merge("conf-scope-b", {"k": "b"})
        state.merge("conf-scope-a", {"k": "a"})
        state.merge("other", {"k": "o"})
        assert state.get("conf-scope-a") == {"k": "a"}
        assert state.list("conf-scope-") == ["conf-scope-a", "conf-scope-b"]
        assert "other" in state.list()

    def test_delete_removes_one_scope(self, store: Store) -> None:
        """``delete`` drops the whole state of one scope and is idempotent."""
        state = scopes(store)
        state.merge("conf-scope-x", {"k": 1})
        state.merge("conf-scope-y", {"k": 2})
        state.delete("conf-scope-x")
        state.delete("conf-scope-x")
        assert state.get("conf-scope-x") == {}
        assert state.list("conf-scope-") == ["conf-scope-y"]

    def test_scopes_are_not_sessions_and_outlive_them(self, store: Store) -> None:
        """Scoped state is never a session, and deleting a session leaves it unchanged."""
        store.apply(
            "conf-scope-session",
            snapshot=Session.new("conf-scope-session"),
            events=[Event("note")],
            scopes={"conf-scope-user": {"name": "ada"}},
        )
        assert [s.id for s in store.sessions.list()] == ["conf-scope-session"]
        store.sessions.delete("conf-scope-session")
        assert store.sessions.list() == []
        assert scopes(store).get("conf-scope-user") == {"name": "ada"}

    def test_apply_writes_scopes_with_the_unit(self, store: Store) -> None:
        """``apply`` merges several scopes together with the snapshot and the events."""
        applied = store.apply(
            "conf-scope-unit",
            snapshot=Session.new("conf-scope-unit"),
            events=[Event("note", text="one")],
            scopes={"conf-scope-app": {"n": 1}, "conf-scope-user": {"m": [True]}},
            expected_version=0,
        )
        assert applied.version >= 1 and len(applied.cursors) == 1
        assert scopes(store).get("conf-scope-app") == {"n": 1}
        assert scopes(store).get("conf-scope-user") == {"m": [True]}

    def test_conflicting_unit_writes_no_scope(self, store: Store) -> None:
        """A unit refused by its version check leaves scoped state as it was."""
        applied = store.apply("conf-scope-stale", snapshot=Session.new("conf-scope-stale"))
        scopes(store).merge("conf-scope-app", {"n": 1})
        with pytest.raises(VersionConflict):
            store.apply(
                "conf-scope-stale",
                events=[Event("note")],
                scopes={"conf-scope-app": {"n": 2}, "conf-scope-new": {"k": 1}},
                expected_version=applied.version + 1,
            )
        assert scopes(store).get("conf-scope-app") == {"n": 1}
        assert scopes(store).get("conf-scope-new") == {}
        assert list(store.events.read("conf-scope-stale")) == []

    def test_scope_only_unit_does_not_write_the_session(self, store: Store) -> None:
        """A unit of scope deltas alone keeps the session's version."""
        applied = store.apply("conf-scope-only", snapshot=Session.new("conf-scope-only"))
        again = store.apply(
            "conf-scope-only",
            scopes={"conf-scope-app": {"k": 1}},
            expected_version=applied.version,
        )
        assert again.version == applied.version
        assert store.sessions.load_versioned("conf-scope-only")[1] == applied.version
        assert scopes(store).get("conf-scope-app") == {"k": 1}

    @pytest.mark.parametrize(
        "delta",
        [{"k": float("nan")}, {"k": object()}, {"k": "\ud800"}, {3: "int key"}, ["not", "a map"]],
    )
    def test_bad_values_store_nothing(self, store: Store, delta: object) -> None:
        """A value that is not JSON (or a non-str key) is refused, and nothing of it is stored."""
        state = scopes(store)
        state.merge("conf-scope-bad", {"kept": 1})
        with pytest.raises(InvalidState):
            state.merge("conf-scope-bad", {"new": 1, **delta} if isinstance(delta, dict) else delta)  # type: ignore[arg-type]
        with pytest.raises(InvalidState):
            store.apply(
                "conf-scope-bad-unit",
                snapshot=Session.new("conf-scope-bad-unit"),
                scopes={"conf-scope-bad": delta},  # type: ignore[dict-item]
            )
        assert state.get("conf-scope-bad") == {"kept": 1}
        assert store.sessions.list() == []

    def test_bad_scope_id(self, store: Store) -> None:
        """An empty or NUL-bearing scope id is refused like a bad session id."""
        for bad in ("", "a\x00b"):
            with pytest.raises(InvalidSessionId):
                scopes(store).merge(bad, {"k": 1})
            with pytest.raises(InvalidSessionId):
                scopes(store).get(bad)

    def test_second_handle_sees_scoped_state(self, pair: tuple[Store, Store]) -> None:
        """A merge through one handle is read by another handle on the same state."""
        first, second = pair
        scopes(first).merge("conf-scope-shared", {"k": "v"})
        assert scopes(second).get("conf-scope-shared") == {"k": "v"}
