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

import sqlstore.aio
from sqlstore import Event, SQLiteStore
from sqlstore.errors import StoreClosed


def pool_threads() -> list[threading.Thread]:
    """Return the live worker threads of sqlstore.aio pools."""
    return [t for t in threading.enumerate() if t.name.startswith("sqlstore-aio_")]


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
        deadline = time.monotonic() + WAIT_S
        while pool_threads() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert pool_threads() == [], "the pool of the closed store is still running"
        with SQLiteStore(db) as check:
            assert [e.type for e in check.events.read("s")] == ["a"]
    finally:
        holder.kill()
