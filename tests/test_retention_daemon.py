"""The retention daemon: rounds, stop event, one sweeper per file, failures, history."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from freezegun import freeze_time
from test_retention_support import BACKENDS, T0, opened_store, put_now

from retention import (
    DAEMON_LEASE_NAME,
    Policy,
    Rule,
    list_runs,
    run_daemon,
    sweep_round,
)
from sqlstore import SQLiteStore
from sqlstore.errors import LeaseHeld, StoreMissing
from sqlstore.ports import Store

DAY = timedelta(days=1)
CHILD_AGE = Policy(child=Rule(max_age=7 * DAY))
WAIT_S = 30


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A fresh store of each backend."""
    with opened_store(str(request.param), tmp_path / "sessions.db") as opened:
        yield opened


def stale(store: Store, count: int, prefix: str = "s") -> None:
    """Store ``count`` completed subagent sessions last written long ago."""
    with freeze_time(T0 - 10 * DAY):
        for i in range(count):
            put_now(store, f"{prefix}{i:03d}")


def test_zero_interval_sweeps_once(store: Store) -> None:
    """every=0 runs exactly one sweep, logs one line and records it in the history."""
    stale(store, 3)
    lines: list[str] = []
    rounds = run_daemon(store, CHILD_AGE, timedelta(0), stop=threading.Event(), log=lines.append)
    assert rounds == 1
    assert list(store.sessions.iter_meta()) == []
    assert len(lines) == 1
    assert lines[0].startswith("retention sweep: planned=3 deleted=3 changed=0")
    runs = list_runs(store)
    assert [(r.planned, r.deleted, r.changed, r.failed) for r in runs] == [(3, 3, 0, 0)]
    assert runs[0].policy_hash == CHILD_AGE.policy_hash
    assert json.loads(runs[0].detail)["leased"] == 0
    assert DAEMON_LEASE_NAME not in store.leases.held()


def test_stop_event_ends_the_loop(store: Store) -> None:
    """With an hourly interval the loop sweeps at start and ends as soon as stop is set."""
    stale(store, 2)
    stop = threading.Event()
    swept = threading.Event()
    result: list[int] = []

    def log(line: str) -> None:
        swept.set()

    thread = threading.Thread(
        target=lambda: result.append(
            run_daemon(store, CHILD_AGE, timedelta(hours=1), stop=stop, log=log)
        )
    )
    thread.start()
    assert swept.wait(WAIT_S)
    stop.set()
    thread.join(WAIT_S)
    assert not thread.is_alive()
    assert result == [1]
    assert len(list_runs(store)) == 1


def test_stop_set_before_start_runs_nothing(store: Store) -> None:
    """A daemon whose stop event is already set returns without sweeping."""
    stale(store, 1)
    stop = threading.Event()
    stop.set()
    assert run_daemon(store, CHILD_AGE, timedelta(hours=1), stop=stop) == 0
    assert len(list(store.sessions.iter_meta())) == 1


def test_rounds_repeat_until_stopped(store: Store) -> None:
    """Each round sweeps what became stale since; the loop runs until stop is set."""
    stale(store, 1, "a")
    stop = threading.Event()
    lines: list[str] = []

    def log(line: str) -> None:
        lines.append(line)
        if len(lines) == 1:
            stale(store, 2, "b")  # new stale sessions appear between rounds
        if len(lines) == 2:
            stop.set()

    rounds = run_daemon(store, CHILD_AGE, timedelta(milliseconds=1), stop=stop, log=log)
    assert rounds == 2
    assert [r.deleted for r in list_runs(store)] == [2, 1]
    assert list(store.sessions.iter_meta()) == []


def test_second_daemon_skips_while_first_sweeps(tmp_path: Path) -> None:
    """While one daemon sweeps a file, a daemon on another handle skips its round and says so."""
    path = tmp_path / "shared.db"
    with SQLiteStore(path) as first, SQLiteStore(path) as second:
        stale(first, 4)
        second_lines: list[str] = []
        first_lines: list[str] = []

        def first_log(line: str) -> None:
            # The first daemon still holds the lease when it logs its sweep.
            first_lines.append(line)
            run_daemon(
                second, CHILD_AGE, timedelta(0), stop=threading.Event(), log=second_lines.append
            )

        run_daemon(first, CHILD_AGE, timedelta(0), stop=threading.Event(), log=first_log)
        assert first_lines[0].startswith("retention sweep: planned=4 deleted=4")
        assert len(second_lines) == 1
        assert "skipped" in second_lines[0]
        assert len(list_runs(first)) == 1
        # Once the first released the lease, the second sweeps normally.
        stale(first, 1, "late")
        second_lines.clear()
        run_daemon(second, CHILD_AGE, timedelta(0), stop=threading.Event(), log=second_lines.append)
        assert second_lines[0].startswith("retention sweep: planned=1 deleted=1")


