"""Inventory suites: listing and deleting, paging, and conditional deletion.

``PrunableSuite`` (mecatl 8.2), ``PagerSuite`` (8.3) and
``ConditionalPruneSuite`` (8.4) against ``store.sessions`` (SPEC §3.1).
Tests that need equal or stepped modification times freeze the clock with
freezegun; the backend must read the clock at call time for them to pass.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
from freezegun import freeze_time

from sqlstore import clock
from sqlstore.audit import ToolCallRecord
from sqlstore.conformance.base import SuiteBase
from sqlstore.conformance.fixtures import ALICE, BOB, kind_session
from sqlstore.conformance.orphans import OrphanChecks
from sqlstore.errors import MetadataCursorRestart, SessionNotFound
from sqlstore.events import Event
from sqlstore.model import Kind, Principal
from sqlstore.ports import Store
from sqlstore.session import Session

FROZEN_AT = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)
"""The instant frozen-clock tests run at."""

PRUNE_IDS = {
    "subagent-conf-1": "subagent",
    "parallel-conf-1-0": "parallel_branch",
    "team-conf-1-lead": "team_member",
    "conf-main-1": "main",
}


def tamper(cursor: str) -> str:
    """Return ``cursor`` with its middle character replaced (still base64url text)."""
    middle = len(cursor) // 2
    replacement = "A" if cursor[middle] != "A" else "B"
    return cursor[:middle] + replacement + cursor[middle + 1 :]


class PrunableSuite(SuiteBase):
    """Listing reports every session with the time of its last write; delete removes it."""

    __test__ = False

    def test_prunable_list_across_kinds(self, store: Store) -> None:
        """Sessions of every family are listed with modified_at inside the save window."""
        before = clock.now()
        for session_id, case in PRUNE_IDS.items():
            store.sessions.save(kind_session(session_id, case))
        after = clock.now()
        listed = {s.id: s.modified_at for s in store.sessions.list()}
        assert set(listed) == set(PRUNE_IDS)
        for session_id, modified_at in listed.items():
            assert modified_at.utcoffset() == timedelta(0), session_id
            low, high = before - timedelta(minutes=1), after + timedelta(minutes=1)
            assert low <= modified_at <= high, (session_id, modified_at, before, after)

    def test_prunable_modified_at_tracks_save_order(self, store: Store) -> None:
        """A later save is never listed as earlier than a previous one (equal allowed)."""
        store.sessions.save(Session.new("conf-order-1"))
        store.sessions.save(Session.new("conf-order-2"))
        listed = {s.id: s.modified_at for s in store.sessions.list()}
        assert listed["conf-order-2"] >= listed["conf-order-1"]

    def test_prunable_modified_at_is_the_save_time(self, store: Store) -> None:
        """modified_at is the instant of the save as read from the clock at call time."""
        with freeze_time(FROZEN_AT) as frozen:
            store.sessions.save(Session.new("conf-tick-1"))
            frozen.tick(timedelta(seconds=5))
            store.sessions.save(Session.new("conf-tick-2"))
            frozen.tick(timedelta(seconds=60))
            listed = {s.id: s.modified_at for s in store.sessions.list()}
        assert listed["conf-tick-1"] == FROZEN_AT
        assert listed["conf-tick-2"] == FROZEN_AT + timedelta(seconds=5)

    def test_prunable_modified_at_stable_across_lists(self, store: Store) -> None:
        """Two listings 10 ms apart report identical modification times."""
        store.sessions.save(Session.new("conf-stable-1"))
        store.sessions.save(Session.new("conf-stable-2"))
        first = sorted((s.id, s.modified_at) for s in store.sessions.list())
        time.sleep(0.01)
        second = sorted((s.id, s.modified_at) for s in store.sessions.list())
        assert first == second

    def test_prunable_iter_meta_oldest_first(self, store: Store) -> None:
        """iter_meta streams every row oldest first, equal times by id, matching meta()."""
        with freeze_time(FROZEN_AT) as frozen:
            for session_id in ("conf-it-b", "conf-it-a"):
                store.sessions.save(Session.new(session_id))
            frozen.tick(timedelta(seconds=1))
            store.sessions.save(Session.new("conf-it-0"))
        rows = list(store.sessions.iter_meta())
        assert [r.id for r in rows] == ["conf-it-a", "conf-it-b", "conf-it-0"]
        assert rows == [store.sessions.meta(r.id) for r in rows]

    def test_prunable_delete_removes_from_list_and_load(self, store: Store) -> None:
        """Delete removes snapshot, events and audit from load and list, and keeps the sibling."""
        store.sessions.save(Session.new("conf-del"))
        store.sessions.save(Session.new("conf-del-sibling"))
        store.events.append("conf-del", Event(type="note", text="x"))
        store.audit.record(ToolCallRecord(session_id="conf-del", call_id="c1", tool="Bash"))
        store.sessions.delete("conf-del")
        with pytest.raises(SessionNotFound):
            store.sessions.load("conf-del")
        assert [s.id for s in store.sessions.list()] == ["conf-del-sibling"]
        assert list(store.events.read("conf-del")) == []
        assert store.audit.list("conf-del") == []
        assert store.sessions.load("conf-del-sibling").id == "conf-del-sibling"

    def test_prunable_delete_unknown_id_is_noop(self, store: Store) -> None:
        """Deleting an id that was never stored succeeds and changes nothing."""
        store.sessions.save(Session.new("conf-keep"))
        store.sessions.delete("conf-never-stored")
        store.sessions.delete("conf-never-stored")
        assert [s.id for s in store.sessions.list()] == ["conf-keep"]


def seed_pager(store: Store) -> None:
    """Save b and a (alice), foreign (bob) and ownerless, all at one frozen instant."""
    with freeze_time(FROZEN_AT):
        for session_id, owner in (
            ("b", ALICE),
            ("a", ALICE),
            ("foreign", BOB),
            ("ownerless", None),
        ):
            store.sessions.save(
                Session.new(session_id, owner=owner, title=f"title {session_id}", model_id="m-1")
            )


class PagerSuite(SuiteBase):
    """``sessions.page`` pages by keyset within an owner scope and restarts stale cursors."""

    __test__ = False

    def test_pager_owner_pages(self, store: Store) -> None:
        """Alice gets a then b in two one-row pages with total 2 and no foreign rows."""
        seed_pager(store)
        first = store.sessions.page(1, owner=ALICE, enforce_owner=True)
        assert [m.id for m in first.sessions] == ["a"]
        assert first.total == 2
        assert first.next_cursor
        second = store.sessions.page(1, first.next_cursor, owner=ALICE, enforce_owner=True)
        assert [m.id for m in second.sessions] == ["b"]
        assert second.total == 2
        assert second.next_cursor is None

    def test_pager_rows_are_populated(self, store: Store) -> None:
        """Rows carry owner, kind main, title, model, state, version and a positive size."""
        seed_pager(store)
        page = store.sessions.page(10, owner=ALICE, enforce_owner=True)
        assert [m.id for m in page.sessions] == ["a", "b"]
        for row in page.sessions:
            assert row.owner is not None and row.owner.identity == ALICE.identity
            assert row.kind is Kind.MAIN
            assert row.title == f"title {row.id}"
            assert row.model_id == "m-1"
            assert row.state == "idle"
            assert row.version >= 1
            assert row.estimated_bytes > 0
            assert row.modified_at == FROZEN_AT
            assert row == store.sessions.meta(row.id)

    def test_pager_unscoped_sees_everything(self, store: Store) -> None:
        """Without enforce_owner every session is counted and listed, equal times by id."""
        seed_pager(store)
        page = store.sessions.page(10)
        assert [m.id for m in page.sessions] == ["a", "b", "foreign", "ownerless"]
        assert page.total == 4 and page.next_cursor is None

    def test_pager_enforce_owner_without_owner_selects_nothing(self, store: Store) -> None:
        """enforce_owner with owner None returns no rows and a total of 0."""
        seed_pager(store)
        page = store.sessions.page(10, owner=None, enforce_owner=True)
        assert (page.sessions, page.total, page.next_cursor) == ([], 0, None)

    def test_pager_identity_is_issuer_and_subject(self, store: Store) -> None:
        """An owner with alice's issuer and subject but another name sees alice's rows."""
        seed_pager(store)
        alias = Principal(issuer=ALICE.issuer, subject=ALICE.subject, name="someone else")
        page = store.sessions.page(10, owner=alias, enforce_owner=True)
        assert [m.id for m in page.sessions] == ["a", "b"]

    def test_pager_meta_miss_is_session_not_found(self, store: Store) -> None:
        """meta() of an unknown id raises SessionNotFound naming the id."""
        seed_pager(store)
        with pytest.raises(SessionNotFound, match="conf-no-such-row"):
            store.sessions.meta("conf-no-such-row")

    def test_pager_foreign_scope_cursor_restarts(self, store: Store) -> None:
        """Bob using alice's cursor gets MetadataCursorRestart."""
        seed_pager(store)
        cursor = store.sessions.page(1, owner=ALICE, enforce_owner=True).next_cursor
        assert cursor
        with pytest.raises(MetadataCursorRestart):
            store.sessions.page(1, cursor, owner=BOB, enforce_owner=True)
        with pytest.raises(MetadataCursorRestart):
            store.sessions.page(1, cursor)

    def test_pager_tampered_cursor_restarts(self, store: Store) -> None:
        """A cursor with a changed character, or one that is not a cursor, restarts."""
        seed_pager(store)
        cursor = store.sessions.page(1, owner=ALICE, enforce_owner=True).next_cursor
        assert cursor
        for bad in (tamper(cursor), "not-a-cursor", cursor + "x"):
            with pytest.raises(MetadataCursorRestart):
                store.sessions.page(1, bad, owner=ALICE, enforce_owner=True)

    def test_pager_cursor_after_save_restarts(self, store: Store) -> None:
        """A cursor issued before another save restarts."""
        seed_pager(store)
        cursor = store.sessions.page(1, owner=ALICE, enforce_owner=True).next_cursor
        assert cursor
        with freeze_time(FROZEN_AT):
            changed = store.sessions.load("b")
            changed.title = "changed"
            store.sessions.save(changed)
        with pytest.raises(MetadataCursorRestart):
            store.sessions.page(1, cursor, owner=ALICE, enforce_owner=True)

    def test_pager_orders_newest_first(self, store: Store) -> None:
        """Rows come newest first by modified_at, and pages never repeat or skip a row."""
        with freeze_time(FROZEN_AT) as frozen:
            for index in range(7):
                store.sessions.save(Session.new(f"conf-p{index}"))
                if index % 2:
                    frozen.tick(timedelta(seconds=1))
        seen: list[str] = []
        cursor: str | None = None
        while True:
            page = store.sessions.page(2, cursor)
            assert page.total == 7
            seen.extend(m.id for m in page.sessions)
            cursor = page.next_cursor
            if cursor is None:
                break
        assert seen == ["conf-p6", "conf-p4", "conf-p5", "conf-p2", "conf-p3", "conf-p0", "conf-p1"]

    def test_inventory_lists_everything_newest_first(self, store: Store) -> None:
        """inventory() holds every row in page order, with the total and the rows of meta()."""
        with freeze_time(FROZEN_AT) as frozen:
            for index in range(5):
                store.sessions.save(Session.new(f"conf-i{index}"))
                frozen.tick(timedelta(seconds=index % 2))
        listing = store.sessions.inventory()
        assert [m.id for m in listing.sessions] == [
            "conf-i4",
            "conf-i2",
            "conf-i3",
            "conf-i0",
            "conf-i1",
        ]
        assert (listing.total, listing.more) == (5, False)
        assert listing.sessions == [store.sessions.meta(m.id) for m in listing.sessions]

    def test_inventory_match_limit_and_owner_scope(self, store: Store) -> None:
        """match filters, limit stops with more=True, and the owner scope is page()'s."""
        seed_pager(store)
        owned = store.sessions.inventory(owner=ALICE, enforce_owner=True)
        assert ([m.id for m in owned.sessions], owned.total) == (["a", "b"], 2)
        nobody = store.sessions.inventory(owner=None, enforce_owner=True)
        assert (nobody.sessions, nobody.total, nobody.more) == ([], 0, False)
        some = store.sessions.inventory(match=lambda m: m.owner is not None, limit=2)
        assert ([m.id for m in some.sessions], some.total, some.more) == (["a", "b"], 4, True)
        exact = store.sessions.inventory(match=lambda m: m.owner is not None, limit=3)
        assert ([m.id for m in exact.sessions], exact.more) == (["a", "b", "foreign"], False)


