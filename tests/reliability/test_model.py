"""Model test: MemoryStore and SQLiteStore driven by the same random operations agree.

A hypothesis ``RuleBasedStateMachine`` applies every operation to both stores under
one frozen clock (freezegun, ticked between operations), so timestamps are equal
and compared exactly. Results are compared by value, errors by class. Cursors are
compared by position only (generations are random per backend), and versions not
at all (MemoryStore counts per session, SQLite store-wide; both only promise that
a version changes on every write). Cursors handed to a store are always its own,
picked by the same index from each store's history.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import shutil
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from freezegun import freeze_time
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from sqlstore import (
    Event,
    Kind,
    Lease,
    MemoryStore,
    Principal,
    Relationship,
    Session,
    SQLiteStore,
    State,
    ToolCallRecord,
    snapshot,
)
from sqlstore.errors import StoreError

pytestmark = pytest.mark.slow

IDS = st.sampled_from(["a", "b", "a'b", "é", "a" * 300])
OWNERS = st.sampled_from([None, Principal(issuer="i", subject="u1"), Principal("i", "u2")])
TEXTS = st.text(max_size=12)
START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

Outcome = tuple[str, Any]


def _position(cursor: str) -> int:
    doc = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    return int(doc["p"])


def _records(records: Any) -> list[tuple[Any, ...]]:
    return [(r.kind, r.event, r.gap_reason, _position(r.cursor), r.live) for r in records]


def _meta(meta: Any) -> Any:
    return dataclasses.replace(meta, version=0)


class StoreComparison(RuleBasedStateMachine):
    """Apply each operation to MemoryStore and SQLiteStore and compare what they return."""

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="sqlstore-model-"))
        self.freezer = freeze_time(START)
        self.clock = self.freezer.start()
        self.stores: tuple[Any, Any] = (
            MemoryStore(),
            SQLiteStore(self.dir / "model.db", durability="normal"),
        )
        self.cursors: list[tuple[str, str]] = []
        self.metas: list[tuple[Any, Any]] = []
        self.leases: list[tuple[Lease, Lease]] = []
        self.steps = 0

    def teardown(self) -> None:
        for store in self.stores:
            store.close()
        self.freezer.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def both(self, fn: Callable[[Any, int], Any]) -> tuple[Outcome, Outcome]:
        """Run ``fn(store, index)`` on both stores at the same frozen instant; compare."""
        out: list[Outcome] = []
        for index, store in enumerate(self.stores):
            try:
                out.append(("ok", fn(store, index)))
            except (StoreError, ValueError, TypeError, LookupError) as exc:
                out.append(("error", type(exc)))
        self.clock.tick(timedelta(milliseconds=1))
        self.steps += 1
        return out[0], out[1]

    def same(self, fn: Callable[[Any, int], Any]) -> tuple[Outcome, Outcome]:
        """Like :meth:`both`, and assert that both stores gave the same outcome."""
        mem, sql = self.both(fn)
        assert mem == sql, f"MemoryStore gave {mem!r}, SQLiteStore gave {sql!r}"
        return mem, sql

    # -- sessions --------------------------------------------------------------------

    @rule(sid=IDS, title=TEXTS, owner=OWNERS, state=st.sampled_from(list(State)))
    def create(self, sid: str, title: str, owner: Principal | None, state: State) -> None:
        session = Session.new(sid, title=title, owner=owner)
        session.state = state
        self.same(lambda s, _: s.sessions.create(session))

    @rule(sid=IDS, title=TEXTS, owner=OWNERS, child=st.booleans())
    def save(self, sid: str, title: str, owner: Principal | None, child: bool) -> None:
        if child:
            rel = Relationship(parent_session_id="a", call_id="c1")
            session = Session.new(
                sid, title=title, owner=owner, kind=Kind.SUBAGENT, relationship=rel
            )
        else:
            session = Session.new(sid, title=title, owner=owner)
        self.same(lambda s, _: s.sessions.save(session))

    @rule(sid=IDS)
    def load(self, sid: str) -> None:
        self.same(lambda s, _: snapshot.to_json(s.sessions.load(sid)))

    @rule(sid=IDS)
    def delete(self, sid: str) -> None:
        self.same(lambda s, _: s.sessions.delete(sid))

    @rule(sid=IDS)
    def capture_meta(self, sid: str) -> None:
        metas: list[Any] = [None, None]

        def fn(store: Any, index: int) -> Any:
            metas[index] = store.sessions.meta(sid)
            return _meta(metas[index])

        mem, _ = self.same(fn)
        if mem[0] == "ok":
            self.metas.append((metas[0], metas[1]))

    @precondition(lambda self: self.metas)
    @rule(pick=st.integers(min_value=0))
    def delete_if_unchanged(self, pick: int) -> None:
        pair = self.metas[pick % len(self.metas)]
        self.same(lambda s, i: s.sessions.delete_if_unchanged(pair[i]))

    @rule(limit=st.integers(min_value=1, max_value=4), owner=OWNERS, enforce=st.booleans())
    def page_through(self, limit: int, owner: Principal | None, enforce: bool) -> None:
        def fn(store: Any, _: int) -> Any:
            pages = []
            cursor = None
            while True:
                page = store.sessions.page(limit, cursor, owner=owner, enforce_owner=enforce)
                pages.append(([_meta(m) for m in page.sessions], page.total))
                cursor = page.next_cursor
                if cursor is None:
                    return pages

        self.same(fn)

    @rule()
    def iter_meta(self) -> None:
        self.same(lambda s, _: [_meta(m) for m in s.sessions.iter_meta()])

    @rule(limit=st.integers(0, 3), enforce=st.booleans())
    def inventory(self, limit: int, enforce: bool) -> None:
        def fn(store: Any, _: int) -> Any:
            owner = Principal(issuer="i", subject="u1") if enforce else None
            found = store.sessions.inventory(
                owner=owner,
                enforce_owner=enforce,
                match=lambda m: m.state is not State.RUNNING,
                limit=limit,
            )
            return [_meta(m) for m in found.sessions], found.total, found.more

        self.same(fn)

    @rule()
    def orphans(self) -> None:
        self.same(lambda s, _: [(o.id, o.records, o.audit_rows) for o in s.sessions.orphans()])

    # -- event logs ------------------------------------------------------------------

    @rule(sid=IDS, kind=st.sampled_from(["message", "tool_call", "result"]), text=TEXTS)
    def append_event(self, sid: str, kind: str, text: str) -> None:
        event = Event(kind, seq=self.steps, text=text, data={"k": text})
        mem, sql = self.both(lambda s, _: s.events.append_event(sid, event))
        assert mem[0] == sql[0] == "ok"
        assert _position(mem[1]) == _position(sql[1])
        self.cursors.append((mem[1], sql[1]))

    @rule(sid=IDS, reason=TEXTS)
    def append_gap(self, sid: str, reason: str) -> None:
        mem, sql = self.both(lambda s, _: s.events.append_gap(sid, reason))
        assert mem[0] == sql[0] == "ok"
        assert _position(mem[1]) == _position(sql[1])
        self.cursors.append((mem[1], sql[1]))

    @rule(
        sid=IDS,
        start=st.one_of(
            st.just("start"),
            st.integers(min_value=0),
            st.sampled_from(["garbage", "e30", "!!", "eyJ2IjoiY3VyLzEifQ"]),
        ),
        limit=st.integers(min_value=0, max_value=5),
    )
    def read_after(self, sid: str, start: Any, limit: int) -> None:
        def fn(store: Any, index: int) -> Any:
            if start == "start":
                after = ""
            elif isinstance(start, int) and self.cursors:
                after = self.cursors[start % len(self.cursors)][index]
            elif isinstance(start, int):
                after = ""
            else:
                after = start
            return _records(store.events.read_after(sid, after, limit=limit))

        self.same(fn)

    @rule(sid=IDS)
    def read(self, sid: str) -> None:
        self.same(lambda s, _: list(s.events.read(sid)))

    # -- audit -----------------------------------------------------------------------

    @rule(sid=IDS, tool=st.sampled_from(["bash", "edit", "web"]), failed=st.booleans())
    def audit_record(self, sid: str, tool: str, failed: bool) -> None:
        rec = ToolCallRecord(sid, call_id=str(self.steps), tool=tool, args="{}", is_error=failed)
        self.same(lambda s, _: s.audit.record(rec))

    @rule(sid=IDS)
    def audit_list(self, sid: str) -> None:
        self.same(lambda s, _: s.audit.list(sid))

    @rule(
        tool=st.sampled_from([None, "bash", "web"]),
        errors_only=st.booleans(),
        limit=st.one_of(st.none(), st.integers(min_value=0, max_value=4)),
        since_ms=st.one_of(st.none(), st.integers(min_value=0, max_value=200)),
    )
    def audit_query(
        self, tool: str | None, errors_only: bool, limit: int | None, since_ms: int | None
    ) -> None:
        since = None if since_ms is None else START + timedelta(milliseconds=since_ms)
        self.same(
            lambda s, _: s.audit.query(tool=tool, since=since, errors_only=errors_only, limit=limit)
        )

    # -- leases ----------------------------------------------------------------------

    @rule(sid=IDS, owner=st.sampled_from(["w1", "w2"]), ttl_s=st.sampled_from([1, 30, 3600]))
    def lease_acquire(self, sid: str, owner: str, ttl_s: int) -> None:
        mem, sql = self.same(lambda s, _: s.leases.acquire(sid, owner, timedelta(seconds=ttl_s)))
        if mem[0] == "ok":
            self.leases.append((mem[1], sql[1]))

    @precondition(lambda self: self.leases)
    @rule(pick=st.integers(min_value=0), ttl_s=st.sampled_from([1, 60]))
    def lease_renew(self, pick: int, ttl_s: int) -> None:
        pair = self.leases[pick % len(self.leases)]
        self.same(lambda s, i: s.leases.renew(pair[i], timedelta(seconds=ttl_s)))

    @precondition(lambda self: self.leases)
    @rule(pick=st.integers(min_value=0))
    def lease_release(self, pick: int) -> None:
        pair = self.leases[pick % len(self.leases)]
        self.same(lambda s, i: s.leases.release(pair[i]))

    @rule(seconds=st.sampled_from([1, 20, 4000]))
    def advance_clock(self, seconds: int) -> None:
        self.clock.tick(timedelta(seconds=seconds))

    @invariant()
    def same_inventory_and_leases(self) -> None:
        self.same(lambda s, _: (sorted(s.sessions.list(), key=lambda x: x.id), s.leases.held()))


StoreComparison.TestCase.settings = settings(
    max_examples=50,
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_memory_and_sqlite_stores_agree = StoreComparison.TestCase
test_memory_and_sqlite_stores_agree.__doc__ = (
    "MemoryStore and SQLiteStore return the same results for the same random operations."
)
