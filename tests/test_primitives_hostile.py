"""Hostile input to the primitives of #15 on memory, SQLite and Redis: the same answer everywhere.

Each test runs on the three backends (real SQLite file, real redis-server) and
checks the promise of :mod:`sqlstore.changes` and :mod:`sqlstore.backward`: bad
input fails the same way on every backend, before anything is written.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from redis_server import redis_server, redis_url  # noqa: F401  (fixtures)

import sqlstore
from sqlstore import Event, MemoryStore, Session, SQLiteStore, ToolCallRecord
from sqlstore.ports import Store
from sqlstore.redis import RedisStore

BACKENDS = ["memory", "sqlite", "redis"]

AnyStore = MemoryStore | SQLiteStore | RedisStore
"""What ``sqlstore.open`` returns (every backend also has ``scopes``)."""


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[AnyStore]:
    """One store per backend: memory, a SQLite file, a private prefix on a redis-server."""
    if request.param == "memory":
        target = "memory:"
    elif request.param == "sqlite":
        target = str(tmp_path / "hostile.db")
    else:
        target = request.getfixturevalue("redis_url")
    opened = sqlstore.open(target)
    try:
        yield opened
    finally:
        opened.close()


BAD_AUDIT_FIELDS: list[dict[str, Any]] = [
    {"args": {"path": "/tmp"}},
    {"result": None},
    {"call_id": 7},
    {"tool": "read\ud800"},
    {"is_error": "no"},
    {"at": "2026-01-01T00:00:00Z"},
    {"took_us": 2**64},
    {"queued_us": 1.5},
]


@pytest.mark.parametrize("fields", BAD_AUDIT_FIELDS, ids=lambda f: next(iter(f)))
def test_apply_refuses_a_malformed_audit_row_before_writing(
    store: Store, fields: dict[str, Any]
) -> None:
    """An audit row with a field of the wrong type fails the whole unit with nothing stored."""
    version = store.sessions.save(Session.new("bad-audit", title="before"))
    with pytest.raises((TypeError, ValueError)) as caught:
        store.apply(
            "bad-audit",
            snapshot=Session.new("bad-audit", title="after"),
            events=[Event("note", text="lost")],
            audit=[
                ToolCallRecord("bad-audit", call_id="fine"),
                ToolCallRecord("bad-audit", **fields),
            ],
        )
    assert "audit[1]" in str(caught.value)
    assert list(store.events.read("bad-audit")) == []
    assert store.audit.list("bad-audit") == []
    assert store.sessions.load_versioned("bad-audit")[1] == version
    assert store.sessions.load("bad-audit").title == "before"


@pytest.mark.parametrize("fields", BAD_AUDIT_FIELDS, ids=lambda f: next(iter(f)))
def test_audit_record_refuses_a_malformed_row(store: Store, fields: dict[str, Any]) -> None:
    """``audit.record`` refuses the same malformed rows on every backend and stores nothing."""
    with pytest.raises((TypeError, ValueError)):
        store.audit.record(ToolCallRecord("bad-record", **fields))
    assert store.audit.list("bad-record") == []


@pytest.mark.parametrize("limit", [2**63, 2**64, 10**30])
def test_tail_limit_above_64_bits_reads_the_whole_short_log(store: Store, limit: int) -> None:
    """A limit beyond 64 bits reads every record (as memory does), not a driver error."""
    cursors = store.events.append_events("huge-limit", [Event("e", seq=i) for i in range(4)])
    store.events.append_gap("huge-limit", "lost")
    tail = store.events.read_tail("huge-limit", limit)
    assert [r.cursor for r in tail[:4]] == cursors and tail[4].kind == "gap"
    before = store.events.read_before("huge-limit", cursors[-1], limit=limit)
    assert [r.cursor for r in before] == cursors[:3]


def test_unconditional_apply_of_scoped_state_only(store: AnyStore) -> None:
    """``apply`` with scope deltas alone merges them and leaves the session's version as it was."""
    version = store.sessions.save(Session.new("scoped-only"))
    applied = store.apply("scoped-only", scopes={"app:demo": {"theme": "dark"}})
    assert applied.version == version and applied.cursors == []
    assert store.scopes.get("app:demo") == {"theme": "dark"}
    fresh = store.apply("no-session", scopes={"app:demo": {"lang": "en"}})
    assert fresh.version == 0
    assert store.scopes.get("app:demo") == {"theme": "dark", "lang": "en"}


@pytest.mark.parametrize("limit", [True, 2.5, "3", None])
def test_read_after_refuses_a_limit_that_is_not_an_int(store: Store, limit: Any) -> None:
    """``read_after`` refuses a non-int limit with one TypeError everywhere, as read_tail does."""
    store.events.append_events("bad-limit", [Event("e"), Event("f")])
    with pytest.raises(TypeError, match="limit must be an int"):
        store.events.read_after("bad-limit", limit=limit)
    assert len(list(store.events.read_after("bad-limit", limit=1))) == 1
