"""RedisStore specifics: URLs, key layout, counters, faults (unreachable, OOM, closed)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
import redis
from freezegun import freeze_time
from redis_server import (  # noqa: F401  (fixtures)
    RedisServer,
    drop_prefix,
    free_port,
    redis_server,
    redis_url,
    start_server,
)

import sqlstore
from sqlstore import Event, Session, ToolCallRecord
from sqlstore.conformance.fixtures import ALICE
from sqlstore.errors import (
    CursorExpired,
    SessionAlreadyExists,
    SessionNotFound,
    StoreClosed,
    StoreError,
    StoreFull,
    StoreUnavailable,
)
from sqlstore.redis import RedisStore
from sqlstore.redis.connection import parse_version, redacted, split_url

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def store(redis_url: str) -> Iterator[RedisStore]:  # noqa: F811
    """A RedisStore on a private prefix of the shared test server."""
    with RedisStore(redis_url) as opened:
        yield opened


def raw(store: RedisStore) -> redis.Redis:
    """Return the store's own client, for looking at the keys it wrote."""
    client: redis.Redis = store.conn.client
    return client


def test_open_dispatches_redis_urls(redis_url: str) -> None:  # noqa: F811
    """sqlstore.open accepts redis:// URLs and honours the prefix query parameter."""
    with sqlstore.open(redis_url) as opened:
        assert isinstance(opened, RedisStore)
        assert redis_url.endswith("?prefix=" + opened.prefix)
        opened.sessions.save(Session.new("via-open"))
        assert raw(opened).exists(f"{opened.prefix}session:via-open") == 1


def test_url_helpers() -> None:
    """The prefix parameter is split off, passwords are redacted, versions parse."""
    assert split_url("redis://h:1/2?prefix=p:&x=1") == ("redis://h:1/2?x=1", "p:")
    assert split_url("redis://h:1/2") == ("redis://h:1/2", None)
    assert redacted("redis://u:secret@h:6379/0") == "redis://u:***@h:6379/0"
    assert parse_version("7.0.15") == (7, 0, 15) and parse_version("6.2.1-rc") == (6, 2, 1)


def test_unreachable_server_is_store_unavailable() -> None:
    """Opening a URL where nothing listens raises StoreUnavailable naming the address."""
    port = free_port()
    with pytest.raises(StoreUnavailable) as caught:
        RedisStore(f"redis://127.0.0.1:{port}/0")
    assert f"127.0.0.1:{port}" in str(caught.value)
    assert "redis-cli" in caught.value.hint
    assert isinstance(caught.value, StoreError)


def test_server_gone_mid_use_is_store_unavailable() -> None:
    """A store whose server stopped raises StoreUnavailable on the next call, not a redis error."""
    server = start_server()
    try:
        opened = RedisStore(server.url)
        opened.sessions.save(Session.new("before"))
    finally:
        server.stop()
    with pytest.raises(StoreUnavailable):
        opened.sessions.load("before")
    with pytest.raises(StoreUnavailable):
        opened.events.append("before", Event(type="note"))
    opened.close()


def test_closed_store_raises(redis_url: str) -> None:  # noqa: F811
    """Every part raises StoreClosed after close(), and close is idempotent."""
    opened = RedisStore(redis_url)
    opened.close()
    opened.close()
    with pytest.raises(StoreClosed):
        opened.sessions.list()
    with pytest.raises(StoreClosed):
        opened.events.append("x", Event(type="note"))
    with pytest.raises(StoreClosed):
        list(opened.events.read_after("x"))
    with pytest.raises(StoreClosed):
        opened.leases.held()


def test_caller_client_is_not_closed(redis_server: RedisServer) -> None:  # noqa: F811
    """A store built on the caller's client works and leaves that client usable after close()."""
    client = redis_server.client()
    with RedisStore(client, prefix="own-client:") as opened:
        opened.sessions.save(Session.new("mine"))
    assert client.hget("own-client:session:mine", "version") is not None
    drop_prefix(redis_server, "own-client:")
    client.close()


