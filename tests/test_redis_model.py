"""Model test: the same random operations on MemoryStore and RedisStore give the same answers."""

from __future__ import annotations

import base64
import json
import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from freezegun import freeze_time
from redis_server import redis_server, redis_url  # noqa: F401  (fixtures)

from sqlstore import Event, MemoryStore, Session, SessionMeta, ToolCallRecord
from sqlstore.conformance.fixtures import ALICE, BOB
from sqlstore.errors import LeaseHeld, SessionAlreadyExists
from sqlstore.ports import Store
from sqlstore.redis import RedisStore

T0 = datetime(2026, 4, 1, tzinfo=UTC)
IDS = ["a", "b", "ab", "é", "x/y", "🧪", "P" * 40]
OWNERS = [None, ALICE, BOB]
OPERATIONS = 150


@pytest.fixture
def redis_store(redis_url: str) -> Iterator[RedisStore]:  # noqa: F811
    """A RedisStore on a private prefix of the shared test server."""
    with RedisStore(redis_url) as opened:
        yield opened


def position(cursor: str) -> str:
    """Return the position field of a cur/1 cursor (generations differ between stores)."""
    doc = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    return str(doc["p"])


def row(meta: SessionMeta) -> tuple[object, ...]:
    """Return the comparable part of a row (versions are numbered differently per backend)."""
    return (
        meta.id,
        meta.modified_at,
        meta.state,
        meta.kind,
        meta.owner,
        meta.title,
        meta.turns,
        meta.estimated_bytes,
    )


def walk_pages(store: Store, owner: object) -> list[str]:
    """Return every id, page by page (3 rows each), for one owner scope or all."""
    seen: list[str] = []
    cursor: str | None = None
    while True:
        if owner == "all":
            page = store.sessions.page(3, cursor)
        else:
            page = store.sessions.page(3, cursor, owner=owner, enforce_owner=True)  # type: ignore[arg-type]
        seen.extend(m.id for m in page.sessions)
        cursor = page.next_cursor
        if cursor is None:
            return seen


def apply(store: Store, op: tuple[object, ...], stale: dict[str, SessionMeta]) -> object:
    """Run one operation on ``store`` and return a comparable outcome."""
    kind, sid = op[0], str(op[1])
    if kind == "save":
        store.sessions.save(Session.new(sid, owner=op[2], title=str(op[3])))  # type: ignore[arg-type]
        return None
    if kind == "create":
        try:
            store.sessions.create(Session.new(sid, owner=op[2], title=str(op[3])))  # type: ignore[arg-type]
        except SessionAlreadyExists:
            return "exists"
        return "created"
    if kind == "delete":
        store.sessions.delete(sid)
        return None
    if kind == "remember":
        try:
            stale[sid] = store.sessions.meta(sid)
        except LookupError:
            return "missing"
        return "kept"
    if kind == "delete_if_unchanged":
        if sid not in stale:
            return "nothing"
        return store.sessions.delete_if_unchanged(stale.pop(sid))
    if kind == "append":
        return position(store.events.append_event(sid, Event(type="note", text=str(op[2]))))
    if kind == "gap":
        return position(store.events.append_gap(sid, str(op[2])))
    if kind == "audit":
        store.audit.record(ToolCallRecord(session_id=sid, call_id=str(op[2]), tool="Bash"))
        return None
    if kind == "lease":
        try:
            return store.leases.acquire(sid, str(op[2]), timedelta(seconds=int(str(op[3])))).token
        except LeaseHeld:
            return "held"
    raise AssertionError(kind)


def random_ops(seed: int) -> list[tuple[object, ...]]:
    """Return a reproducible list of operations over a few ids and owners."""
    rng = random.Random(seed)
    kinds = ["save", "save", "create", "delete", "remember", "delete_if_unchanged", "append",
             "append", "gap", "audit", "lease", "tick"]  # fmt: skip
    ops: list[tuple[object, ...]] = []
    for index in range(OPERATIONS):
        kind = rng.choice(kinds)
        sid = rng.choice(IDS)
        if kind in ("save", "create"):
            ops.append((kind, sid, rng.choice(OWNERS), f"t{index}"))
        elif kind in ("append", "gap", "audit"):
            ops.append((kind, sid, f"r{index}"))
        elif kind == "lease":
            ops.append((kind, sid, rng.choice(["w1", "w2"]), rng.choice([1, 30])))
        elif kind == "tick":
            ops.append((kind, "", rng.choice([0, 1, 2])))
        else:
            ops.append((kind, sid))
        if kind == "remember" and rng.random() < 0.5:
            ops.append(("delete_if_unchanged", sid))  # fresh row: usually deletes
    return ops


def snapshot_of(store: Store) -> dict[str, object]:
    """Return everything observable about a store, in a comparable form."""
    return {
        "list": sorted((s.id, s.modified_at) for s in store.sessions.list()),
        "iter_meta": [row(m) for m in store.sessions.iter_meta()],
        "pages": {str(o): walk_pages(store, o) for o in ("all", ALICE, BOB, None)},
        "events": {
            sid: [(r.kind, r.gap_reason, position(r.cursor)) for r in store.events.read_after(sid)]
            for sid in IDS
        },
        "audit": {sid: [r.call_id for r in store.audit.list(sid)] for sid in IDS},
        "query": [r.call_id for r in store.audit.query()],
        "held": store.leases.held(),
    }


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_redis_matches_memory(redis_store: RedisStore, seed: int) -> None:
    """After every operation both stores answer alike; at the end every view is identical."""
    memory = MemoryStore()
    stale: dict[int, dict[str, SessionMeta]] = {0: {}, 1: {}}
    with freeze_time(T0) as frozen:
        for op in random_ops(seed):
            if op[0] == "tick":
                frozen.tick(timedelta(seconds=int(str(op[2]))))
                continue
            want = apply(memory, op, stale[0])
            got = apply(redis_store, op, stale[1])
            assert got == want, op
        assert snapshot_of(redis_store) == snapshot_of(memory)
