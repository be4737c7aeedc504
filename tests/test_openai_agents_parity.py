"""``SqlstoreSession`` behaves like the SDK's ``SQLiteSession``: same scenarios, same answers.

Every scenario runs once against ``SQLiteSession`` on a file (the reference) and
once against ``SqlstoreSession`` on each backend, and the two results must be
equal; each scenario also checks the expected answer itself, so an agreement
on a wrong answer fails too.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from agents import SessionSettings, SQLiteSession

from sqlstore.integrations.openai_agents import SqlstoreSession
from tests.integration_support import BACKENDS, backend_store
from tests.redis_server import redis_server, redis_url  # noqa: F401 - fixtures

Factory = Callable[..., Any]
Scenario = Callable[[Factory], Awaitable[Any]]

HOSTILE = [
    "O'Reilly",
    "DROP TABLE sessions;",
    "Robert'); DROP TABLE students;--",
    '"SELECT * FROM users WHERE name = "admin";"',
    "こんにちは 😊👍 Привет",
    "\x00nul \x1b[31mred\x1b[0m \r\n\t bell\x07",
    "\ud800 lone surrogate \udfff",
    "\u202e right-to-left override",
    "x" * 200_000,
]


@pytest.fixture(params=BACKENDS)
def ours(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Factory]:
    """A factory of ``SqlstoreSession`` objects on one store of the given backend."""
    store = backend_store(request, tmp_path)
    made: list[SqlstoreSession] = []

    def make(session_id: str, **kwargs: Any) -> SqlstoreSession:
        session = SqlstoreSession(session_id, store, **kwargs)
        made.append(session)
        return session

    yield make
    for session in made:
        session.close()
    store.close()


@pytest.fixture
def reference(tmp_path: Path) -> Iterator[Factory]:
    """A factory of the SDK's ``SQLiteSession`` objects on one file."""
    made: list[SQLiteSession] = []

    def make(session_id: str, **kwargs: Any) -> SQLiteSession:
        session = SQLiteSession(session_id, tmp_path / "reference.db", **kwargs)
        made.append(session)
        return session

    yield make
    for session in made:
        session.close()


def both(scenario: Scenario, reference: Factory, ours: Factory) -> Any:
    """Run ``scenario`` on both implementations; return the (equal) result."""
    expected = asyncio.run(scenario(reference))
    got = asyncio.run(scenario(ours))
    assert got == expected
    return got


def contents(items: list[Any]) -> list[Any]:
    return [item.get("content") for item in items]


MESSAGES = [
    {"role": "user" if i % 2 == 0 else "assistant", "content": f"Message {i}"} for i in range(6)
]


async def limits(make: Factory) -> Any:
    session = make("limits")
    await session.add_items(MESSAGES)
    return [contents(await session.get_items(n)) for n in (None, 2, 4, 6, 10, 0, -1, 1)]


def test_limit_returns_newest_in_order(reference: Factory, ours: Factory) -> None:
    """get_items(limit) returns the newest items oldest first; 0 → none, negative/None → all."""
    got = both(limits, reference, ours)
    everything = [m["content"] for m in MESSAGES]
    assert got == [
        everything,
        everything[-2:],
        everything[-4:],
        everything,
        everything,
        [],
        everything,
        everything[-1:],
    ]


async def settings_limit(make: Factory) -> Any:
    session = make("settings", session_settings=SessionSettings(limit=3))
    await session.add_items(MESSAGES)
    by_dict = make("settings-dict", session_settings={"limit": 1})
    await by_dict.add_items(MESSAGES[:2])
    return (
        session.session_settings.limit,
        contents(await session.get_items()),
        contents(await session.get_items(limit=5)),
        contents(await session.get_items(limit=0)),
        contents(await by_dict.get_items()),
        make("default").session_settings.limit,
    )


def test_explicit_limit_overrides_settings(reference: Factory, ours: Factory) -> None:
    """session_settings.limit is the default; an explicit limit (even 0) overrides it."""
    got = both(settings_limit, reference, ours)
    assert got == (
        3,
        ["Message 3", "Message 4", "Message 5"],
        [f"Message {i}" for i in range(1, 6)],
        [],
        ["Message 1"],
        None,
    )


async def popping(make: Factory) -> Any:
    session = make("pop")
    other = make("pop-other")
    out: list[Any] = [await session.pop_item()]
    await session.add_items(MESSAGES[:3])
    await other.add_items([{"role": "user", "content": "other"}])
    for _ in range(4):
        out.append(await session.pop_item())
        out.append(contents(await session.get_items()))
    await session.add_items([{"role": "user", "content": "again"}])
    out.append(contents(await session.get_items()))
    out.append(contents(await other.get_items()))
    return out


def test_pop_returns_newest_then_none(reference: Factory, ours: Factory) -> None:
    """pop_item removes and returns the newest item, None when empty, and touches no other id."""
    got = both(popping, reference, ours)
    assert got[0] is None
    assert got[1] == MESSAGES[2] and got[2] == ["Message 0", "Message 1"]
    assert got[5] == MESSAGES[0] and got[6] == []
    assert got[7] is None and got[8] == []
    assert got[9] == ["again"] and got[10] == ["other"]