def test_key_layout(store: RedisStore) -> None:
    """The hash, stream, generation, audit list and index keys hold what docs/redis.md says."""
    p = store.prefix
    session = Session.new("layout", owner=ALICE, title="t")
    with freeze_time(T0):
        store.sessions.save(session)
        store.events.append_event("layout", Event(type="note", text="one"))
        store.events.append_gap("layout", "lost two")
        store.audit.record(ToolCallRecord(session_id="layout", call_id="c1", tool="Bash"))
    r = raw(store)
    fields = r.hgetall(f"{p}session:layout")
    assert {b"blob", b"mtime_ns", b"version", b"meta", b"cmp", b"owner_scope"} <= set(fields)
    assert int(fields[b"mtime_ns"]) == int(T0.timestamp()) * 10**9
    assert sqlstore.snapshot.decode(fields[b"blob"]) == session
    entries = r.xrange(f"{p}events:layout")
    assert [e[0] for e in entries] == [b"1-0", b"2-0"]
    assert [e[1][b"k"] for e in entries] == [b"e", b"g"]
    assert entries[1][1][b"b"] == b"lost two"
    generation = r.get(f"{p}events-gen:layout")
    assert generation is not None and len(generation) == 16
    assert r.llen(f"{p}audit:layout") == 1
    member = f"{2**64 - 1 - int(T0.timestamp()) * 10**9:016x}:" + b"layout".hex()
    assert r.zrange(f"{p}index:page", 0, -1) == [member.encode()]
    assert r.zcard(f"{p}index:{fields[b'owner_scope'].decode()}") == 1
    assert r.type(f"{p}index:age") == b"zset"


def test_versions_are_never_reused(store: RedisStore) -> None:
    """A session deleted and created again gets a higher version than it ever had."""
    store.sessions.save(Session.new("again"))
    store.events.append("again", Event(type="note"))
    old = store.sessions.meta("again").version
    store.sessions.delete("again")
    store.sessions.create(Session.new("again"))
    assert store.sessions.meta("again").version > old


def test_delete_and_recreate_expires_old_cursors(store: RedisStore) -> None:
    """After delete and a new append the log has a new generation and old cursors expire."""
    cursor = store.events.append_event("gen", Event(type="note"))
    store.sessions.delete("gen")
    fresh = store.events.append_event("gen", Event(type="note", text="new"))
    with pytest.raises(CursorExpired):
        list(store.events.read_after("gen", cursor))
    assert fresh != cursor
    assert [r.event.text for r in store.events.read_after("gen") if r.event] == ["new"]


def test_prefixes_isolate_stores(redis_server: RedisServer) -> None:  # noqa: F811
    """Two stores with different prefixes on one database never see each other's data."""
    with (
        RedisStore(redis_server.url, prefix="iso-a:") as a,
        RedisStore(redis_server.url, prefix="iso-b:") as b,
    ):
        try:
            a.sessions.save(Session.new("same-id", title="a"))
            b.sessions.save(Session.new("same-id", title="b"))
            a.events.append("same-id", Event(type="note", text="a"))
            assert b.sessions.load("same-id").title == "b"
            assert list(b.events.read("same-id")) == []
            b.sessions.delete("same-id")
            assert a.sessions.load("same-id").title == "a"
            assert [m.id for m in a.sessions.page(10).sessions] == ["same-id"]
        finally:
            drop_prefix(redis_server, "iso-a:")
            drop_prefix(redis_server, "iso-b:")


def test_ids_with_glob_and_separator_characters(store: RedisStore) -> None:
    """Ids with *, ?, [, :, spaces and non-ASCII are stored raw and never alias."""
    ids = ["a*", "a?", "a[1]", "a:b", "a b", "é", "a", "a\x01"]
    for session_id in ids:
        store.sessions.save(Session.new(session_id, title=session_id))
        store.audit.record(ToolCallRecord(session_id=session_id, tool=session_id))
    for session_id in ids:
        assert store.sessions.load(session_id).title == session_id
        assert [r.tool for r in store.audit.list(session_id)] == [session_id]
    assert sorted(s.id for s in store.sessions.list()) == sorted(ids)


def test_order_matches_memory_store(store: RedisStore) -> None:
    """page and iter_meta order equal-time and multibyte ids exactly as MemoryStore does."""
    memory = sqlstore.MemoryStore()
    ids = ["b", "a", "ab", "a\x7f", "é", "\u0100", "z" * 300, "🧪", "A"]
    with freeze_time(T0) as frozen:
        for index, session_id in enumerate(ids):
            for target in (memory, store):
                target.sessions.save(Session.new(session_id))
            if index % 3 == 2:
                frozen.tick(timedelta(seconds=1))
    want_pages = [m.id for m in memory.sessions.page(100).sessions]
    got: list[str] = []
    cursor: str | None = None
    while True:
        page = store.sessions.page(2, cursor)
        got.extend(m.id for m in page.sessions)
        cursor = page.next_cursor
        if cursor is None:
            break
    assert got == want_pages
    assert [m.id for m in store.sessions.iter_meta()] == [m.id for m in memory.sessions.iter_meta()]