class ConditionalPruneSuite(OrphanChecks, SuiteBase):
    """``delete_if_unchanged`` deletes only a session whose row still matches."""

    __test__ = False

    def test_conditional_stale_row_then_fresh_row(self, store: Store) -> None:
        """A stale row deletes nothing (False); the fresh row deletes (True); load then misses."""
        session = Session.new("conf-cond", owner=ALICE)
        store.sessions.save(session)
        stale = store.sessions.page(10, owner=ALICE, enforce_owner=True).sessions[0]
        session.title = "changed"
        store.sessions.save(session)
        assert store.sessions.delete_if_unchanged(stale) is False
        assert store.sessions.load("conf-cond").title == "changed"
        fresh = store.sessions.page(10, owner=ALICE, enforce_owner=True).sessions[0]
        assert store.sessions.delete_if_unchanged(fresh) is True
        with pytest.raises(SessionNotFound):
            store.sessions.load("conf-cond")
        assert store.sessions.delete_if_unchanged(fresh) is False

    def test_conditional_event_append_makes_row_stale(self, store: Store) -> None:
        """An event appended after meta() bumps the version, so the old row deletes nothing."""
        with freeze_time(FROZEN_AT):
            store.sessions.save(Session.new("conf-cond-ev"))
            row = store.sessions.meta("conf-cond-ev")
            store.events.append("conf-cond-ev", Event(type="note", text="late"))
            assert store.sessions.meta("conf-cond-ev").version > row.version
            assert store.sessions.delete_if_unchanged(row) is False
        assert [e.text for e in store.events.read("conf-cond-ev")] == ["late"]
        fresh = store.sessions.meta("conf-cond-ev")
        assert store.sessions.delete_if_unchanged(fresh) is True
        assert list(store.events.read("conf-cond-ev")) == []

    def test_conditional_audit_record_makes_row_stale(self, store: Store) -> None:
        """An audit record written after meta() makes the old row stale."""
        store.sessions.save(Session.new("conf-cond-au"))
        row = store.sessions.meta("conf-cond-au")
        store.audit.record(ToolCallRecord(session_id="conf-cond-au", call_id="c1", tool="Bash"))
        assert store.sessions.delete_if_unchanged(row) is False
        assert len(store.audit.list("conf-cond-au")) == 1
        assert store.sessions.delete_if_unchanged(store.sessions.meta("conf-cond-au")) is True
        assert store.audit.list("conf-cond-au") == []

    def test_conditional_missing_row_is_false(self, store: Store) -> None:
        """A row for a session that was deleted meanwhile deletes nothing and returns False."""
        store.sessions.save(Session.new("conf-cond-gone"))
        store.sessions.save(Session.new("conf-cond-other"))
        row = store.sessions.meta("conf-cond-gone")
        store.sessions.delete("conf-cond-gone")
        assert store.sessions.delete_if_unchanged(row) is False
        assert [s.id for s in store.sessions.list()] == ["conf-cond-other"]
