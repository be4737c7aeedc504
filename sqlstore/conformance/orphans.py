"""Orphan writes: event logs and audit rows under an id with no snapshot (issue 20 item 7).

Mixed into :class:`~sqlstore.conformance.inventory.ConditionalPruneSuite`: an append
or audit record to an id without a snapshot makes it an orphan, listed by
``sessions.orphans()`` with its last write and counts; a snapshot save adopts it;
``delete`` removes it; ``delete_orphan_if_unchanged`` removes it only while nothing
wrote to the id since it was listed and no lease is live.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from freezegun import freeze_time

from sqlstore.audit import ToolCallRecord
from sqlstore.events import Event
from sqlstore.ports import Store
from sqlstore.session import Session

FROZEN_AT = datetime(2026, 6, 2, 12, 0, 0, tzinfo=UTC)
"""The instant frozen-clock orphan tests run at."""


class OrphanChecks:
    """Orphans are listed, adopted by a save, and removed (conditionally or not)."""

    def test_orphan_append_after_delete_is_listed(self, store: Store) -> None:
        """An append after delete, and an audit record before any save, are listed orphans."""
        with freeze_time(FROZEN_AT) as frozen:
            store.sessions.save(Session.new("conf-orph-1"))
            store.sessions.delete("conf-orph-1")
            store.events.append_event("conf-orph-1", Event("late"))
            store.events.append_gap("conf-orph-1", "lost")
            frozen.tick(timedelta(seconds=3))
            store.audit.record(ToolCallRecord(session_id="conf-orph-2", call_id="c", tool="T"))
            store.sessions.save(Session.new("conf-kept"))
            store.events.append_event("conf-kept", Event("e"))
        found = {o.id: o for o in store.sessions.orphans()}
        assert [o.id for o in store.sessions.orphans()] == ["conf-orph-2", "conf-orph-1"]
        first, second = found["conf-orph-1"], found["conf-orph-2"]
        assert (first.modified_at, first.records, first.audit_rows) == (FROZEN_AT, 2, 0)
        assert second.modified_at == FROZEN_AT + timedelta(seconds=3)
        assert (second.records, second.audit_rows) == (0, 1)

    def test_orphan_is_adopted_by_a_save(self, store: Store) -> None:
        """Saving a snapshot under an orphan's id makes it an ordinary session again."""
        store.events.append_event("conf-orph-3", Event("early"))
        assert [o.id for o in store.sessions.orphans()] == ["conf-orph-3"]
        store.sessions.save(Session.new("conf-orph-3"))
        assert store.sessions.orphans() == []
        assert [e.type for e in store.events.read("conf-orph-3")] == ["early"]

    def test_orphan_delete_removes_everything(self, store: Store) -> None:
        """delete() of an orphan's id removes its log and audit rows."""
        store.events.append_event("conf-orph-4", Event("x"))
        store.audit.record(ToolCallRecord(session_id="conf-orph-4", call_id="c", tool="T"))
        store.sessions.delete("conf-orph-4")
        assert store.sessions.orphans() == []
        assert list(store.events.read("conf-orph-4")) == []
        assert store.audit.list("conf-orph-4") == []

    def test_orphan_conditional_delete(self, store: Store) -> None:
        """A listed orphan is deleted only while unchanged and unleased."""
        with freeze_time(FROZEN_AT) as frozen:
            store.events.append_event("conf-orph-5", Event("x"))
            (listed,) = store.sessions.orphans()
            frozen.tick(timedelta(seconds=1))
            store.events.append_event("conf-orph-5", Event("y"))
            assert store.sessions.delete_orphan_if_unchanged(listed) is False
            (fresh,) = store.sessions.orphans()
            lease = store.leases.acquire("conf-orph-5", "holder", timedelta(minutes=5))
            assert store.sessions.delete_orphan_if_unchanged(fresh) is False
            store.leases.release(lease)
            assert store.sessions.delete_orphan_if_unchanged(fresh) is True
        assert store.sessions.orphans() == []
        assert list(store.events.read("conf-orph-5")) == []
        assert store.sessions.delete_orphan_if_unchanged(fresh) is False

    def test_orphan_batch_append_and_apply_without_snapshot(self, store: Store) -> None:
        """append_events and apply without a snapshot make orphans; apply with one adopts it."""
        store.events.append_events("conf-orph-6", [Event("a"), Event("b")])
        store.apply("conf-orph-7", events=[Event("c")])
        found = {o.id: o.records for o in store.sessions.orphans()}
        assert found == {"conf-orph-6": 2, "conf-orph-7": 1}
        store.apply("conf-orph-7", snapshot=Session.new("conf-orph-7"), events=[Event("d")])
        assert [o.id for o in store.sessions.orphans()] == ["conf-orph-6"]
