"""How a SQLite sweep shares the file: budgeted batches, duty-cycle pauses, checkpoints.

No timing is asserted: the pauses are recorded through an injected ``sleep``,
the transaction budget is read from an injected ``timer``, and checkpoints are
seen in the bytes of the database file (only a checkpoint writes to it in WAL
mode).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import apsw
import pytest
from freezegun import freeze_time
from test_retention_support import T0, opened_store, put, put_now

from retention import Policy, Rule, plan, sweep
from retention.pacing import Pacing, deletion_store
from retention.sweep import shrink
from sqlstore import Event, SQLiteStore
from sqlstore.errors import SessionNotFound
from sqlstore.sqlite import connection
from sqlstore.sqlite.connection import BUSY_SLEEP_MIN_S, BusyWait
from sqlstore.sqlite.housekeeping import SQLiteHousekeeping

DAY = timedelta(days=1)
CHILD_AGE = Policy(child=Rule(max_age=7 * DAY))


@pytest.fixture
def path(tmp_path: Path) -> Path:
    """The database file of the test."""
    return tmp_path / "sessions.db"


@pytest.fixture
def store(path: Path) -> Iterator[SQLiteStore]:
    """A durable (``durability="full"``) SQLite store on a real file."""
    with SQLiteStore(path) as opened:
        yield opened


def stale(store: SQLiteStore, count: int) -> None:
    """Store ``count`` sessions written 10 days before T0, each with one event."""
    with freeze_time(T0 - 10 * DAY):
        for i in range(count):
            put_now(store, f"s{i:02d}")
            store.events.append(f"s{i:02d}", Event(type="message", text="x"))


class Ticker:
    """A timer that moves one second forward each time it is read."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def test_delete_many_checks_each_row_as_delete_if_unchanged(store: SQLiteStore) -> None:
    """One transaction deletes the unchanged row and keeps the written and the leased ones."""
    rows = [put(store, sid, T0 - 10 * DAY) for sid in ("same", "written", "leased")]
    store.events.append("written", Event(type="message", text="late"))
    store.leases.acquire("leased", "agent", timedelta(minutes=5))
    assert store.sessions.delete_many_if_unchanged(rows) == [True, False, False]
    with pytest.raises(SessionNotFound):
        store.sessions.load("same")
    assert {m.id for m in store.sessions.iter_meta()} == {"written", "leased"}


def test_delete_many_stops_taking_rows_when_the_budget_is_spent(store: SQLiteStore) -> None:
    """With a budget the transaction handles a prefix of the rows, always at least one."""
    rows = [put(store, f"s{i}", T0 - 10 * DAY) for i in range(5)]
    # The ticker reads 1 when the transaction starts, then 2, 3, ... before each next row.
    assert store.sessions.delete_many_if_unchanged(rows, budget_s=0.0, timer=Ticker()) == [True]
    assert store.sessions.delete_many_if_unchanged(rows[1:], budget_s=2.5, timer=Ticker()) == [
        True,
        True,
        True,
    ]
    assert [m.id for m in store.sessions.iter_meta()] == ["s4"]
    assert store.sessions.delete_many_if_unchanged([]) == []


def test_pause_after_keeps_the_duty_cycle() -> None:
    """The pause makes work ``duty_cycle`` of the time, and is never below the minimum."""
    pacing = Pacing(duty_cycle=0.25, pause_min_s=0.005)
    assert pacing.pause_after(0.004) == pytest.approx(0.012)
    assert pacing.pause_after(0.0001) == 0.005
    assert Pacing(duty_cycle=1.0, pause_min_s=0.0).pause_after(1.0) == 0.0
    for bad in ({"duty_cycle": 0.0}, {"duty_cycle": 1.5}, {"batch_entries": 0}):
        with pytest.raises(ValueError):
            Pacing(**bad)  # type: ignore[arg-type]


def longest_next_sleep(waited_s: float, monkeypatch: pytest.MonkeyPatch) -> float:
    """Return the longest sleep BusyWait itself starts after a writer has waited ``waited_s``.

    The real handler runs with ``random.uniform`` pinned to its upper bound and
    ``time.sleep`` recorded, so a change to BusyWait's sleeps is seen here.
    """
    tries = int(waited_s / BUSY_SLEEP_MIN_S)  # every sleep lasts at least BUSY_SLEEP_MIN_S
    slept: list[float] = []
    monkeypatch.setattr(connection.random, "uniform", lambda low, high: high)
    monkeypatch.setattr(connection.time, "sleep", slept.append)
    handler = BusyWait(3_600_000)
    handler(0)  # the first call starts the handler's clock
    assert handler(tries)
    return slept[-1]


