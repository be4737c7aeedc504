"""Hostile values at the library edge (issue #20 item 17): over-long lease TTLs, deeply
nested JSON, and digits of other scripts are refused with the documented errors, on every
backend, and nothing is stored."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from redis_server import redis_server, redis_url  # noqa: F401  (fixtures)

from cli.main import cli
from retention import PolicyError, parse_duration
from sqlstore import Event, MemoryStore, Session, SQLiteStore
from sqlstore.clock import MAX_LEASE_TTL
from sqlstore.errors import InvalidEvent, SnapshotError
from sqlstore.ports import Store


@pytest.fixture(params=["memory", "sqlite", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """One store of each backend."""
    if request.param == "memory":
        opened: Any = MemoryStore()
    elif request.param == "sqlite":
        opened = SQLiteStore(tmp_path / "s.db")
    else:
        from sqlstore.redis import RedisStore

        opened = RedisStore(request.getfixturevalue("redis_url"))
    with opened:
        yield opened


def nested(depth: int) -> Any:
    """Return a list nested ``depth`` levels deep."""
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


def test_lease_ttl_beyond_the_limit_is_value_error(store: Store) -> None:
    """A TTL past MAX_LEASE_TTL raises ValueError on every backend; the limit itself works."""
    with pytest.raises(ValueError, match="too long"):
        store.leases.acquire("s", "me", timedelta(days=365 * 300))
    assert store.leases.held() == set()
    lease = store.leases.acquire("s", "me", MAX_LEASE_TTL)
    with pytest.raises(ValueError, match="too long"):
        store.leases.renew(lease, timedelta.max)
    assert store.leases.held() == {"s"}


def test_deeply_nested_event_is_invalid_event(store: Store) -> None:
    """An event whose data nests past the JSON encoder's depth raises InvalidEvent; no record."""
    store.events.append_event("s", Event(type="note"))
    with pytest.raises(InvalidEvent, match="nests too deeply"):
        store.events.append_event("s", Event(type="deep", data={"x": nested(100_000)}))
    assert [r.event.type for r in store.events.read_after("s") if r.event] == ["note"]


def test_deeply_nested_snapshot_is_snapshot_error(store: Store) -> None:
    """A session whose extra nests too deeply raises SnapshotError on save; nothing stored."""
    session = Session.new("deep")
    session.extra["x"] = nested(100_000)
    with pytest.raises(SnapshotError, match="nests too deeply"):
        store.sessions.save(session)
    assert store.sessions.list() == []


@pytest.mark.parametrize("text", ["٣d", "\uff13d", "1d٣h", "²d"])
def test_durations_take_ascii_digits_only(text: str) -> None:
    """Digits of other scripts are not digits of a duration: PolicyError with a hint."""
    with pytest.raises(PolicyError) as caught:
        parse_duration(text)
    assert "30d" in caught.value.hint


def test_cli_prune_refuses_non_ascii_duration(tmp_path: Path) -> None:
    """`prune --older-than ٣d` is a usage error, not a three-day prune."""
    db = tmp_path / "s.db"
    with SQLiteStore(db) as opened:
        opened.sessions.save(Session.new("kept"))
    result = CliRunner().invoke(cli, ["--db", str(db), "prune", "--older-than", "٣d", "--yes"])
    assert result.exit_code == 2, result.output
    assert "not a duration" in result.output
    with SQLiteStore(db) as opened:
        assert [s.id for s in opened.sessions.list()] == ["kept"]
