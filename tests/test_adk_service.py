"""``SqlstoreSessionService`` keeps ADK's semantics: the same scenarios as ADK's SQLite service.

Each parity scenario runs against ADK's own ``SqliteSessionService`` (the
reference) and against ours on every backend; the observable results must be
equal, and each scenario also checks the expected answer itself.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from google.adk.errors import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.sessions.base_session_service import BaseSessionService, GetSessionConfig
from google.adk.sessions.sqlite_session_service import SqliteSessionService
from google.genai import types

import sqlstore
from sqlstore.integrations.adk import SqlstoreSessionService
from sqlstore.scopes import InvalidState
from tests.integration_support import BACKENDS, backend_store
from tests.redis_server import redis_server, redis_url  # noqa: F401 - fixtures

APP, USER = "calc", "alice"


@pytest.fixture(params=BACKENDS)
def ours(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlstoreSessionService]:
    """Our service on a store of the given backend."""
    store = backend_store(request, tmp_path)
    yield SqlstoreSessionService(store)
    store.close()


@pytest.fixture
def reference(tmp_path: Path) -> SqliteSessionService:
    """ADK's own SQLite session service on a file."""
    return SqliteSessionService(str(tmp_path / "reference.db"))


def text_event(author: str, text: str, ts: float, **kwargs: Any) -> Event:
    role = "user" if author == "user" else "model"
    return Event(
        author=author,
        invocation_id="inv-1",
        timestamp=ts,
        content=types.Content(role=role, parts=[types.Part(text=text)]),
        **kwargs,
    )


def both(
    scenario: Callable[[BaseSessionService], Awaitable[Any]],
    reference: BaseSessionService,
    ours: BaseSessionService,
) -> Any:
    expected = asyncio.run(scenario(reference))
    got = asyncio.run(scenario(ours))
    assert got == expected
    return got


async def lifecycle(svc: BaseSessionService) -> Any:
    out: list[Any] = []
    made = await svc.create_session(
        app_name=APP,
        user_id=USER,
        session_id="s1",
        state={"k": 1, "app:theme": "dark", "user:lang": "pt", "temp:scratch": True},
    )
    out.append((made.id, made.state, made.events))
    with pytest.raises(AlreadyExistsError):
        await svc.create_session(app_name=APP, user_id=USER, session_id="s1")
    other = await svc.create_session(app_name=APP, user_id="bob", session_id="s2")
    out.append(other.state)  # app: state is shared; bob has no user: state
    generated = await svc.create_session(app_name=APP, user_id=USER)
    out.append(len(generated.id) > 0 and generated.id != "s1")
    got = await svc.get_session(app_name=APP, user_id=USER, session_id="s1")
    assert got is not None
    out.append((got.state, got.events))
    out.append(await svc.get_session(app_name=APP, user_id=USER, session_id="nope"))
    out.append(await svc.get_session(app_name="other", user_id=USER, session_id="s1"))
    listed = await svc.list_sessions(app_name=APP, user_id=USER)
    named = {"s1", "s2"}
    out.append(
        sorted(
            (s.id if s.id in named else "<generated>", s.user_id, s.events == [])
            for s in listed.sessions
        )
    )
    every = await svc.list_sessions(app_name=APP)
    out.append(sorted((s.id, s.user_id) for s in every.sessions if s.id in ("s1", "s2")))
    out.append(await svc.get_user_state(app_name=APP, user_id=USER))
    await svc.delete_session(app_name=APP, user_id=USER, session_id="s1")
    await svc.delete_session(app_name=APP, user_id=USER, session_id="s1")  # idempotent
    out.append(await svc.get_session(app_name=APP, user_id=USER, session_id="s1"))
    again = await svc.create_session(app_name=APP, user_id=USER, session_id="s1")
    out.append(again.state)  # app: and user: state survived the deletion
    return out