def test_lease_held_by_another_process_skips(store: Store) -> None:
    """A live sweeper lease of another owner makes the round skip, deleting nothing."""
    stale(store, 2)
    lease = store.leases.acquire(DAEMON_LEASE_NAME, "other-host:1:x", timedelta(minutes=5))
    result = sweep_round(store, CHILD_AGE, owner="me")
    assert result.outcome == "skipped"
    assert len(list(store.sessions.iter_meta())) == 2
    assert list_runs(store) == []
    store.leases.release(lease)
    assert sweep_round(store, CHILD_AGE, owner="me").outcome == "swept"


def test_failed_round_is_logged_and_loop_continues(tmp_path: Path) -> None:
    """A round that raises is logged; the next round runs and sweeps."""
    path = tmp_path / "later.db"
    calls: list[int] = []

    def factory() -> Store:
        calls.append(1)
        if len(calls) == 1:
            return SQLiteStore(path, create=False)  # the file does not exist yet
        return SQLiteStore(path)

    stop = threading.Event()
    lines: list[str] = []

    def log(line: str) -> None:
        lines.append(line)
        if len(lines) == 2:
            stop.set()

    rounds = run_daemon(factory, CHILD_AGE, timedelta(milliseconds=1), stop=stop, log=log)
    assert rounds == 2
    assert lines[0].startswith(f"retention sweep failed: {StoreMissing.__name__}")
    assert lines[1].startswith("retention sweep: planned=0")


def test_jitter_must_be_a_fraction(store: Store) -> None:
    """A jitter outside [0, 1) is refused."""
    with pytest.raises(ValueError, match="jitter"):
        run_daemon(store, CHILD_AGE, timedelta(hours=1), stop=threading.Event(), jitter=1.5)


def test_lease_is_renewed_during_a_long_sweep(store: Store) -> None:
    """A sweep that outlasts the lease TTL keeps renewing it, so no other sweeper can take over."""
    stale(store, 6)
    taken_over: list[str] = []
    with freeze_time(T0) as frozen:

        class TickingStop(threading.Event):
            """Advances the frozen clock by 2 minutes per entry and probes the lease."""

            def is_set(self) -> bool:
                frozen.tick(timedelta(minutes=2))
                try:
                    store.leases.acquire(DAEMON_LEASE_NAME, "intruder", timedelta(minutes=5))
                    taken_over.append("intruder")
                except LeaseHeld:
                    pass
                return super().is_set()

        result = sweep_round(
            store, CHILD_AGE, owner="me", stop=TickingStop(), lease_ttl=timedelta(minutes=5)
        )
    assert result.report is not None
    assert result.report.deleted == 6
    assert taken_over == []


def test_lost_lease_stops_the_sweep_and_is_recorded(store: Store) -> None:
    """When another sweeper takes over an expired lease, the sweep stops and says why."""
    stale(store, 6)
    calls: list[int] = []
    with freeze_time(T0) as frozen:

        class StallingStop(threading.Event):
            """Before the third entry, stalls past the TTL while an intruder takes the lease."""

            def is_set(self) -> bool:
                calls.append(1)
                if len(calls) == 3:
                    frozen.tick(timedelta(minutes=10))
                    store.leases.acquire(DAEMON_LEASE_NAME, "intruder", timedelta(minutes=5))
                return super().is_set()

        result = sweep_round(
            store, CHILD_AGE, owner="me", stop=StallingStop(), lease_ttl=timedelta(minutes=5)
        )
        assert store.leases.held() == {DAEMON_LEASE_NAME}  # the intruder's lease is untouched
    report = result.report
    assert report is not None
    assert report.deleted == 2
    assert report.interrupted and not report.ok
    assert "stopped:" in report.errors[0]
    (run,) = list_runs(store)
    assert run.deleted == 2
    assert "stopped:" in json.loads(run.detail)["errors"][0]
