"""``StoreSuite``: the save/load contract of ``store.sessions`` (SPEC §3.1, §9; mecatl 8.1)."""

from __future__ import annotations

import dataclasses

import pytest

from sqlstore.conformance.base import SuiteBase
from sqlstore.conformance.fixtures import (
    AWAITING_ASK,
    KIND_CASES,
    LIFECYCLE_CASES,
    PNG_4,
    assert_same_session,
    id_of_bytes,
    kind_session,
    lifecycle_session,
    noise,
    representative_session,
)
from sqlstore.errors import SessionNotFound, SnapshotError
from sqlstore.model import Message, Part, State, Usage
from sqlstore.ports import Store
from sqlstore.session import Session

LARGE_PART_BYTES = 5 * 2**20
LONG_ID_SIZES = (175, 176, 241, 1024)


class StoreSuite(SuiteBase):
    """Snapshots round-trip exactly, per id, isolated from the caller's objects."""

    __test__ = False

    def test_store_representative_round_trip(self, store: Store) -> None:
        """Every field of the representative running session survives save and load."""
        session = representative_session()
        store.sessions.save(session)
        loaded = store.sessions.load(session.id)
        assert_same_session(loaded, representative_session())
        assert loaded.state is State.RUNNING
        assert loaded.mode == "acceptEdits"
        assert (loaded.limits.max_turns, loaded.limits.max_tool_calls) == (7, 21)
        assert loaded.limits.max_consecutive_failures == 3
        assert loaded.usage == Usage(1200, 340, 800, 200)
        assert loaded.created_at == representative_session().created_at
        assert loaded.messages[0].role == "system"
        assert loaded.messages[2].parts[0].data == PNG_4
        assistant = loaded.messages[3]
        assert assistant.reasoning and [c.args for c in assistant.tool_calls] == [
            '{"command":"ls -la"}',
            '{"path":"/work/space/README.md"}',
        ]
        results = [m.tool_result for m in loaded.messages[4:]]
        assert [r.is_error for r in results if r is not None] == [False, True]

    @pytest.mark.parametrize("case", sorted(KIND_CASES))
    def test_store_kind_relationship_round_trip(self, store: Store, case: str) -> None:
        """Each kind and its relationship round-trip exactly."""
        session = kind_session(f"conf-kind-{case}", case)
        store.sessions.save(session)
        loaded = store.sessions.load(session.id)
        assert (loaded.kind, loaded.relationship) == KIND_CASES[case]
        assert_same_session(loaded, session)

    def test_store_save_isolates_relationship(self, store: Store) -> None:
        """Changing the caller's relationship after save leaves the stored branch index at 2."""
        session = kind_session("conf-branch-iso", "parallel_branch")
        store.sessions.save(session)
        session.relationship = dataclasses.replace(session.relationship, branch_index=9)
        assert store.sessions.load(session.id).relationship.branch_index == 2

    @pytest.mark.parametrize("case", LIFECYCLE_CASES)
    def test_store_lifecycle_state_round_trip(self, store: Store, case: str) -> None:
        """Each lifecycle state keeps its stop reason, pending ask and last error."""
        session = lifecycle_session(f"conf-life-{case}", case)
        store.sessions.save(session)
        loaded = store.sessions.load(session.id)
        assert_same_session(loaded, session)
        expected = {
            "idle": (State.IDLE, "", None),
            "completed_budget": (State.COMPLETED, "budget", None),
            "awaiting": (State.AWAITING, "", AWAITING_ASK),
            "cancelled": (State.CANCELLED, "cancelled", None),
            "failed": (State.FAILED, "error", None),
        }[case]
        assert (loaded.state, loaded.stop_reason, loaded.pending_ask) == expected

    def test_store_large_media_part_round_trip(self, store: Store) -> None:
        """A 5 MiB non-uniform inline image part round-trips byte for byte."""
        payload = noise(LARGE_PART_BYTES)
        session = Session.new("conf-large")
        session.record_user_prompt("look", parts=[Part("image", "image/png", payload)])
        store.sessions.save(session)
        loaded = store.sessions.load(session.id)
        assert len(loaded.messages[0].parts[0].data) == LARGE_PART_BYTES
        assert loaded.messages[0].parts[0].data == payload

    def test_store_two_ids_are_distinct(self, store: Store) -> None:
        """The store is keyed by id, not by the last save."""
        first, second = Session.new("conf-one", title="one"), Session.new("conf-two", title="two")
        store.sessions.save(first)
        store.sessions.save(second)
        assert store.sessions.load("conf-one").title == "one"
        assert store.sessions.load("conf-two").title == "two"

    @pytest.mark.parametrize("size", LONG_ID_SIZES)
    def test_store_long_id_round_trip(self, store: Store, size: int) -> None:
        """A long opaque id saves, loads byte-exactly and saves again."""
        session_id = id_of_bytes(size, f"long{size}")
        store.sessions.save(Session.new(session_id, title="first"))
        loaded = store.sessions.load(session_id)
        assert loaded.id.encode("utf-8") == session_id.encode("utf-8")
        loaded.title = "second"
        store.sessions.save(loaded)
        assert store.sessions.load(session_id).title == "second"
        assert [s.id for s in store.sessions.list()].count(session_id) == 1

    def test_store_long_ids_sharing_a_prefix_do_not_alias(self, store: Store) -> None:
        """Two ids sharing a 200-byte prefix are different sessions."""
        one, two = "P" * 200 + "-one", "P" * 200 + "-two"
        store.sessions.save(Session.new(one, title="one"))
        store.sessions.save(Session.new(two, title="two"))
        assert store.sessions.load(one).title == "one"
        assert store.sessions.load(two).title == "two"
        assert {s.id for s in store.sessions.list()} >= {one, two}

    def test_store_load_miss_is_session_not_found(self, store: Store) -> None:
        """Loading an unknown id raises SessionNotFound (a LookupError) naming the id."""
        with pytest.raises(SessionNotFound) as caught:
            store.sessions.load("conf-missing-7f3a")
        assert isinstance(caught.value, LookupError)
        assert "conf-missing-7f3a" in str(caught.value)

    def test_store_save_overwrites(self, store: Store) -> None:
        """A second save replaces the first snapshot."""
        session = Session.new("conf-over", title="before")
        store.sessions.save(session)
        session.title = "after"
        session.record_user_prompt("more")
        store.sessions.save(session)
        assert_same_session(store.sessions.load("conf-over"), session)

    def test_store_save_none_is_rejected(self, store: Store) -> None:
        """Saving None raises SnapshotError (or TypeError) and stores nothing."""
        with pytest.raises((SnapshotError, TypeError)):
            store.sessions.save(None)  # type: ignore[arg-type]
        assert store.sessions.list() == []

    def test_store_saved_copy_is_isolated(self, store: Store) -> None:
        """Changing the caller's session after save does not reach the store."""
        session = representative_session("conf-iso-save")
        store.sessions.save(session)
        session.title = "changed"
        session.labels["profile"] = "changed"
        session.messages.append(Message(role="user", text="late"))
        session.messages[0] = Message(role="system", text="replaced")
        assert_same_session(
            store.sessions.load("conf-iso-save"), representative_session("conf-iso-save")
        )

    def test_store_loaded_copy_is_isolated(self, store: Store) -> None:
        """Changing a loaded session does not reach the store or other loaded copies."""
        store.sessions.save(representative_session("conf-iso-load"))
        first = store.sessions.load("conf-iso-load")
        first.labels["effort"] = "low"
        first.messages.clear()
        first.extra["x_future_field"]["kept"].append("mutated")
        second = store.sessions.load("conf-iso-load")
        assert_same_session(second, representative_session("conf-iso-load"))
