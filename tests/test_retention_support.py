"""Shared helpers and fixtures for the retention tests (this module holds no tests itself).

Test modules define a ``store`` fixture over :data:`BACKENDS` with :func:`opened_store`,
so each test runs against MemoryStore and against SQLiteStore on a real file;
sessions are written at chosen times with freezegun.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

from freezegun import freeze_time

from sqlstore import Ask, Kind, MemoryStore, Relationship, Session, SessionMeta, SQLiteStore, State
from sqlstore.ports import Store

T0 = datetime(2026, 1, 1, tzinfo=UTC)
"""The reference "now" of the retention tests."""

BACKENDS = ["memory", "sqlite"]


def relationship_for(kind: Kind) -> Relationship:
    """Return a valid relationship for ``kind``."""
    if kind is Kind.SCHEDULED:
        return Relationship(schedule_name="nightly")
    if kind is Kind.SUBAGENT:
        return Relationship(parent_session_id="p", call_id="c")
    if kind is Kind.PARALLEL_BRANCH:
        return Relationship(parent_session_id="p", call_id="c", branch_index=0)
    if kind is Kind.TEAM_MEMBER:
        return Relationship(team_id="t", member_name="m")
    return Relationship()


def set_state(session: Session, state: State) -> None:
    """Drive a new (idle) session into ``state`` through legal transitions."""
    if state is State.IDLE:
        return
    if state is State.COMPLETED:
        session.complete()
    elif state is State.FAILED:
        session.fail("boom")
    elif state is State.CANCELLED:
        session.cancel()
    elif state is State.RUNNING:
        session.begin_turn()
    elif state is State.AWAITING:
        session.begin_turn()
        session.pause_for_approval(Ask(ask_id="a1", tool="bash", args="{}", reason="why"))


def put(
    store: Store,
    sid: str,
    at: datetime,
    *,
    kind: Kind = Kind.SUBAGENT,
    state: State = State.COMPLETED,
) -> SessionMeta:
    """Save a session of ``kind`` in ``state`` with modification time ``at``; return its row."""
    with freeze_time(at):
        put_now(store, sid, kind=kind, state=state)
    return store.sessions.meta(sid)


def put_now(
    store: Store, sid: str, *, kind: Kind = Kind.SUBAGENT, state: State = State.COMPLETED
) -> None:
    """Save a session of ``kind`` in ``state`` at the current (possibly frozen) time."""
    session = Session.new(sid, kind=kind, relationship=relationship_for(kind))
    set_state(session, state)
    store.sessions.save(session)


def meta(
    sid: str,
    age: timedelta,
    *,
    kind: Kind = Kind.SUBAGENT,
    state: State = State.COMPLETED,
    now: datetime = T0,
) -> SessionMeta:
    """Return a synthetic inventory row last modified ``age`` before ``now``."""
    return SessionMeta(
        id=sid,
        modified_at=now - age,
        version=1,
        state=state,
        kind=kind,
        relationship=relationship_for(kind),
        owner=None,
        created_at=now - age,
        title="",
        model_id="",
        turns=0,
        estimated_bytes=100,
    )


def open_store(backend: str, path: Path) -> Store:
    """Open a fresh store of ``backend`` ("memory" or "sqlite" at ``path``)."""
    if backend == "memory":
        return MemoryStore()
    return SQLiteStore(path)


@contextmanager
def opened_store(backend: str, path: Path) -> Iterator[Store]:
    """Open a fresh store of ``backend`` and close it afterwards."""
    opened = open_store(backend, path)
    try:
        yield opened
    finally:
        opened.close()
