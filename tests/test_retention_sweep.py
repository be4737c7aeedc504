"""The sweep: conditional deletes, late writes and leases, stop, failures, file shrink."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from freezegun import freeze_time
from test_retention_support import BACKENDS, T0, opened_store, put, put_now

from retention import Policy, Rule, plan, sweep
from sqlstore import Event, Session, SQLiteStore, State, ToolCallRecord
from sqlstore.errors import SessionNotFound
from sqlstore.ports import Store

DAY = timedelta(days=1)
CHILD_AGE = Policy(child=Rule(max_age=7 * DAY))


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A fresh store of each backend."""
    with opened_store(str(request.param), tmp_path / "sessions.db") as opened:
        yield opened


def old_sessions_with_history(store: Store, sids: list[str], *, payload: int = 100) -> None:
    """Store stale sessions with two events and one audit record each, written 10 days ago."""
    with freeze_time(T0 - 10 * DAY):
        for sid in sids:
            put_now(store, sid)
            store.events.append(sid, Event(type="user_prompt", text="x" * payload))
            store.events.append(sid, Event(type="turn.start"))
            store.audit.record(
                ToolCallRecord(session_id=sid, call_id="c1", tool="bash", args="{}", result="ok")
            )


def test_sweep_deletes_snapshot_events_and_audit(store: Store) -> None:
    """Every planned session goes with its events and audit rows; fresh ones stay."""
    old_sessions_with_history(store, ["a", "b", "c"])
    put(store, "fresh", T0 - DAY)
    the_plan = plan(store, CHILD_AGE, now=T0)
    report = sweep(store, the_plan)
    assert (report.planned, report.deleted, report.changed, report.leased, report.failed) == (
        3,
        3,
        0,
        0,
        0,
    )
    assert report.ok and not report.interrupted
    assert [m.id for m in store.sessions.iter_meta()] == ["fresh"]
    for sid in ("a", "b", "c"):
        with pytest.raises(SessionNotFound):
            store.sessions.load(sid)
        assert list(store.events.read(sid)) == []
        assert store.audit.list(sid) == []


def test_session_written_after_planning_survives(store: Store) -> None:
    """A session appended to between plan and sweep is kept and counted changed."""
    old_sessions_with_history(store, ["busy", "idle"])
    the_plan = plan(store, CHILD_AGE, now=T0)
    assert the_plan.counts.total == 2
    store.events.append("busy", Event(type="user_prompt", text="still here"))
    report = sweep(store, the_plan)
    assert (report.deleted, report.changed) == (1, 1)
    assert [e.text for e in store.events.read("busy")][-1] == "still here"
    assert store.sessions.load("busy").id == "busy"


def test_session_saved_after_planning_survives(store: Store) -> None:
    """A session saved (e.g. resumed into running) after planning is kept."""
    put(store, "s", T0 - 10 * DAY)
    the_plan = plan(store, CHILD_AGE, now=T0)
    session = store.sessions.load("s")
    session.reopen()
    session.begin_turn()
    store.sessions.save(session)
    report = sweep(store, the_plan)
    assert (report.deleted, report.changed) == (0, 1)
    assert store.sessions.load("s").state is State.RUNNING


def test_lease_taken_after_planning_protects(store: Store) -> None:
    """A session leased after planning is not deleted and is counted leased."""
    put(store, "leased", T0 - 10 * DAY)
    put(store, "free", T0 - 10 * DAY)
    the_plan = plan(store, CHILD_AGE, now=T0)
    assert the_plan.counts.total == 2
    store.leases.acquire("leased", "agent-1", timedelta(hours=1))
    report = sweep(store, the_plan)
    assert (report.deleted, report.leased, report.changed) == (1, 1, 0)
    assert report.skipped == 1
    assert store.sessions.meta("leased").id == "leased"


def test_session_deleted_after_planning_counts_changed(store: Store) -> None:
    """A session removed by someone else after planning is counted changed, not failed."""
    put(store, "gone", T0 - 10 * DAY)
    the_plan = plan(store, CHILD_AGE, now=T0)
    store.sessions.delete("gone")
    report = sweep(store, the_plan)
    assert (report.deleted, report.changed, report.failed) == (0, 1, 0)


def test_stop_event_ends_sweep_before_next_entry(store: Store) -> None:
    """A set stop event ends the sweep between entries, leaving the rest for later."""
    with freeze_time(T0 - 10 * DAY):
        for i in range(5):
            put_now(store, f"s{i}")
    the_plan = plan(store, CHILD_AGE, now=T0)
    stop = threading.Event()
    seen: list[int] = []

    def heartbeat() -> None:
        seen.append(1)
        if len(seen) == 3:
            stop.set()

    report = sweep(store, the_plan, stop=stop, heartbeat=heartbeat)
    assert report.interrupted
    # The entry in progress when stop was set completes; the next one never starts.
    assert report.deleted == 3
    assert len(list(store.sessions.iter_meta())) == 2


