"""``sqlstore.aio`` on real stores: its own pool, shielded writes, follows that end cleanly."""

from __future__ import annotations

import asyncio
import gc
import logging
import subprocess
import sys
import threading
import time
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from reliability.helpers import child_env

import sqlstore.aio
from sqlstore import Event, MemoryStore, Session, SQLiteStore
from sqlstore.errors import (
    CursorMalformed,
    SessionNotFound,
    StoreClosed,
    StoreError,
    VersionConflict,
)
from sqlstore.events import LogRecord

LOCK_CHILD = Path(__file__).resolve().parent / "reliability" / "primitives_child.py"
WAIT_S = 30.0


def run(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run one coroutine on a fresh loop whose default executor refuses work."""

    async def main() -> Any:
        asyncio.get_running_loop().set_default_executor(_RefusingExecutor())
        return await coro

    return asyncio.run(main())


class _RefusingExecutor(ThreadPoolExecutor):
    """A default executor that fails any submission: sqlstore.aio must never use it."""

    def submit(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("sqlstore.aio used the loop's default executor")


def reader_threads() -> list[threading.Thread]:
    """Return the live reader threads of sqlstore.aio streams."""
    return [t for t in threading.enumerate() if t.name == "sqlstore-aio-reader"]


def wait_no_reader_threads() -> None:
    """Fail unless every stream reader thread has exited within WAIT_S."""
    deadline = time.monotonic() + WAIT_S
    while reader_threads() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert reader_threads() == []


class LockHolder:
    """Another process holding BEGIN IMMEDIATE on a database until released."""

    def __init__(self, db: Path) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, str(LOCK_CHILD), "lock", str(db)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=child_env(),
        )
        assert self._proc.stdout is not None
        assert self._proc.stdout.readline().strip() == "locked"

    def release(self) -> None:
        """Let the child roll back and wait until it did."""
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write("go\n")
        self._proc.stdin.flush()
        assert self._proc.stdout.readline().strip() == "released"

    def kill(self) -> None:
        """Kill the child if it is still there, and close its pipes."""
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.communicate(timeout=WAIT_S)


def test_open_gives_the_four_parts_and_closes_the_store(tmp_path: Path) -> None:
    """async with aio.open(path): save, load_versioned, apply work; exit closes the sync store."""

    async def main() -> None:
        async with sqlstore.aio.open(str(tmp_path / "a.db")) as store:
            assert isinstance(store.sync, SQLiteStore)
            version = await store.sessions.save(Session.new("s", title="one"))
            session, got = await store.sessions.load_versioned("s")
            assert (session.title, got) == ("one", version)
            applied = await store.apply("s", events=[Event("note")], expected_version=version)
            assert len(applied.cursors) == 1 and applied.version > version
            assert await store.leases.held() == set()
            assert await store.audit.list("s") == []
        with pytest.raises(StoreClosed):
            store.sync.sessions.load("s")
        with pytest.raises(StoreClosed):
            await store.sessions.load("s")

    run(main())


def test_awaited_open_and_same_errors(tmp_path: Path) -> None:
    """await aio.open(...) works, and errors are the sync ones (not wrapped)."""

    async def main() -> None:
        store = await sqlstore.aio.open(f"sqlite:///{tmp_path / 'b.db'}", busy_timeout_ms=1000)
        try:
            with pytest.raises(SessionNotFound, match="nobody"):
                await store.sessions.load("nobody")
            with pytest.raises(VersionConflict) as caught:
                await store.sessions.save(Session.new("x"), expected_version=4)
            assert caught.value.stored_version is None
            with pytest.raises(CursorMalformed):
                async for _ in store.events.read_after("x", "garbage!"):
                    pass
        finally:
            await store.aclose()
        with pytest.raises(ValueError, match="unsupported"):
            await sqlstore.aio.open("ftp://nowhere")
        with pytest.raises(ValueError, match="max_workers"):
            sqlstore.aio.open("memory:", max_workers=0)

    run(main())


def test_wrap_shares_and_does_not_close() -> None:
    """wrap(store) sees the sync store's data, and aclose leaves the sync store open."""
    sync = MemoryStore()
    sync.sessions.save(Session.new("shared", title="sync"))

    async def main() -> None:
        async with sqlstore.aio.wrap(sync) as store:
            assert (await store.sessions.load("shared")).title == "sync"
            await store.events.append_events("shared", [Event("a"), Event("b")])

    run(main())
    assert [e.type for e in sync.events.read("shared")] == ["a", "b"]
    sync.close()


def test_calls_run_on_a_bounded_pool_of_its_own() -> None:
    """50 concurrent calls with max_workers=3 run on at most 3 threads, none the loop's."""
    sync = MemoryStore()
    seen: set[str] = set()
    append_event = sync.events.append_event

    def recording(session_id: str, event: Event) -> str:
        seen.add(threading.current_thread().name)
        time.sleep(0.001)  # long enough for the calls to overlap
        return append_event(session_id, event)

    sync.events.append_event = recording  # type: ignore[method-assign]

    async def main() -> None:
        async with sqlstore.aio.wrap(sync, max_workers=3) as store:
            await asyncio.gather(
                *(store.events.append_event(f"s{i % 5}", Event("note", seq=i)) for i in range(50))
            )
            counts = [len([e async for e in store.events.read(f"s{k}")]) for k in range(5)]
            assert counts == [10] * 5

    run(main())
    assert 2 <= len(seen) <= 3 and all(name.startswith("sqlstore-aio_") for name in seen), seen
    sync.close()


def test_a_blocked_write_never_blocks_the_loop(tmp_path: Path) -> None:
    """While another process holds the lock, a pending write leaves the loop free to run."""
    db = tmp_path / "busy.db"
    SQLiteStore(db).close()
    holder = LockHolder(db)
    try:

        async def main() -> int:
            async with sqlstore.aio.open(str(db), busy_timeout_ms=20_000) as store:
                write = asyncio.create_task(store.events.append_events("s", [Event("a")] * 3))
                ticks = 0
                while ticks < 20:
                    await asyncio.sleep(0.005)
                    ticks += 1
                assert not write.done(), "the write passed a held lock"
                holder.release()  # blocks the loop briefly: the child only rolls back
                await write
                return len([e async for e in store.events.read("s")])

        assert asyncio.run(main()) == 3
    finally:
        holder.kill()


def test_cancelled_writes_still_commit_whole(tmp_path: Path) -> None:
    """Batches whose callers are cancelled — one running, one still queued — commit whole."""
    db = tmp_path / "cancel.db"
    SQLiteStore(db).close()
    holder = LockHolder(db)
    releaser = threading.Timer(0.2, holder.release)
    try:

        async def main() -> list[tuple[str, int]]:
            opening = sqlstore.aio.open(str(db), busy_timeout_ms=20_000, max_workers=1)
            async with opening as store:
                running = asyncio.create_task(
                    store.events.append_events("s", [Event("a", seq=i) for i in range(5)])
                )
                await asyncio.sleep(0.05)
                queued = asyncio.create_task(
                    store.events.append_events("s", [Event("b", seq=i) for i in range(3)])
                )
                await asyncio.sleep(0.05)
                for task in (running, queued):
                    task.cancel()
                # The writes, shielded, run and commit once the lock is free; each
                # cancelled caller sees CancelledError only after its write ended.
                releaser.start()
                for task in (running, queued):
                    with pytest.raises(asyncio.CancelledError):
                        await task
            with SQLiteStore(db) as check:
                return [(e.type, e.seq) for e in check.events.read("s")]

        assert asyncio.run(main()) == [("a", i) for i in range(5)] + [("b", i) for i in range(3)]
    finally:
        releaser.cancel()
        releaser.join(WAIT_S)
        holder.kill()


def test_cancelled_write_that_fails_is_logged_and_leaves_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A cancelled apply that then conflicts writes nothing and logs the failure."""
    gate = threading.Event()
    sync = MemoryStore()
    sync.sessions.save(Session.new("s", title="kept"))
    original = sync.apply

    def slow_apply(*args: Any, **kwargs: Any) -> Any:
        gate.wait(WAIT_S)
        return original(*args, **kwargs)

    sync.apply = slow_apply  # type: ignore[method-assign]

    async def main() -> None:
        async with sqlstore.aio.wrap(sync) as store:
            task = asyncio.create_task(
                store.apply("s", snapshot=Session.new("s", title="lost"), expected_version=99)
            )
            await asyncio.sleep(0.01)
            task.cancel()
            opener = threading.Timer(0.1, gate.set)  # the write goes on after the cancel
            opener.start()
            with pytest.raises(asyncio.CancelledError):
                await task  # raised once the write has failed
            opener.join(WAIT_S)

    with caplog.at_level(logging.WARNING, logger="sqlstore.aio"):
        run(main())
    assert any("VersionConflict" in r.getMessage() for r in caplog.records)
    assert sync.sessions.load("s").title == "kept"
    sync.close()


@pytest.mark.parametrize("backend", ["sqlite", "memory"])
def test_follow_ends_on_cancel_and_aclose_with_no_thread_left(tmp_path: Path, backend: str) -> None:
    """A parked follower gets live records; cancel and aclose end it and its thread exits."""
    target = str(tmp_path / "f.db") if backend == "sqlite" else "memory:"

    async def main() -> None:
        async with sqlstore.aio.open(target) as store:
            await store.events.append_event("s", Event("old"))
            got: list[LogRecord] = []
            drained = asyncio.Event()
            arrived = asyncio.Event()

            async def consume() -> None:
                async for record in store.events.read_after("s", follow=True):
                    got.append(record)
                    if len(got) == 1:
                        drained.set()
                    if len(got) == 2:
                        arrived.set()

            task = asyncio.create_task(consume())
            # Append only once the initial drain delivered "old" (a fixed sleep raced under
            # load: "new" then came in the drain, not live).
            await asyncio.wait_for(drained.wait(), WAIT_S)
            await store.events.append_event("s", Event("new"))
            await asyncio.wait_for(arrived.wait(), WAIT_S)
            assert [(r.event.type if r.event else "", r.live) for r in got] == [
                ("old", False),
                ("new", True),
            ]
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            wait_no_reader_threads()  # blocks the loop: the reader thread does not need it
            follower = store.events.read_after("s", got[-1].cursor, follow=True)
            await follower.opened()
            assert len(reader_threads()) == 1
            await follower.aclose()
            assert reader_threads() == []  # aclose returns after the thread exited
            await store.events.append_event("s", Event("after"))  # the store is still fine

    asyncio.run(main())


def test_store_close_ends_forgotten_followers(tmp_path: Path) -> None:
    """Followers nobody closed are ended by the store's aclose, and by garbage collection."""

    async def main() -> None:
        async with sqlstore.aio.open(str(tmp_path / "g.db")) as store:
            kept = store.events.read_after("s", follow=True)
            await kept.opened()
            dropped = store.events.read_after("t", follow=True)
            await dropped.opened()
            assert len(reader_threads()) == 2
            del dropped
            gc.collect()
            _wait_count(1)  # blocks the loop: the reader threads do not need it
        assert reader_threads() == []

    asyncio.run(main())


def _wait_count(count: int) -> None:
    deadline = time.monotonic() + WAIT_S
    while len(reader_threads()) != count and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(reader_threads()) == count


def test_many_followers_do_not_starve_writes(tmp_path: Path) -> None:
    """Ten parked followers with max_workers=2: writes still run and every follower sees them."""

    async def main() -> None:
        async with sqlstore.aio.open(str(tmp_path / "h.db"), max_workers=2) as store:
            followers = [store.events.read_after("s", follow=True, limit=3) for _ in range(10)]
            for follower in followers:
                await follower.opened()
            await store.events.append_events("s", [Event("a"), Event("b"), Event("c")])
            for follower in followers:
                seen = [r.event.type async for r in follower if r.event is not None]
                assert seen == ["a", "b", "c"]
        assert reader_threads() == []

    asyncio.run(main())


def test_errors_are_store_errors_with_hints(tmp_path: Path) -> None:
    """A conflict through the facade is the sync VersionConflict, a StoreError with a hint."""

    async def main() -> None:
        async with sqlstore.aio.open(str(tmp_path / "e.db")) as store:
            version = await store.sessions.save(Session.new("s"))
            await store.events.append_event("s", Event("note"))
            with pytest.raises(StoreError) as caught:
                await store.apply("s", events=[Event("late")], expected_version=version)
            assert isinstance(caught.value, VersionConflict) and caught.value.hint
            assert [e.type async for e in store.events.read("s")] == ["note"]

    run(main())


def test_inventory_and_orphans_as_coroutines(tmp_path: Path) -> None:
    """inventory, orphans and delete_orphan_if_unchanged have async twins on a real file."""

    async def main() -> None:
        async with sqlstore.aio.open(str(tmp_path / "a.db")) as store:
            await store.sessions.save(Session.new("s"))
            await store.events.append_event("lost", Event("x"))
            listing = await store.sessions.inventory(limit=5)
            assert ([m.id for m in listing.sessions], listing.total) == (["s"], 1)
            (orphan,) = await store.sessions.orphans()
            assert (orphan.id, orphan.records) == ("lost", 1)
            assert await store.sessions.delete_orphan_if_unchanged(orphan) is True
            assert await store.sessions.orphans() == []

    asyncio.run(main())
