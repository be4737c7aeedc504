"""``sqlstore.aio`` under cancellation: what a cancelled caller reads back, a cancelled close.

Real SQLite files and a real second process holding the write lock, so the
writes are really in flight when their callers (or the closing task) are
cancelled.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest
from test_aio import WAIT_S, LockHolder

import sqlstore
import sqlstore.aio
from sqlstore import Event, SQLiteStore
from sqlstore.errors import StoreClosed


def pool_threads() -> list[threading.Thread]:
    """Return the live worker threads of sqlstore.aio pools."""
    return [t for t in threading.enumerate() if t.name.startswith("sqlstore-aio_")]


def wait_no_pool_threads() -> None:
    """Fail unless every pool worker thread has exited within WAIT_S."""
    deadline = time.monotonic() + WAIT_S
    while pool_threads() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert pool_threads() == [], "the pool of a closed store is still running"


def test_state_read_back_after_a_cancelled_write_is_its_outcome(tmp_path: Path) -> None:
    """Once a cancelled caller sees CancelledError, its write has ended: reading back is final."""
    db = tmp_path / "cancel.db"
    SQLiteStore(db).close()
    holder = LockHolder(db)
    releaser = threading.Timer(0.3, holder.release)  # the lock frees while the caller waits
    try:

        async def main() -> tuple[list[str], list[str]]:
            async with sqlstore.aio.open(str(db), busy_timeout_ms=20_000) as store:
                task = asyncio.create_task(store.events.append_event("s", Event("a")))
                await asyncio.sleep(0.1)
                assert not task.done(), "the write passed a held lock"
                releaser.start()
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
                # The documented recovery: read the state back instead of retrying.
                seen = [e.type async for e in store.events.read("s")]
            with SQLiteStore(db) as check:
                final = [e.type for e in check.events.read("s")]
            return seen, final

        seen, final = asyncio.run(main())
        assert final == ["a"]
        assert seen == final, "read back after CancelledError, the write had not ended yet"
    finally:
        releaser.cancel()
        releaser.join(WAIT_S)
        holder.kill()


def test_a_cancelled_aclose_is_finished_by_the_next_one(tmp_path: Path) -> None:
    """If aclose is cancelled while it waits for a write, a later aclose still closes everything."""
    db = tmp_path / "close.db"
    SQLiteStore(db).close()
    holder = LockHolder(db)
    try:

        async def main() -> sqlstore.aio.AsyncStore:
            store = await sqlstore.aio.open(str(db), busy_timeout_ms=20_000, max_workers=2)
            write = asyncio.create_task(store.events.append_event("s", Event("a")))
            await asyncio.sleep(0.05)
            closing = asyncio.create_task(store.aclose())
            await asyncio.sleep(0.1)
            assert not closing.done(), "aclose did not wait for the running write"
            closing.cancel()
            with pytest.raises(asyncio.CancelledError):
                await closing
            holder.release()  # blocks the loop briefly: the child only rolls back
            await write
            await store.aclose()
            return store

        store = asyncio.run(main())
        with pytest.raises(StoreClosed):
            store.sync.sessions.list()  # the owned sync store was closed
        wait_no_pool_threads()
        with SQLiteStore(db) as check:
            assert [e.type for e in check.events.read("s")] == ["a"]
    finally:
        holder.kill()


@pytest.mark.parametrize("target", [123, None, b"x.db", ["x.db"]])
def test_open_refuses_a_target_that_is_not_a_str_or_path(target: object) -> None:
    """sqlstore.open and sqlstore.aio.open name a wrong target type instead of an AttributeError."""
    with pytest.raises(TypeError, match="store target must be"):
        sqlstore.open(target)  # type: ignore[arg-type]

    async def main() -> None:
        with pytest.raises(TypeError, match="store target must be"):
            async with sqlstore.aio.open(target):  # type: ignore[arg-type]
                pass

    asyncio.run(main())
    wait_no_pool_threads()  # the pool that tried to open it is gone too


def test_open_takes_a_path_object(tmp_path: Path) -> None:
    """A pathlib.Path is a target for sqlstore.open and sqlstore.aio.open, as for SQLiteStore."""
    with sqlstore.open(tmp_path / "p.db") as sync:
        sync.events.append_event("s", Event("sync"))

    async def main() -> list[str]:
        async with sqlstore.aio.open(tmp_path / "p.db") as store:
            await store.events.append_event("s", Event("async"))
            return [e.type async for e in store.events.read("s")]

    assert asyncio.run(main()) == ["sync", "async"]
