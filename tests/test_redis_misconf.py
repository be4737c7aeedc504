"""A Redis server that cannot persist (MISCONF) gives StoreIOError with a hint, never a raw
redis-py error, on every write path and in the CLI."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from redis_server import RedisServer, start_server

from cli.main import cli
from sqlstore import Event, Session, ToolCallRecord
from sqlstore.errors import StoreError, StoreIOError
from sqlstore.redis import RedisStore

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def break_persistence(server: RedisServer) -> None:
    """Make the server's background saves fail (its directory is removed), so it says MISCONF."""
    with server.client() as client:
        client.set("seed", "1")
        shutil.rmtree(server.directory)
        client.bgsave()
        deadline = time.monotonic() + 30
        while client.info("persistence")["rdb_last_bgsave_status"] != "err":
            assert time.monotonic() < deadline, "the background save did not fail"
            time.sleep(0.05)


@pytest.fixture
def server() -> Iterator[RedisServer]:
    """A private server with a save point, so a failed save stops writes."""
    started = start_server("--save", "3600 1")
    try:
        yield started
    finally:
        with started.client() as client:
            client.config_set("save", "")  # else a shutdown tries to save, fails, and waits
        started.stop()


def test_open_raises_store_io_error_with_hint(server: RedisServer) -> None:
    """Opening a store on a server that cannot persist raises StoreIOError with a hint."""
    break_persistence(server)
    with pytest.raises(StoreIOError) as caught:
        RedisStore(server.url)
    assert "MISCONF" in str(caught.value)
    assert "persistence" in caught.value.hint


def test_writes_raise_store_io_error_with_hint(server: RedisServer) -> None:
    """create, save, append, audit and delete on an open store each raise StoreIOError."""
    with RedisStore(server.url) as store:
        store.sessions.save(Session.new("a"))
        break_persistence(server)
        attempts = [
            lambda: store.sessions.create(Session.new("a")),
            lambda: store.sessions.save(Session.new("a")),
            lambda: store.events.append_event("a", Event(type="note")),
            lambda: store.audit.record(ToolCallRecord(session_id="a", call_id="c", tool="t")),
            lambda: store.sessions.delete("a"),
        ]
        for attempt in attempts:
            with pytest.raises(StoreIOError) as caught:
                attempt()
            assert "MISCONF" in str(caught.value)
            assert "persistence" in caught.value.hint
            assert isinstance(caught.value, StoreError)


def test_cli_migrate_to_misconf_redis_prints_error(server: RedisServer) -> None:
    """`migrate --to redis://` onto a MISCONF server exits 1 with Error/Hint, no traceback."""
    break_persistence(server)
    result = CliRunner().invoke(cli, ["migrate", str(EXAMPLES / "runlogs"), "--to", server.url])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "MISCONF" in result.output or "cannot persist" in result.output