def test_create_get_list_delete(reference: BaseSessionService, ours: BaseSessionService) -> None:
    """Sessions are created (once), read, listed per user or app, and deleted like ADK's."""
    got = both(lifecycle, reference, ours)
    assert got[0] == ("s1", {"k": 1, "app:theme": "dark", "user:lang": "pt"}, [])
    assert got[1] == {"app:theme": "dark"}
    assert got[4] is None and got[5] is None
    assert got[6] == [("<generated>", USER, True), ("s1", USER, True)]
    assert got[7] == [("s1", USER), ("s2", "bob")]
    assert got[8] == {"lang": "pt"}
    assert got[9] is None
    assert got[10] == {"app:theme": "dark", "user:lang": "pt"}


async def appending(svc: BaseSessionService) -> Any:
    session = await svc.create_session(app_name=APP, user_id=USER, session_id="a1")
    first = text_event("user", "hi", 100.0)
    await svc.append_event(session, first)
    partial = text_event("calc", "typing…", 101.0, partial=True)
    assert await svc.append_event(session, partial) is partial
    delta = text_event(
        "calc",
        "done",
        102.0,
        actions=EventActions(
            state_delta={
                "n": 1,
                "app:count": 7,
                "user:seen": ["x"],
                "temp:t": "gone",
                "none": None,
            }
        ),
    )
    await svc.append_event(session, delta)
    in_memory = (session.state, len(session.events), session.last_update_time)
    got = await svc.get_session(app_name=APP, user_id=USER, session_id="a1")
    assert got is not None
    stored = (
        got.state,
        [
            (e.author, e.content.parts[0].text if e.content and e.content.parts else None)
            for e in got.events
        ],
        got.last_update_time,
        [e.actions.state_delta for e in got.events],
    )
    other = await svc.create_session(app_name=APP, user_id="bob", session_id="b1")
    return in_memory, stored, other.state


def test_append_event_semantics(reference: BaseSessionService, ours: BaseSessionService) -> None:
    """Partial events are not stored, temp: never persists, app:/user: state is shared."""
    in_memory, stored, bob = both(appending, reference, ours)
    assert in_memory == (
        {"n": 1, "app:count": 7, "user:seen": ["x"], "temp:t": "gone", "none": None},
        2,
        102.0,
    )
    assert stored[0] == {"n": 1, "app:count": 7, "user:seen": ["x"], "none": None}
    assert stored[1] == [("user", "hi"), ("calc", "done")]
    assert stored[2] == 102.0
    assert stored[3][1] == {"n": 1, "app:count": 7, "user:seen": ["x"], "none": None}
    assert bob == {"app:count": 7}


async def recent(svc: BaseSessionService) -> Any:
    session = await svc.create_session(app_name=APP, user_id=USER, session_id="r1")
    for i in range(10):
        await svc.append_event(session, text_event("user" if i % 2 else "calc", f"m{i}", 200.0 + i))
    out = []
    for config in (
        GetSessionConfig(num_recent_events=3),
        GetSessionConfig(num_recent_events=0),
        GetSessionConfig(num_recent_events=50),
        GetSessionConfig(after_timestamp=207.0),
        GetSessionConfig(after_timestamp=203.0, num_recent_events=2),
        None,
    ):
        got = await svc.get_session(app_name=APP, user_id=USER, session_id="r1", config=config)
        assert got is not None
        out.append([e.content.parts[0].text for e in got.events if e.content and e.content.parts])
    return out


def test_get_session_config(reference: BaseSessionService, ours: BaseSessionService) -> None:
    """num_recent_events and after_timestamp select the same events as ADK, oldest first."""
    got = both(recent, reference, ours)
    every = [f"m{i}" for i in range(10)]
    assert got == [every[-3:], [], every, every[7:], every[-2:], every]


