"""``SqlstoreSession`` as a sqlstore session: the mapping, atomicity, cost, bad input, ownership."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest

import sqlstore
from sqlstore.errors import InvalidSessionId, SessionNotFound, StoreError
from sqlstore.events import DataPage
from sqlstore.integrations.openai_agents import (
    ForeignSession,
    InvalidItem,
    SessionClosed,
    SqlstoreSession,
)
from sqlstore.session import Session

CALL = {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": '{"q": "x"}'}
OUTPUT = {"type": "function_call_output", "call_id": "c1", "output": "found"}


class CountingStore:
    """A real store whose event reads are counted (records returned), to pin read costs."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.records_read = 0
        outer = self

        class Events:
            def __getattr__(self, name: str) -> Any:
                attr = getattr(inner.events, name)
                if not name.startswith("read"):
                    return attr

                def counted(*args: Any, **kwargs: Any) -> Any:
                    got = attr(*args, **kwargs)
                    if isinstance(got, DataPage):
                        outer.records_read += len(got.records)
                        return got
                    got = list(got)
                    outer.records_read += len(got)
                    return got

                return counted

        self.events = Events()
        self.sessions = inner.sessions
        self.audit = inner.audit
        self.leases = inner.leases

    def apply(self, *args: Any, **kwargs: Any) -> Any:
        return self.inner.apply(*args, **kwargs)

    def close(self) -> None:
        self.inner.close()


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_snapshot_lists_the_session(tmp_path: Path) -> None:
    """The snapshot carries title (first user message), turns, tool calls, owner and labels."""
    db = tmp_path / "s.db"
    session = SqlstoreSession("chat-1", db, owner="alice", labels={"team": "qa"})
    run(session.add_items([{"role": "system", "content": "be nice"}]))
    run(session.add_items([{"role": "user", "content": "  What is\nthe weather?"}, CALL]))
    run(session.add_items([OUTPUT, {"role": "user", "content": "thanks"}]))
    session.close()
    with sqlstore.open(str(db)) as store:
        meta = store.sessions.meta("chat-1")
        snap = store.sessions.load("chat-1")
    assert meta.title == "What is"
    assert meta.turns == 2
    assert meta.owner is not None and meta.owner.subject == "alice"
    assert snap.counters.tool_calls == 1
    assert snap.labels == {"team": "qa"}
    assert snap.messages == []  # the conversation lives in the log only
    assert snap.extra["openai_agents"] == {"calls": {}}


def test_items_are_log_records_and_calls_audit_rows(tmp_path: Path) -> None:
    """Each item is one event; a call answered in a later add_items is one audit row."""
    db = tmp_path / "s.db"
    session = SqlstoreSession("chat", db)
    run(session.add_items([{"role": "user", "content": "hi"}, CALL]))
    run(session.add_items([OUTPUT]))
    run(
        session.add_items(
            [
                {**CALL, "call_id": "c2"},
                {
                    **OUTPUT,
                    "call_id": "c2",
                    "output": "An error occurred while running the tool. Please try again.",
                },
            ]
        )
    )
    session.close()
    with sqlstore.open(str(db)) as store:
        events = list(store.events.read("chat"))
        rows = store.audit.list("chat")
        by_tool = store.audit.query(tool="lookup")
    assert [e.type for e in events] == ["openai_agents.item"] * 5
    assert events[1].data["item"] == CALL
    assert [(r.call_id, r.tool, r.args, r.result, r.is_error) for r in rows] == [
        ("c1", "lookup", '{"q": "x"}', "found", False),
        (
            "c2",
            "lookup",
            '{"q": "x"}',
            "An error occurred while running the tool. Please try again.",
            True,
        ),
    ]
    assert rows[0].took_us > 0 and rows[1].took_us == 0
    assert by_tool == rows


def test_add_items_is_all_or_nothing(tmp_path: Path) -> None:
    """A batch with one bad item stores none of it and names the bad item's index."""
    db = tmp_path / "s.db"
    session = SqlstoreSession("atomic", db)
    run(session.add_items([{"role": "user", "content": "kept"}]))
    for bad, words in (
        ([{"content": "ok"}, {"content": object()}], "item 1 is not JSON-serialisable"),
        ([{"content": "ok"}, "not a dict"], "item 1 is a str"),
        ({"role": "user"}, "list of items"),
    ):
        with pytest.raises(InvalidItem, match=words) as info:
            run(session.add_items(bad))  # type: ignore[arg-type]
        assert isinstance(info.value, TypeError) and isinstance(info.value, StoreError)
    assert run(session.get_items()) == [{"role": "user", "content": "kept"}]
    session.close()
    with sqlstore.open(str(db)) as store:
        assert len(list(store.events.read("atomic"))) == 1
        assert store.sessions.meta("atomic").version == 1