def test_repeated_failures_give_up(store: Store) -> None:
    """Store errors are counted failed; after 20 in a row the sweep gives up."""
    with freeze_time(T0 - 10 * DAY):
        for i in range(25):
            put_now(store, f"s{i:02d}")
    the_plan = plan(store, CHILD_AGE, now=T0)
    store.close()
    report = sweep(store, the_plan)
    assert report.failed == 20
    assert report.deleted == 0
    assert report.interrupted
    assert not report.ok
    assert "s00" in report.errors[0]
    assert "gave up" in report.errors[-1]


def test_memory_store_reports_zero_bytes() -> None:
    """A store without a file reports 0 bytes before and after."""
    with opened_store("memory", Path("unused")) as memory:
        put(memory, "s", T0 - 10 * DAY)
        report = sweep(memory, plan(memory, CHILD_AGE, now=T0))
    assert (report.deleted, report.bytes_before, report.bytes_after) == (1, 0, 0)


def test_file_shrinks_after_big_prune(tmp_path: Path) -> None:
    """Pruning most of a SQLite file checkpoints the WAL and gives pages back to the disk."""
    path = tmp_path / "big.db"
    with SQLiteStore(path, durability="normal") as sqlite:
        old_sessions_with_history(sqlite, [f"s{i:03d}" for i in range(200)], payload=16_000)
        put(sqlite, "keep", T0)
        report = sweep(sqlite, plan(sqlite, CHILD_AGE, now=T0))
        assert report.deleted == 200
        assert report.bytes_before > 3_000_000
        assert report.bytes_after < report.bytes_before // 4
        assert not Path(f"{path}-wal").exists() or Path(f"{path}-wal").stat().st_size == 0
        assert [m.id for m in sqlite.sessions.iter_meta()] == ["keep"]


def test_appends_keep_flowing_during_a_large_prune(tmp_path: Path) -> None:
    """Another handle's appends commit between the sweep's deletes (no long write lock)."""
    path = tmp_path / "busy.db"
    with SQLiteStore(path) as sweeper, SQLiteStore(path) as agent:
        with freeze_time(T0 - 10 * DAY):
            for i in range(150):
                put_now(sweeper, f"s{i:03d}")
        agent.sessions.save(Session.new("live"))
        the_plan = plan(sweeper, CHILD_AGE, now=T0)
        started = threading.Event()
        appended = threading.Event()
        done = threading.Event()
        during: list[int] = []
        calls: list[int] = []

        def heartbeat() -> None:
            # Halfway through, wait until the other handle has committed an append:
            # this can only happen if the sweep holds no write lock between entries.
            calls.append(1)
            started.set()
            if len(calls) == 75:
                appended.wait(20)

        def append_until_done() -> None:
            started.wait(30)
            while not done.is_set():
                agent.events.append("live", Event(type="message", text="tick"))
                during.append(1)
                appended.set()

        appender = threading.Thread(target=append_until_done)
        appender.start()
        try:
            report = sweep(sweeper, the_plan, heartbeat=heartbeat)
            appended_while_sweeping = len(during)
        finally:
            done.set()
            appender.join(30)
        assert report.deleted == 150
        assert report.failed == 0
        assert appended_while_sweeping > 0
        assert len(list(agent.events.read("live"))) >= appended_while_sweeping


class _NoConditionalDelete:
    """A third-party store whose sessions can list and delete but not delete conditionally."""

    def __init__(self, inner: Store) -> None:
        self._inner = inner
        self.events = inner.events
        self.audit = inner.audit
        self.leases = inner.leases
        self.sessions = _Sessions(inner)

    def close(self) -> None:
        self._inner.close()


class _Sessions:
    def __init__(self, inner: Store) -> None:
        self._inner = inner.sessions
        self.save = self._inner.save
        self.load = self._inner.load
        self.delete = self._inner.delete
        self.meta = self._inner.meta
        self.iter_meta = self._inner.iter_meta


def test_a_backend_without_conditional_delete_is_refused_up_front() -> None:
    """``sweep`` raises ``PruneUnsupported`` (with a hint) before deleting anything."""
    from sqlstore import MemoryStore
    from sqlstore.errors import PruneUnsupported

    inner = MemoryStore()
    for sid in ("a", "b"):
        put(inner, sid, T0 - timedelta(days=30))
    store = _NoConditionalDelete(inner)
    the_plan = plan(store, Policy(child=Rule(max_age=timedelta(days=1))), now=T0)  # type: ignore[arg-type]
    assert len(the_plan.entries) == 2
    with pytest.raises(PruneUnsupported) as raised:
        sweep(store, the_plan)  # type: ignore[arg-type]
    assert "delete_if_unchanged" in str(raised.value) and raised.value.hint
    assert sorted(s.id for s in inner.sessions.list()) == ["a", "b"]