async def stale(svc: BaseSessionService) -> Any:
    await svc.create_session(app_name=APP, user_id=USER, session_id="st")
    one = await svc.get_session(app_name=APP, user_id=USER, session_id="st")
    two = await svc.get_session(app_name=APP, user_id=USER, session_id="st")
    assert one is not None and two is not None
    now = time.time()  # ADK's reference compares real update times
    await svc.append_event(one, text_event("user", "first", now + 1))
    with pytest.raises(StaleSessionError):
        await svc.append_event(two, text_event("user", "stale", now + 2))
    await svc.append_event(one, text_event("user", "second", now + 3))
    got = await svc.get_session(app_name=APP, user_id=USER, session_id="st")
    assert got is not None
    gone = await svc.create_session(app_name=APP, user_id=USER, session_id="gone")
    await svc.delete_session(app_name=APP, user_id=USER, session_id="gone")
    with pytest.raises(SessionNotFoundError):
        await svc.append_event(gone, text_event("user", "late", now + 4))
    return [e.content.parts[0].text for e in got.events if e.content and e.content.parts]


def test_stale_session_is_refused(reference: BaseSessionService, ours: BaseSessionService) -> None:
    """A writer holding a superseded session gets StaleSessionError; nothing is merged."""
    assert both(stale, reference, ours) == ["first", "second"]


def test_stale_across_threads(tmp_path: Path) -> None:
    """Eight threads appending to copies of one loaded session: one wins, seven are stale."""
    service = SqlstoreSessionService(tmp_path / "t.db")
    asyncio.run(service.create_session(app_name=APP, user_id=USER, session_id="race"))
    loaded = [
        asyncio.run(service.get_session(app_name=APP, user_id=USER, session_id="race"))
        for _ in range(8)
    ]
    outcomes: list[str] = []
    start = threading.Barrier(8)

    def write(index: int) -> None:
        start.wait()
        try:
            asyncio.run(service.append_event(loaded[index], text_event("user", f"w{index}", 400.0)))  # type: ignore[arg-type]
            outcomes.append("ok")
        except StaleSessionError:
            outcomes.append("stale")

    threads = [threading.Thread(target=write, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["ok"] + ["stale"] * 7
    got = asyncio.run(service.get_session(app_name=APP, user_id=USER, session_id="race"))
    assert got is not None and len(got.events) == 1
    asyncio.run(service.close())


def test_bad_state_stores_nothing(tmp_path: Path) -> None:
    """A state value that cannot be JSON is a clear error, and nothing of the event is stored."""
    service = SqlstoreSessionService(tmp_path / "b.db")
    session = asyncio.run(service.create_session(app_name=APP, user_id=USER, session_id="bad"))
    bad = text_event("calc", "x", 500.0, actions=EventActions(state_delta={"app:f": float("nan")}))
    with pytest.raises(InvalidState):
        asyncio.run(service.append_event(session, bad))
    got = asyncio.run(service.get_session(app_name=APP, user_id=USER, session_id="bad"))
    assert got is not None and got.events == [] and got.state == {}
    asyncio.run(service.append_event(got, text_event("user", "fine", 501.0)))  # not stale
    with pytest.raises(InvalidState):
        asyncio.run(service.create_session(app_name=APP, user_id=USER, state={"k": float("inf")}))
    odd = text_event("calc", "y", 502.0, custom_metadata={"handle": object()})
    with pytest.raises(InvalidState, match="not JSON"):
        asyncio.run(service.append_event(got, odd))
    final = asyncio.run(service.get_session(app_name=APP, user_id=USER, session_id="bad"))
    assert final is not None and [e.author for e in final.events] == ["user"]
    asyncio.run(service.close())


def test_store_without_scopes_is_refused(tmp_path: Path) -> None:
    """A store object that keeps no scoped state is refused with a clear error."""

    class NoScopes:
        def __init__(self, inner: Any) -> None:
            self.sessions, self.events = inner.sessions, inner.events

    with (
        sqlstore.open(str(tmp_path / "n.db")) as inner,
        pytest.raises(sqlstore.errors.StoreError, match="scoped state"),
    ):
        SqlstoreSessionService(NoScopes(inner))