def test_iter_meta_streams_in_pages(store: RedisStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """iter_meta walks the age index a page at a time and still yields every row once."""
    from sqlstore.redis import sessions as redis_sessions

    monkeypatch.setattr(redis_sessions, "ITER_META_PAGE_ROWS", 3)
    with freeze_time(T0) as frozen:
        for index in range(10):
            store.sessions.save(Session.new(f"it-{index:02d}"))
            frozen.tick(timedelta(seconds=1))
    assert [m.id for m in store.sessions.iter_meta()] == [f"it-{i:02d}" for i in range(10)]


def test_owner_index_follows_owner_changes(store: RedisStore) -> None:
    """Saving a session under a new owner moves it between owner scopes."""
    from sqlstore.conformance.fixtures import BOB

    session = Session.new("moves", owner=ALICE)
    store.sessions.save(session)
    session.owner = BOB
    store.sessions.save(session)
    assert store.sessions.page(10, owner=ALICE, enforce_owner=True).total == 0
    assert [m.id for m in store.sessions.page(10, owner=BOB, enforce_owner=True).sessions] == [
        "moves"
    ]
    session.owner = None
    store.sessions.save(session)
    assert store.sessions.page(10, owner=BOB, enforce_owner=True).total == 0
    assert store.sessions.page(10).total == 1


def test_audit_query_filters_across_sessions(store: RedisStore) -> None:
    """query filters by tool, time and errors across sessions, in record order, with a limit."""
    with freeze_time(T0) as frozen:
        store.audit.record(ToolCallRecord(session_id="q1", call_id="1", tool="Bash"))
        frozen.tick(timedelta(minutes=1))
        store.audit.record(ToolCallRecord(session_id="q2", call_id="2", tool="Read", is_error=True))
        frozen.tick(timedelta(minutes=1))
        store.audit.record(ToolCallRecord(session_id="q1", call_id="3", tool="Bash", is_error=True))
    assert [r.call_id for r in store.audit.query()] == ["1", "2", "3"]
    assert [r.call_id for r in store.audit.query(tool="Bash")] == ["1", "3"]
    assert [r.call_id for r in store.audit.query(errors_only=True)] == ["2", "3"]
    assert [r.call_id for r in store.audit.query(since=T0 + timedelta(seconds=30))] == ["2", "3"]
    assert [r.call_id for r in store.audit.query(limit=1)] == ["1"]
    assert store.audit.list("q1")[0].at == T0
    store.sessions.delete("q1")
    assert [r.call_id for r in store.audit.query()] == ["2"]


def test_follow_survives_idle_slices_and_stops(store: RedisStore) -> None:
    """A parked follower wakes for a new append after idle slices and ends cleanly on stop."""
    stop = threading.Event()
    got: list[str] = []
    done = threading.Event()

    def follow() -> None:
        for record in store.events.read_after("idle", follow=True, stop=stop):
            assert record.event is not None
            got.append(record.event.text)
            if len(got) == 2:
                stop.set()
        done.set()

    thread = threading.Thread(target=follow)
    thread.start()
    store.events.append("idle", Event(type="note", text="one"))
    store.events.append("idle", Event(type="note", text="two"))
    assert done.wait(30)
    thread.join(30)
    assert got == ["one", "two"]


@pytest.fixture
def tiny_server() -> Iterator[RedisServer]:
    """A private server with a small maxmemory and no eviction."""
    server = start_server("--maxmemory", "4mb", "--maxmemory-policy", "noeviction")
    try:
        yield server
    finally:
        server.stop()


def test_out_of_memory_create_leaves_nothing(tiny_server: RedisServer) -> None:
    """At maxmemory, create and append raise StoreFull and write nothing; delete still runs."""
    with RedisStore(tiny_server.url) as opened:
        opened.sessions.save(Session.new("old"))
        opened.events.append("old", Event(type="note"))
        r = raw(opened)
        with pytest.raises(redis.exceptions.OutOfMemoryError):
            for _ in range(100):  # grow a foreign key until the server refuses writes
                r.append("filler", b"x" * 2**18)
        keys_before = sorted(r.keys("*"))
        seq_before = r.get("sqlstore:write-seq")
        with pytest.raises(StoreFull) as caught:
            opened.sessions.create(Session.new("late"))
        assert "maxmemory" in caught.value.hint
        with pytest.raises(StoreFull):
            opened.events.append("late", Event(type="note"))
        with pytest.raises(StoreFull):
            opened.sessions.save(Session.new("old"))
        assert sorted(r.keys("*")) == keys_before
        assert r.get("sqlstore:write-seq") == seq_before
        with pytest.raises(SessionNotFound):
            opened.sessions.load("late")
        opened.sessions.delete("old")  # deleting is allowed at maxmemory
        assert opened.sessions.list() == []
        assert list(opened.events.read("old")) == []
        r.delete("filler")
        opened.sessions.create(Session.new("late"))
        with pytest.raises(SessionAlreadyExists):
            opened.sessions.create(Session.new("late"))
        assert [s.id for s in opened.sessions.list()] == ["late"]
