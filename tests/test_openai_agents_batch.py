"""Concurrent ``add_items`` of one event-loop round share one commit, each keeping its outcome."""

from __future__ import annotations

import asyncio
import gc
import weakref
from pathlib import Path
from typing import Any

import pytest

import sqlstore
from sqlstore.changes import Unit
from sqlstore.errors import VersionConflict
from sqlstore.events import Event
from sqlstore.integrations.openai_agents import InvalidItem, SqlstoreSession
from sqlstore.ports import apply_each
from sqlstore.sqlite import SQLiteStore


def commits_of(store: SQLiteStore) -> list[int]:
    """Count the commits of the store's writer connection (a real SQLite commit hook)."""
    seen = [0]

    def hook() -> bool:
        seen[0] += 1
        return False  # go on with the commit

    store.db._writer.set_commit_hook(hook)
    return seen


def contents(items: list[dict[str, Any]]) -> list[Any]:
    return [item["content"] for item in items]


def test_eight_sessions_adding_at_once_share_one_commit(tmp_path: Path) -> None:
    """Eight tasks adding to eight sessions in one round are one commit; nothing lost or mixed."""
    store = sqlstore.open(str(tmp_path / "s.db"))
    assert isinstance(store, SQLiteStore)
    sessions = [SqlstoreSession(f"s{i}", store) for i in range(8)]
    seen = commits_of(store)

    async def rounds() -> None:
        for step in range(3):
            await asyncio.gather(
                *(s.add_items([{"content": f"{s.session_id}-{step}"}]) for s in sessions)
            )

    asyncio.run(rounds())
    assert seen[0] == 3
    for s in sessions:
        assert contents(asyncio.run(s.get_items())) == [f"{s.session_id}-{k}" for k in range(3)]
        assert store.sessions.meta(s.session_id).version >= 3
        s.close()
    store.close()


def test_a_refused_item_fails_its_own_call_alone(tmp_path: Path) -> None:
    """In a round, the call with an item that is not JSON fails; the others are stored."""
    store = sqlstore.open(str(tmp_path / "s.db"))
    good = [SqlstoreSession(f"g{i}", store) for i in range(3)]
    bad = SqlstoreSession("bad", store)

    async def together() -> list[Any]:
        calls = [s.add_items([{"content": s.session_id}]) for s in good]
        calls.insert(1, bad.add_items([{"content": object()}]))
        return await asyncio.gather(*calls, return_exceptions=True)

    outcomes = asyncio.run(together())
    assert isinstance(outcomes[1], InvalidItem)
    assert [o for i, o in enumerate(outcomes) if i != 1] == [None, None, None]
    for s in good:
        assert contents(asyncio.run(s.get_items())) == [s.session_id]
    assert asyncio.run(bad.get_items()) == []
    assert list(store.events.read("bad")) == []
    store.close()


def test_two_handles_of_one_session_in_one_round_lose_nothing(tmp_path: Path) -> None:
    """Two session objects on one id conflict inside the batch; the loser is redone alone."""
    store = sqlstore.open(str(tmp_path / "s.db"))
    first, second = SqlstoreSession("same", store), SqlstoreSession("same", store)
    asyncio.run(first.add_items([{"content": "seed"}]))
    asyncio.run(second.get_items())

    async def together() -> None:
        for step in range(4):
            await asyncio.gather(
                first.add_items([{"content": f"a{step}"}]),
                second.add_items([{"content": f"b{step}"}]),
            )

    asyncio.run(together())
    got = contents(asyncio.run(first.get_items()))
    assert got[0] == "seed" and sorted(got[1:]) == sorted(
        [f"a{k}" for k in range(4)] + [f"b{k}" for k in range(4)]
    )
    assert [g for g in got if g.startswith("a")] == [f"a{k}" for k in range(4)]
    store.close()


def test_one_session_called_twice_in_a_round_keeps_call_order(tmp_path: Path) -> None:
    """Two tasks adding to one session object in one round are written in call order."""
    store = sqlstore.open(str(tmp_path / "s.db"))
    session = SqlstoreSession("order", store)

    async def together() -> None:
        await asyncio.gather(*(session.add_items([{"content": k}]) for k in range(6)))

    asyncio.run(together())
    assert contents(asyncio.run(session.get_items())) == list(range(6))
    store.close()


def test_a_cancelled_caller_still_gets_its_items_stored(tmp_path: Path) -> None:
    """Cancelling a task awaiting a batched add_items does not stop the write."""
    store = sqlstore.open(str(tmp_path / "s.db"))
    sessions = [SqlstoreSession(f"c{i}", store) for i in range(3)]

    async def scenario() -> None:
        tasks = [asyncio.ensure_future(s.add_items([{"content": "x"}])) for s in sessions]
        await asyncio.sleep(0)
        tasks[0].cancel()
        done = await asyncio.gather(*tasks, return_exceptions=True)
        assert isinstance(done[0], asyncio.CancelledError)

    asyncio.run(scenario())
    for s in sessions:
        assert contents(asyncio.run(s.get_items())) == ["x"]
    store.close()


@pytest.mark.parametrize("backend", ["sqlite", "memory"])
def test_apply_each_gives_every_unit_its_own_outcome(tmp_path: Path, backend: str) -> None:
    """apply_each: a conflicting unit gets VersionConflict and leaves nothing; others commit."""
    target = str(tmp_path / "s.db") if backend == "sqlite" else "memory:"
    store = sqlstore.open(target)
    store.events.append_event("u1", Event("seed"))
    units = [
        Unit("u1", events=[Event("one")]),
        Unit("u2", events=[Event("two")], expected_version=5),
        Unit("u3", events=[Event("three")]),
    ]
    outcomes = apply_each(store, units)
    assert isinstance(outcomes[1], VersionConflict)
    assert [e.type for e in store.events.read("u1")] == ["seed", "one"]
    assert list(store.events.read("u2")) == []
    assert [e.type for e in store.events.read("u3")] == ["three"]
    store.close()


def test_a_closed_store_is_not_kept_alive_by_its_batcher(tmp_path: Path) -> None:
    """Once its sessions and the caller drop a store, nothing of the batching keeps it."""
    store = sqlstore.open(str(tmp_path / "s.db"))
    session = SqlstoreSession("gone", store)
    asyncio.run(session.add_items([{"content": "x"}]))
    session.close()
    store.close()
    ref = weakref.ref(store)
    del store, session
    gc.collect()
    assert ref() is None