def test_reads_cost_does_not_grow_with_history(tmp_path: Path) -> None:
    """get_items(n) and pop_item read a bounded number of records on a 3,000-item session."""
    inner = sqlstore.open(str(tmp_path / "s.db"), durability="normal")
    store = CountingStore(inner)
    session = SqlstoreSession("long", store)
    run(session.add_items([{"content": f"m{i}"} for i in range(3000)]))
    run(session.pop_item())
    run(session.add_items([{"content": "after pop"}]))
    for call, most in ((lambda: session.get_items(5), 12), (session.pop_item, 6)):
        store.records_read = 0
        run(call())
        assert store.records_read <= most
    store.records_read = 0
    got = run(session.get_items(4))
    assert [i["content"] for i in got] == ["m2995", "m2996", "m2997", "m2998"]
    assert store.records_read <= 10
    session.close()
    inner.close()


def test_path_is_owned_store_is_shared(tmp_path: Path) -> None:
    """A path is opened and closed by the session; a store passed in stays open."""
    store = sqlstore.open(str(tmp_path / "shared.db"))
    shared = SqlstoreSession("a", store)
    run(shared.add_items([{"content": "x"}]))
    shared.close()
    assert store.sessions.meta("a").id == "a"  # still usable
    store.close()
    owned = SqlstoreSession("b", tmp_path / "owned.db")
    owned.close()
    with pytest.raises(SessionClosed, match="closed"):
        run(owned.get_items())


@pytest.mark.parametrize("bad", ["", "a\x00b", "\ud800", "x" * 5000])
def test_bad_session_id(bad: str, tmp_path: Path) -> None:
    """An id that is not a valid sqlstore id is refused before any file is created."""
    with pytest.raises(InvalidSessionId):
        SqlstoreSession(bad, tmp_path / "never.db")
    assert not (tmp_path / "never.db").exists()


def test_store_that_cannot_be_opened(tmp_path: Path) -> None:
    """A directory, a foreign file or an unknown URL scheme is a clear error at construction."""
    foreign = tmp_path / "foreign.db"
    foreign.write_bytes(b"not a database at all" * 100)
    with pytest.raises(StoreError):
        SqlstoreSession("x", foreign)
    with pytest.raises(ValueError, match="scheme"):
        SqlstoreSession("x", "ftp://host/db")
    with pytest.raises(TypeError, match="store must be"):
        SqlstoreSession("x", 42)
    with pytest.raises(TypeError, match="owner"):
        SqlstoreSession("x", sqlstore.MemoryStore(), owner=3)  # type: ignore[arg-type]
    assert foreign.read_bytes() == b"not a database at all" * 100


def test_foreign_session_is_not_overwritten(tmp_path: Path) -> None:
    """An id held by an ordinary sqlstore session is refused, and the session is unchanged."""
    with sqlstore.open(str(tmp_path / "s.db")) as store:
        store.sessions.save(Session.new("taken", title="mine"))
        session = SqlstoreSession("taken", store)
        with pytest.raises(ForeignSession, match="not an OpenAI Agents session"):
            run(session.add_items([{"content": "x"}]))
        assert run(session.get_items()) == []
        assert store.sessions.load("taken").title == "mine"


def test_clear_removes_everything(tmp_path: Path) -> None:
    """clear_session deletes the snapshot, every event and every audit row."""
    with sqlstore.open(str(tmp_path / "s.db")) as store:
        session = SqlstoreSession("gone", store)
        run(session.add_items([{"role": "user", "content": "q"}, CALL, OUTPUT]))
        assert store.audit.list("gone")
        run(session.clear_session())
        with pytest.raises(SessionNotFound):
            store.sessions.meta("gone")
        assert list(store.events.read("gone")) == []
        assert store.audit.list("gone") == []


def test_cancelled_add_still_completes(tmp_path: Path) -> None:
    """A write whose task is cancelled finishes, and the cancellation reaches the caller."""

    async def scenario() -> list[Any]:
        session = SqlstoreSession("cancel", tmp_path / "s.db")
        task = asyncio.create_task(session.add_items([{"content": "kept"}]))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        items = await session.get_items()
        session.close()
        return items

    assert run(scenario()) == [{"content": "kept"}]