def test_default_pause_outlasts_the_waiting_writers_next_sleep(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After any amount of work, the pause is longer than a waiting writer's next sleep."""
    pacing = Pacing()
    for tenth_ms in range(200):
        work_s = tenth_ms / 10_000
        # A writer that found the lock taken started waiting during the work.
        assert pacing.pause_after(work_s) > longest_next_sleep(work_s, monkeypatch)


def test_sweep_pauses_between_batches(store: SQLiteStore) -> None:
    """Entries go in batches of ``batch_entries``, with a pause after each but the last."""
    stale(store, 10)
    pauses: list[float] = []
    pacing = Pacing(batch_entries=4, hold_budget_s=60.0, checkpoint_every=0, sleep=pauses.append)
    report = sweep(store, plan(store, CHILD_AGE, now=T0), pacing=pacing)
    assert (report.deleted, report.failed, report.ok) == (10, 0, True)
    assert len(pauses) == 2  # batches of 4, 4 and 2
    assert all(pause >= pacing.pause_min_s for pause in pauses)


def test_spent_budget_ends_the_transaction_after_one_entry(store: SQLiteStore) -> None:
    """With no budget each entry gets a transaction of its own, each followed by a pause."""
    stale(store, 6)
    pauses: list[float] = []
    pacing = Pacing(batch_entries=4, hold_budget_s=0.0, checkpoint_every=0, sleep=pauses.append)
    report = sweep(store, plan(store, CHILD_AGE, now=T0), pacing=pacing)
    assert report.deleted == 6
    assert len(pauses) == 5


def test_pause_follows_the_measured_work(store: SQLiteStore) -> None:
    """Each pause is ``pause_after`` of the work the sweep timed for that transaction."""
    stale(store, 6)
    worked: list[float] = []
    pauses: list[float] = []

    class Recording(Pacing):
        """Pacing that records what it was asked about."""

        def pause_after(self, worked_s: float) -> float:
            worked.append(worked_s)
            return worked_s * 3

    pacing = Recording(
        batch_entries=2,
        hold_budget_s=60.0,
        checkpoint_every=0,
        sleep=pauses.append,
        timer=Ticker(),
    )
    sweep(store, plan(store, CHILD_AGE, now=T0), pacing=pacing)
    assert len(worked) == 2
    assert all(w >= 2.0 for w in worked)  # the ticker was read at least twice per transaction
    assert pauses == [w * 3 for w in worked]


def file_digest(path: Path) -> str:
    """Return the sha256 of the database file (not its WAL)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize(("checkpoint_every", "changes"), [(1, 4), (0, 0)])
def test_sweep_checkpoints_the_wal_itself(
    store: SQLiteStore, path: Path, checkpoint_every: int, changes: int
) -> None:
    """With ``checkpoint_every`` the sweep copies its WAL into the file between batches."""
    stale(store, 5)
    the_plan = plan(store, CHILD_AGE, now=T0)
    with store.db.reader() as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    digests = [file_digest(path)]
    pacing = Pacing(
        batch_entries=1,
        checkpoint_every=checkpoint_every,
        sleep=lambda _s: digests.append(file_digest(path)),
    )
    report = sweep(store, the_plan, pacing=pacing)
    assert report.deleted == 5
    assert len(digests) == 5  # before the sweep, then at each of the 4 pauses
    # Only a checkpoint writes to the database file itself in WAL mode.
    assert sum(a != b for a, b in itertools.pairwise(digests)) == changes


def test_deletions_use_an_unsynced_handle_on_a_durable_store(
    store: SQLiteStore, path: Path
) -> None:
    """A durable store deletes through a ``normal`` handle on the same file, unless told not to."""
    deleter = deletion_store(store.housekeeping, Pacing())
    assert isinstance(deleter, SQLiteHousekeeping)
    try:
        assert deleter.store.path == store.path
        assert deleter.store.db.durability == "normal"
    finally:
        deleter.close()
    assert deleter.store.db.closed
    assert deletion_store(store.housekeeping, Pacing(durable_deletes=True)) is None
    with SQLiteStore(path, durability="normal") as relaxed:
        assert deletion_store(relaxed.housekeeping, Pacing()) is None
    stale(store, 3)
    report = sweep(store, plan(store, CHILD_AGE, now=T0), pacing=Pacing(durable_deletes=True))
    assert report.deleted == 3


def test_a_failing_entry_fails_alone(store: SQLiteStore, path: Path) -> None:
    """When a batch fails, its entries are retried one by one and only the bad one fails."""
    stale(store, 6)
    conn = apsw.Connection(str(path))
    try:
        conn.execute(
            "CREATE TRIGGER refuse BEFORE DELETE ON sessions WHEN old.id = 's03' "
            "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
        )
    finally:
        conn.close()
    report = sweep(store, plan(store, CHILD_AGE, now=T0), pacing=Pacing(sleep=lambda _s: None))
    assert (report.deleted, report.failed) == (5, 1)
    assert "s03" in report.errors[0]
    assert [m.id for m in store.sessions.iter_meta()] == ["s03"]


def test_entries_leased_before_their_batch_count_leased(store: SQLiteStore) -> None:
    """A lease taken after planning is seen when the batch reads the leases."""
    stale(store, 4)
    the_plan = plan(store, CHILD_AGE, now=T0)
    store.leases.acquire("s01", "agent", timedelta(minutes=5))
    report = sweep(store, the_plan, pacing=Pacing(sleep=lambda _s: None))
    assert (report.deleted, report.leased, report.changed) == (3, 1, 0)


def test_unchanged_row_stored_in_another_json_spelling_still_matches(
    store: SQLiteStore, path: Path
) -> None:
    """A relationship stored as non-canonical JSON is decoded and compared, not taken as changed."""
    row = put(store, "odd", T0 - 10 * DAY)
    moved = put(store, "moved", T0 - 10 * DAY)
    conn = apsw.Connection(str(path))
    try:
        for sid in ("odd", "moved"):
            (text,) = conn.execute(
                "SELECT relationship FROM sessions WHERE id = ?", (sid,)
            ).fetchone()
            decoded = json.loads(text)
            if sid == "moved":
                decoded["call_id"] = "another-call"
            conn.execute(
                "UPDATE sessions SET relationship = ? WHERE id = ?",
                (json.dumps(decoded, indent=2), sid),
            )
    finally:
        conn.close()
    assert store.sessions.delete_many_if_unchanged([row, moved]) == [True, False]
    assert [m.id for m in store.sessions.iter_meta()] == ["moved"]


def test_stop_finishes_the_batch_taken_and_does_not_pause_after_it(store: SQLiteStore) -> None:
    """Entries taken before stop was set are deleted; the sweep then ends without a pause."""
    stale(store, 6)
    stop = threading.Event()
    taken: list[int] = []

    def heartbeat() -> None:
        taken.append(1)
        if len(taken) == 3:
            stop.set()

    pauses: list[float] = []
    pacing = Pacing(batch_entries=2, hold_budget_s=60.0, sleep=pauses.append)
    report = sweep(
        store, plan(store, CHILD_AGE, now=T0), stop=stop, heartbeat=heartbeat, pacing=pacing
    )
    assert (report.deleted, report.interrupted) == (3, True)
    assert len(pauses) == 1  # after the first batch only
    assert len(list(store.sessions.iter_meta())) == 3


def test_shrink_moves_free_pages_in_paced_steps(path: Path) -> None:
    """After a big deletion the vacuum runs in small steps with a pause between two."""
    with SQLiteStore(path, durability="normal") as relaxed:
        with freeze_time(T0 - 10 * DAY):
            for i in range(20):
                put_now(relaxed, f"big{i}")
                relaxed.events.append(f"big{i}", Event(type="message", text="x" * 20_000))
        for i in range(20):
            relaxed.sessions.delete(f"big{i}")
        with relaxed.db.reader() as conn:
            (free,) = conn.execute("PRAGMA freelist_count").fetchone()
        assert free > 40
        pauses: list[float] = []
        assert shrink(relaxed, Pacing(vacuum_step_pages=8, sleep=pauses.append))
        with relaxed.db.reader() as conn:
            assert conn.execute("PRAGMA freelist_count").fetchone() == (0,)
        assert Path(f"{path}-wal").stat().st_size == 0  # checkpointed and truncated
    assert len(pauses) == -(-free // 8) - 1  # one step per 8 pages, a pause between two


def test_stores_without_a_file_are_not_paced() -> None:
    """A MemoryStore sweep deletes one entry per call and never pauses."""
    with opened_store("memory", Path("unused")) as memory:
        for i in range(5):
            put(memory, f"s{i}", T0 - 10 * DAY)
        pauses: list[float] = []
        report = sweep(
            memory,
            plan(memory, CHILD_AGE, now=T0),
            pacing=Pacing(batch_entries=1, sleep=pauses.append),
        )
    assert report.deleted == 5
    assert pauses == []


def record_fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record the path of every ``os.fsync`` (the real one still runs)."""
    import os

    synced: list[str] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    return synced


def test_a_sweep_through_the_unsynced_handle_fsyncs_the_wal_before_it_returns(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deletions committed without fsync are made durable (the WAL is fsynced) by the sweep."""
    stale(store, 3)
    synced = record_fsyncs(monkeypatch)
    report = sweep(store, plan(store, CHILD_AGE, now=T0), pacing=Pacing(checkpoint_every=0))
    assert report.deleted == 3 and report.errors == ()
    assert store.path + "-wal" in synced


def test_a_sweep_of_a_normal_store_fsyncs_the_wal_before_it_returns(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``durability="normal"`` store deletes through itself; its deletions are fsynced too."""
    with SQLiteStore(path, durability="normal") as store:
        stale(store, 3)
        synced = record_fsyncs(monkeypatch)
        report = sweep(store, plan(store, CHILD_AGE, now=T0), pacing=Pacing(checkpoint_every=0))
        assert report.deleted == 3 and report.errors == ()
        assert store.path + "-wal" in synced


def test_the_unsynced_handle_keeps_the_callers_busy_timeout(path: Path) -> None:
    """The deletion handle waits for the lock as long as the caller's store would."""
    with SQLiteStore(path, busy_timeout_ms=1234) as store:
        deleter = deletion_store(store.housekeeping, Pacing())
        assert isinstance(deleter, SQLiteHousekeeping)
        try:
            assert deleter.store.db.busy_timeout_ms == 1234
        finally:
            deleter.close()
