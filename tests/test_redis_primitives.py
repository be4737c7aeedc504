"""Units of work on Redis at ``maxmemory``: refused whole, before the script starts."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from redis_server import RedisServer, start_server

from sqlstore import Event, Session, ToolCallRecord
from sqlstore.errors import StoreFull
from sqlstore.redis import RedisStore


@pytest.fixture
def tiny_server() -> Iterator[RedisServer]:
    """A private server with a small maxmemory and no eviction."""
    server = start_server("--maxmemory", "4mb", "--maxmemory-policy", "noeviction")
    try:
        yield server
    finally:
        server.stop()


def test_out_of_memory_units_write_nothing_and_reads_go_on(tiny_server: RedisServer) -> None:
    """At maxmemory append_events, apply and a conditional save raise StoreFull, change nothing."""
    with RedisStore(tiny_server.url) as store:
        version = store.sessions.save(Session.new("s", title="kept"))
        cursors = store.events.append_events("s", [Event("a"), Event("b")])
        client: redis.Redis = store.conn.client
        with pytest.raises(redis.exceptions.OutOfMemoryError):
            for _ in range(100):  # grow a foreign key until the server refuses writes
                client.append("filler", b"x" * 2**18)
        keys_before = sorted(client.keys("*"))
        stream_before = client.xlen("sqlstore:events:s")
        with pytest.raises(StoreFull):
            store.events.append_events("s", [Event("late")] * 3)
        with pytest.raises(StoreFull):
            store.apply(
                "s",
                snapshot=Session.new("s", title="lost"),
                events=[Event("late")],
                audit=[ToolCallRecord("s", call_id="lost")],
                expected_version=version,
            )
        with pytest.raises(StoreFull):
            store.sessions.save(Session.new("s", title="lost"), expected_version=version)
        assert sorted(client.keys("*")) == keys_before
        assert client.xlen("sqlstore:events:s") == stream_before
        # Reads are no-writes scripts or plain commands: they still run at maxmemory.
        assert [r.cursor for r in store.events.read_tail("s", 5)] == cursors
        assert store.events.read_before("s", cursors[-1], limit=5)[0].cursor == cursors[0]
        session, got = store.sessions.load_versioned("s")
        assert (session.title, got) == ("kept", version + 1)  # the batch was one step
        client.delete("filler")
        applied = store.apply("s", events=[Event("after")], expected_version=got)
        assert applied.version > got and len(applied.cursors) == 1