async def interleaved(make: Factory) -> Any:
    session = make("interleaved")
    trace: list[Any] = []
    for step in range(12):
        await session.add_items([{"role": "user", "content": f"a{step}"}, {"content": f"b{step}"}])
        trace.append(await session.pop_item())
        if step % 3 == 0:
            trace.append(await session.pop_item())
        trace.append(contents(await session.get_items(3)))
    trace.append(contents(await session.get_items()))
    return trace


def test_pops_between_adds(reference: Factory, ours: Factory) -> None:
    """Adds and pops interleaved leave the same list, read whole or by limit."""
    got = both(interleaved, reference, ours)
    assert got[-1] == ["a1", "a2", "a4", "a5", "a7", "a8", "a10", "a11"]


async def clearing(make: Factory) -> Any:
    session = make("clear")
    await session.clear_session()  # clearing nothing is fine
    await session.add_items(MESSAGES)
    await session.clear_session()
    after = contents(await session.get_items())
    popped = await session.pop_item()
    await session.add_items([{"role": "user", "content": "fresh"}])
    return after, popped, contents(await session.get_items())


def test_clear_session(reference: Factory, ours: Factory) -> None:
    """clear_session empties the session; it can be used again afterwards."""
    assert both(clearing, reference, ours) == ([], None, ["fresh"])


async def empty_add(make: Factory) -> Any:
    session = make("empty")
    await session.add_items([])
    first = contents(await session.get_items())
    await session.add_items(MESSAGES[:1])
    await session.add_items([])
    return first, contents(await session.get_items())


def test_add_nothing(reference: Factory, ours: Factory) -> None:
    """add_items([]) stores nothing and is not an error."""
    assert both(empty_add, reference, ours) == ([], ["Message 0"])


async def hostile(make: Factory) -> Any:
    session = make("hostile")
    items = [{"role": "user", "content": text} for text in HOSTILE]
    items.append({"type": "x", "nested": {"list": [1, 2.5, None, True, {"k": "\ud83d"}]}})
    items.append({"type": "floats", "values": [float("nan"), float("inf"), -0.0, 1e308]})
    await session.add_items(items)
    got = await session.get_items()
    # NaN != NaN: compare the text form, which is what both stores keep.
    return [repr(item) for item in got], repr(await session.pop_item())


def test_hostile_strings_verbatim(reference: Factory, ours: Factory) -> None:
    """Unicode, control characters, SQL, lone surrogates and NaN come back exactly as given."""
    got, popped = both(hostile, reference, ours)
    assert got[: len(HOSTILE)] == [repr({"role": "user", "content": t}) for t in HOSTILE]
    assert "nan" in popped and "inf" in popped


async def many_tasks(make: Factory) -> Any:
    session = make("tasks")

    async def writer(task: int) -> None:
        for step in range(5):
            await session.add_items([{"content": f"{task}:{step}:{k}"} for k in range(3)])

    await asyncio.gather(*(writer(task) for task in range(8)))
    got = contents(await session.get_items())
    per_task = {task: [c for c in got if c.startswith(f"{task}:")] for task in range(8)}
    batches_whole = all(
        got[i].rsplit(":", 1)[0] == got[i + k].rsplit(":", 1)[0]
        for i in range(0, len(got), 3)
        for k in (1, 2)
    )
    return len(got), per_task, batches_whole


def test_many_tasks_at_once(reference: Factory, ours: Factory) -> None:
    """Eight tasks adding to one session at once lose nothing; each task's items keep order."""
    count, per_task, whole = both(many_tasks, reference, ours)
    assert count == 120 and whole
    assert per_task == {t: [f"{t}:{s}:{k}" for s in range(5) for k in range(3)] for t in range(8)}


async def many_threads(make: Factory) -> Any:
    session = make("threads")

    def add(index: int) -> None:
        asyncio.run(session.add_items([{"role": "user", "content": f"Message {index}"}]))

    threads = [threading.Thread(target=add, args=(i,)) for i in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sorted(contents(await session.get_items()))


def test_threads_with_own_loops(reference: Factory, ours: Factory) -> None:
    """Threads, each with its own event loop, share one session object and lose nothing."""
    assert both(many_threads, reference, ours) == sorted(f"Message {i}" for i in range(10))


async def closed(make: Factory) -> Any:
    session = make("closed")
    await session.add_items(MESSAGES[:1])
    session.close()
    session.close()  # idempotent
    outcomes = []
    for call in (
        lambda: session.add_items([]),
        lambda: session.add_items(MESSAGES[:1]),
        lambda: session.get_items(),
        lambda: session.pop_item(),
    ):
        try:
            await call()
            outcomes.append("ok")
        except RuntimeError as exc:
            outcomes.append("closed" if "closed" in str(exc) else str(exc))
    return outcomes


def test_closed_session_refuses(reference: Factory, ours: Factory) -> None:
    """A closed session refuses every operation with a RuntimeError saying it is closed."""
    assert both(closed, reference, ours) == ["closed"] * 4