def test_events_show_pops(tmp_path: Path) -> None:
    """A pop is a record in the log, naming the popped item's position."""
    with sqlstore.open(str(tmp_path / "s.db")) as store:
        session = SqlstoreSession("p", store)
        run(session.add_items([{"content": "a"}, {"role": "user", "content": "b"}]))
        assert store.sessions.meta("p").turns == 1
        assert run(session.pop_item()) == {"role": "user", "content": "b"}
        events = list(store.events.read("p"))
        assert [e.type for e in events] == ["openai_agents.item"] * 2 + ["openai_agents.pop"]
        assert events[-1].data == {"popped": 2, "top": 1}
        assert store.sessions.meta("p").turns == 0
        assert json.loads(json.dumps(events[0].data)) == {"item": {"content": "a"}}


def test_async_store_is_shared(tmp_path: Path) -> None:
    """An ``sqlstore.aio`` store is accepted, shared with the session, and left open."""
    import sqlstore.aio

    async def scenario() -> Any:
        async with sqlstore.aio.open(str(tmp_path / "a.db")) as astore:
            session = SqlstoreSession("async", astore)
            await session.add_items([{"role": "user", "content": "hello"}])
            session.close()
            meta = await astore.sessions.meta("async")  # the store is still open
            again = SqlstoreSession("async", astore)
            items = await again.get_items()
            again.close()
            return meta.title, items

    assert run(scenario()) == ("hello", [{"role": "user", "content": "hello"}])


class ThreadRecordingStore(CountingStore):
    """A real local store that records which thread reads its log and can hold a write."""

    in_process = True

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.reader_threads: list[str] = []
        self.hold = threading.Event()
        self.holding = threading.Event()
        self.hold.set()
        outer = self
        counted = self.events

        class Events:
            def __getattr__(self, name: str) -> Any:
                attr = getattr(counted, name)
                if name != "read_data_before":
                    return attr

                def recorded(*args: Any, **kwargs: Any) -> Any:
                    outer.reader_threads.append(threading.current_thread().name)
                    return attr(*args, **kwargs)

                return recorded

        self.events = Events()

    def apply(self, *args: Any, **kwargs: Any) -> Any:
        self.holding.set()
        self.hold.wait(10)
        return self.inner.apply(*args, **kwargs)


def test_small_reads_of_a_local_store_run_on_the_loop(tmp_path: Path) -> None:
    """get_items(n <= 100) reads on the event loop's thread; a whole-history read uses a worker."""
    inner = sqlstore.open(str(tmp_path / "s.db"), durability="normal")
    store = ThreadRecordingStore(inner)
    session = SqlstoreSession("inline", store)
    run(session.add_items([{"content": f"m{i}"} for i in range(150)]))
    loop_thread = threading.current_thread().name
    store.reader_threads.clear()
    assert [i["content"] for i in run(session.get_items(2))] == ["m148", "m149"]
    assert store.reader_threads == [loop_thread]
    store.reader_threads.clear()
    assert len(run(session.get_items(101))) == 101
    assert len(run(session.get_items())) == 150
    assert store.reader_threads and loop_thread not in store.reader_threads
    session.close()
    inner.close()


def test_small_read_waits_in_a_thread_while_a_write_is_under_way(tmp_path: Path) -> None:
    """While add_items holds the session, get_items(2) waits in a worker; the loop stays free."""
    inner = sqlstore.open(str(tmp_path / "s.db"), durability="normal")
    store = ThreadRecordingStore(inner)
    session = SqlstoreSession("busy", store)
    run(session.add_items([{"content": "first"}]))
    store.hold.clear()
    store.holding.clear()
    ticks = 0

    async def scenario() -> list[Any]:
        nonlocal ticks
        writer = asyncio.ensure_future(session.add_items([{"content": "second"}]))
        while not store.holding.is_set():
            await asyncio.sleep(0.001)
        store.reader_threads.clear()
        reader = asyncio.ensure_future(session.get_items(2))
        for _ in range(20):  # the loop keeps running while the read waits for the write
            await asyncio.sleep(0.001)
            ticks += 1
        assert not reader.done()
        store.hold.set()
        await writer
        return await reader

    got = run(scenario())
    assert ticks == 20
    assert [i["content"] for i in got] == ["first", "second"]
    assert store.reader_threads and threading.current_thread().name not in store.reader_threads
    session.close()
    inner.close()


def test_a_store_that_is_not_local_is_read_in_a_worker(tmp_path: Path) -> None:
    """A store without ``in_process`` (a network store) never reads on the event loop."""
    inner = sqlstore.open(str(tmp_path / "s.db"), durability="normal")
    store = ThreadRecordingStore(inner)
    store.in_process = False
    session = SqlstoreSession("remote", store)
    run(session.add_items([{"content": "x"}]))
    store.reader_threads.clear()
    assert len(run(session.get_items(1))) == 1
    assert store.reader_threads and threading.current_thread().name not in store.reader_threads
    session.close()
    inner.close()
