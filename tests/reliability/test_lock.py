"""Foreign locks: another process holds ``BEGIN IMMEDIATE`` on the store's file.

Longer than the busy timeout → ``StoreBusy`` with a hint, nothing lost, and the
store works as soon as the lock goes. Shorter → waited out without error. While a
write waits, the other threads of the waiting process keep running (the wait must
not hold the GIL): a sampling thread must record samples inside the wait.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import apsw
import pytest

from sqlstore import Event, Session, SQLiteStore, ToolCallRecord
from sqlstore.errors import StoreBusy

from .helpers import spawn

SHORT_LOCK_S = 2.0
"""How long the locker holds the lock in the waited-out case (well under the 5 s default)."""


class Sampler:
    """A thread that records ``time.monotonic()`` about every millisecond until stopped."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append(time.monotonic())
            time.sleep(0.001)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def between(self, start: float, end: float) -> int:
        """Return how many samples were taken strictly inside (start, end)."""
        return sum(1 for t in self.samples if start < t < end)


class Locker:
    """A child process holding the write lock; ``release()`` ends it when held until told."""

    def __init__(self, db: Path, hold_s: float) -> None:
        self.hold_s = hold_s
        self.proc = spawn("locker", str(db), str(hold_s), stdin=subprocess.PIPE)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().split()
        assert line and line[0] == "LOCKED", f"locker failed: {self._stderr()}"
        self.locked_at = float(line[1])
        self.released_at: float | None = None

    def _stderr(self) -> str:
        return self.proc.stderr.read() if self.proc.stderr else ""

    def release(self) -> None:
        """Tell the locker to roll back (if it waits for us) and wait until it has."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        if not self.proc.stdin.closed:
            if self.hold_s == 0:
                self.proc.stdin.write("go\n")
            self.proc.stdin.close()
        line = self.proc.stdout.readline().split()
        assert line and line[0] == "RELEASED", f"locker failed: {self._stderr()}"
        self.released_at = float(line[1])
        self.close()

    def close(self) -> None:
        """Reap the child and close its pipes."""
        if self.proc.poll() is None:
            if self.proc.stdin and not self.proc.stdin.closed:
                self.proc.stdin.close()
            self.proc.kill()
        self.proc.wait(30)
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if pipe is not None and not pipe.closed:
                pipe.close()


@contextmanager
def locked(db: Path, hold_s: float = 0.0) -> Iterator[Locker]:
    """Hold the database's write lock from another process for the block."""
    locker = Locker(db, hold_s)
    try:
        yield locker
    finally:
        locker.close()


def _seed(db: Path) -> None:
    with SQLiteStore(db) as store:
        store.sessions.create(Session.new("a", title="before"))
        for seq in range(3):
            store.events.append_event("a", Event("e", seq=seq))
        store.audit.record(ToolCallRecord(session_id="a", call_id="c0", tool="t"))


def test_lock_longer_than_timeout_raises_store_busy_and_loses_nothing(tmp_path: Path) -> None:
    """A foreign lock held past the busy timeout gives StoreBusy with a hint; data is intact."""
    db = tmp_path / "s.db"
    _seed(db)
    with (
        SQLiteStore(db, busy_timeout_ms=1_000) as store,
        SQLiteStore(db, busy_timeout_ms=150) as quick,
        locked(db) as locker,
        Sampler() as sampler,
    ):
        start = time.monotonic()
        with pytest.raises(StoreBusy) as caught:
            store.events.append_event("a", Event("e", seq=99))
        end = time.monotonic()
        err = caught.value
        assert err.hint, "StoreBusy must carry a hint"
        assert "lock" in str(err)
        assert not isinstance(err, apsw.Error)
        assert isinstance(err.__cause__, apsw.BusyError), "translated errors keep their cause"
        # Other threads ran while this thread waited for the lock.
        assert sampler.between(max(start, locker.locked_at) + 0.05, end - 0.05) > 0
        writes: list[Callable[[], Any]] = [
            lambda: quick.sessions.save(Session.new("a", title="during")),
            lambda: quick.sessions.create(Session.new("b")),
            lambda: quick.sessions.delete("a"),
            lambda: quick.events.append_gap("a", "during"),
            lambda: quick.audit.record(ToolCallRecord(session_id="a", call_id="c1")),
            lambda: quick.leases.acquire("a", "me", timedelta(seconds=30)),
        ]
        for write in writes:
            with pytest.raises(StoreBusy):
                write()
        # Reads do not need the write lock (WAL): they keep working during the lock.
        assert [e.seq for e in quick.events.read("a")] == [0, 1, 2]
        assert quick.sessions.load("a").title == "before"
        locker.release()
        # As soon as the lock goes, writes work again, with the same store objects.
        store.events.append_event("a", Event("e", seq=3))
        quick.sessions.save(Session.new("a", title="after"))
    with SQLiteStore(db) as store:
        assert [e.seq for e in store.events.read("a")] == [0, 1, 2, 3]
        assert store.sessions.load("a").title == "after"
        assert [r.call_id for r in store.audit.list("a")] == ["c0"]
        assert [s.id for s in store.sessions.list()] == ["a"]
        assert store.leases.held() == set()


def test_lock_shorter_than_timeout_is_waited_out(tmp_path: Path) -> None:
    """A foreign lock shorter than the busy timeout is waited out, other threads running."""
    db = tmp_path / "s.db"
    _seed(db)
    with SQLiteStore(db) as store, Sampler() as sampler:
        with locked(db, SHORT_LOCK_S) as locker:
            start = time.monotonic()
            cursor = store.events.append_event("a", Event("e", seq=3))
            end = time.monotonic()
            locker.release()
        assert locker.released_at is not None
        assert end >= locker.released_at, "the write returned while the lock was still held"
        assert cursor
        inside = sampler.between(max(start, locker.locked_at) + 0.05, locker.released_at - 0.05)
        assert inside > 0, "no other thread ran while the write waited for the lock"
        assert [e.seq for e in store.events.read("a")] == [0, 1, 2, 3]


def test_threads_queued_behind_a_foreign_lock_all_commit_in_order(tmp_path: Path) -> None:
    """Several threads blocked by a short foreign lock all commit afterwards, each in call order."""
    db = tmp_path / "s.db"
    _seed(db)
    errors: list[BaseException] = []
    with SQLiteStore(db) as store:

        def append(tag: str) -> None:
            try:
                for seq in range(5):
                    store.events.append_event(tag, Event("e", seq=seq))
            except BaseException as exc:  # collected for the assertion below
                errors.append(exc)

        with locked(db, 1.0) as locker:
            threads = [threading.Thread(target=append, args=(f"t{i}",)) for i in range(3)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(30)
            locker.release()
        assert errors == []
        for i in range(3):
            assert [e.seq for e in store.events.read(f"t{i}")] == [0, 1, 2, 3, 4]


def test_store_opens_and_reads_while_another_process_holds_the_lock(tmp_path: Path) -> None:
    """Opening an initialised store and reading it need no write lock."""
    db = tmp_path / "s.db"
    _seed(db)
    with locked(db) as locker, SQLiteStore(db, busy_timeout_ms=100) as store:
        assert store.sessions.load("a").title == "before"
        assert len(list(store.events.read_after("a"))) == 3
        locker.release()
