"""Retention (plan + sweep) runs unchanged on RedisStore: age, leases, late writes, cascades."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from freezegun import freeze_time
from redis_server import redis_server, redis_url  # noqa: F401  (fixtures)
from test_retention_support import T0, put, put_now

from retention import Policy, Rule, plan, sweep
from sqlstore import Event, State, ToolCallRecord
from sqlstore.errors import SessionNotFound
from sqlstore.redis import RedisStore

DAY = timedelta(days=1)
CHILD_AGE = Policy(child=Rule(max_age=7 * DAY))


@pytest.fixture
def store(redis_url: str) -> Iterator[RedisStore]:  # noqa: F811
    """A RedisStore on a private prefix of the shared test server."""
    with RedisStore(redis_url) as opened:
        yield opened


def test_plan_and_sweep_delete_stale_sessions_with_history(store: RedisStore) -> None:
    """Stale sessions go with their events, generation and audit rows; fresh and running stay."""
    with freeze_time(T0 - 10 * DAY):
        for sid in ("a", "b"):
            put_now(store, sid)
            store.events.append(sid, Event(type="user_prompt", text="x"))
            store.audit.record(ToolCallRecord(session_id=sid, call_id="c1", tool="bash"))
    put(store, "running", T0 - 10 * DAY, state=State.RUNNING)
    put(store, "fresh", T0 - DAY)
    the_plan = plan(store, CHILD_AGE, now=T0)
    assert sorted(e.meta.id for e in the_plan.entries) == ["a", "b"]
    report = sweep(store, the_plan)
    assert (report.deleted, report.changed, report.failed) == (2, 0, 0)
    assert sorted(m.id for m in store.sessions.iter_meta()) == ["fresh", "running"]
    for sid in ("a", "b"):
        with pytest.raises(SessionNotFound):
            store.sessions.load(sid)
        assert list(store.events.read(sid)) == []
        assert store.audit.list(sid) == []
    leftovers = store.conn.client.keys(f"{store.prefix}*:a")
    assert leftovers == []


def test_writes_after_planning_and_leases_protect(store: RedisStore) -> None:
    """An append after planning, a save after planning and a lease all keep their session."""
    for sid in ("appended", "saved", "leased", "doomed"):
        put(store, sid, T0 - 10 * DAY)
    the_plan = plan(store, CHILD_AGE, now=T0)
    assert len(the_plan.entries) == 4
    store.events.append("appended", Event(type="note", text="still here"))
    resumed = store.sessions.load("saved")
    resumed.title = "resumed"
    store.sessions.save(resumed)
    store.leases.acquire("leased", "agent-1", timedelta(hours=1))
    report = sweep(store, the_plan)
    assert (report.deleted, report.changed, report.leased) == (1, 2, 1)
    assert sorted(s.id for s in store.sessions.list()) == ["appended", "leased", "saved"]


def test_plan_protects_leased_sessions(store: RedisStore) -> None:
    """plan() reads leases from Redis: a live lease protects, an expired one does not."""
    put(store, "s", T0 - 10 * DAY)
    with freeze_time(T0 - timedelta(minutes=30)):
        store.leases.acquire("s", "agent", timedelta(hours=1))
    with freeze_time(T0):
        assert [e.meta.id for e in plan(store, CHILD_AGE).entries] == []
    with freeze_time(T0 + DAY):
        assert [e.meta.id for e in plan(store, CHILD_AGE).entries] == ["s"]


def test_sweep_round_history_is_kept_in_redis(store: RedisStore, redis_url: str) -> None:  # noqa: F811
    """A recorded sweep is read back through retention.history by a second RedisStore handle."""
    from retention.history import list_runs, record_run, run_record

    put(store, "old", T0 - 10 * DAY)
    with freeze_time(T0):
        report = sweep(store, plan(store, CHILD_AGE, now=T0))
        record_run(store, run_record("hash-1", T0, report))
    with RedisStore(redis_url) as other:
        (run,) = list_runs(other)
    assert (run.policy_hash, run.deleted, run.id) == ("hash-1", 1, 1)
