"""``AuditQuerySuite``: the tool-call audit trail and its cross-session query (SPEC §3.3).

``list`` returns one session's records in record order; ``query`` filters
records of every session by tool, time (``since``, inclusive) and error flag,
in record order, cut to ``limit``. Times come from a frozen clock (freezegun).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from freezegun import freeze_time

from sqlstore.audit import ToolCallRecord
from sqlstore.conformance.base import SuiteBase
from sqlstore.ports import Store
from sqlstore.session import Session

T0 = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)
"""The instant the first record of the frozen-clock tests is made at."""


def record(store: Store, session_id: str, call_id: str, tool: str, *, error: bool = False) -> None:
    """Record one tool call with the given tool and error flag (``at`` from the clock)."""
    store.audit.record(
        ToolCallRecord(
            session_id=session_id,
            call_id=call_id,
            tool=tool,
            args=f'{{"call":"{call_id}"}}',
            result="boom" if error else "ok",
            is_error=error,
            queued_us=3,
            took_us=250,
            run_id="run-1",
        )
    )


def calls(records: list[ToolCallRecord]) -> list[str]:
    """The call ids of ``records``, in order."""
    return [r.call_id for r in records]


class AuditQuerySuite(SuiteBase):
    """Recording, listing and querying tool calls behave alike on every backend."""

    __test__ = False

    def fill(self, store: Store) -> None:
        """Record six calls over two sessions, one minute apart, starting at ``T0``."""
        plan = [
            ("conf-audit-a", "c1", "search", False),
            ("conf-audit-b", "c2", "shell", True),
            ("conf-audit-a", "c3", "shell", False),
            ("conf-audit-b", "c4", "search", True),
            ("conf-audit-a", "c5", "search", False),
            ("conf-audit-b", "c6", "fetch", False),
        ]
        with freeze_time(T0) as frozen:
            for session_id, call_id, tool, error in plan:
                record(store, session_id, call_id, tool, error=error)
                frozen.tick(timedelta(minutes=1))

    def test_audit_round_trips_every_field(self, store: Store) -> None:
        """A recorded call is listed back with every field equal and ``at`` set to the clock."""
        with freeze_time(T0):
            record(store, "conf-audit-a", "c1", "search", error=True)
        (got,) = store.audit.list("conf-audit-a")
        assert got == ToolCallRecord(
            session_id="conf-audit-a",
            call_id="c1",
            tool="search",
            args='{"call":"c1"}',
            result="boom",
            is_error=True,
            at=T0,
            queued_us=3,
            took_us=250,
            run_id="run-1",
        )

    def test_audit_keeps_a_given_time(self, store: Store) -> None:
        """A record that carries its own ``at`` keeps it."""
        at = datetime(2025, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
        store.audit.record(ToolCallRecord(session_id="conf-audit-a", call_id="x", at=at))
        assert [r.at for r in store.audit.list("conf-audit-a")] == [at]

    def test_audit_list_is_per_session_in_record_order(self, store: Store) -> None:
        """Each session lists its own records in record order; an unknown id lists none."""
        self.fill(store)
        assert calls(store.audit.list("conf-audit-a")) == ["c1", "c3", "c5"]
        assert calls(store.audit.list("conf-audit-b")) == ["c2", "c4", "c6"]
        assert store.audit.list("conf-audit-none") == []

    def test_audit_query_without_filters_returns_all_in_record_order(self, store: Store) -> None:
        """``query()`` returns every record of every session, oldest first."""
        self.fill(store)
        assert calls(store.audit.query()) == ["c1", "c2", "c3", "c4", "c5", "c6"]

    def test_audit_query_by_tool(self, store: Store) -> None:
        """``tool`` selects exactly the records of that tool; an unknown tool selects none."""
        self.fill(store)
        assert calls(store.audit.query(tool="search")) == ["c1", "c4", "c5"]
        assert store.audit.query(tool="nope") == []

    def test_audit_query_since_is_inclusive(self, store: Store) -> None:
        """``since`` keeps records made at or after it."""
        self.fill(store)
        since = T0 + timedelta(minutes=2)
        assert calls(store.audit.query(since=since)) == ["c3", "c4", "c5", "c6"]
        assert store.audit.query(since=T0 + timedelta(hours=1)) == []

    def test_audit_query_errors_only(self, store: Store) -> None:
        """``errors_only`` keeps the failed calls."""
        self.fill(store)
        assert calls(store.audit.query(errors_only=True)) == ["c2", "c4"]

    def test_audit_query_combines_filters_and_limit(self, store: Store) -> None:
        """Filters combine with AND, and ``limit`` keeps the oldest matches."""
        self.fill(store)
        since = T0 + timedelta(minutes=1)
        assert calls(store.audit.query(tool="search", since=since)) == ["c4", "c5"]
        assert calls(store.audit.query(tool="search", errors_only=True)) == ["c4"]
        assert calls(store.audit.query(limit=2)) == ["c1", "c2"]
        assert calls(store.audit.query(tool="shell", limit=1)) == ["c2"]

    def test_audit_delete_removes_the_sessions_records(self, store: Store) -> None:
        """Deleting a session removes its records from ``list`` and ``query``, sparing others."""
        self.fill(store)
        store.sessions.save(Session.new("conf-audit-a"))
        store.sessions.delete("conf-audit-a")
        assert store.audit.list("conf-audit-a") == []
        assert calls(store.audit.query()) == ["c2", "c4", "c6"]

    def test_audit_record_is_a_write_to_the_session(self, store: Store) -> None:
        """Recording a call moves the session's modified_at and version forward."""
        with freeze_time(T0) as frozen:
            store.sessions.save(Session.new("conf-audit-a"))
            before = store.sessions.meta("conf-audit-a")
            frozen.tick(timedelta(seconds=5))
            record(store, "conf-audit-a", "c1", "search")
            after = store.sessions.meta("conf-audit-a")
        assert after.version == before.version + 1
        assert after.modified_at == T0 + timedelta(seconds=5)

    def test_audit_is_seen_by_a_second_handle(self, pair: tuple[Store, Store]) -> None:
        """Records made through one handle are listed and queried through the other."""
        first, second = pair
        record(first, "conf-audit-a", "c1", "search")
        assert calls(second.audit.list("conf-audit-a")) == ["c1"]
        assert calls(second.audit.query(tool="search")) == ["c1"]
