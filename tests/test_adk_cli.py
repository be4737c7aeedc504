"""ADK sessions through the CLI, retention and leases; the example; bounded tail reads."""

from __future__ import annotations

import asyncio
import json
import subprocess
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from freezegun import freeze_time
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.sessions.base_session_service import GetSessionConfig
from google.genai import types

import retention
import sqlstore
from cli.main import cli
from sqlstore.integrations.adk import SqlstoreSessionService, session_service_factory
from sqlstore.integrations.adk_events import session_key
from tests.integration_support import run_example
from tests.test_cli_process import TIMEOUT_S, console_script, env_without_db
from tests.test_openai_agents_store import CountingStore

APP = "calc"


def run(*args: str) -> Result:
    """Invoke the CLI in-process."""
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def event(author: str, *parts: types.Part, **kwargs: Any) -> Event:
    role = "user" if author == "user" else "model"
    return Event(
        author=author,
        invocation_id="inv",
        content=types.Content(role=role, parts=list(parts)),
        **kwargs,
    )


def store_conversation(db: Path, user: str = "alice", sid: str = "chat") -> None:
    service = SqlstoreSessionService(db)

    async def go() -> None:
        session = await service.create_session(
            app_name=APP, user_id=user, session_id=sid, state={"app:v": 1, "user:u": 2}
        )
        await service.append_event(session, event("user", types.Part(text="add 2 3\x1b[2J")))
        call = types.FunctionCall(id="c1", name="add", args={"a": 2, "b": 3})
        await service.append_event(session, event("calc", types.Part(function_call=call)))
        answer = types.FunctionResponse(id="c1", name="add", response={"result": 5})
        await service.append_event(session, event("calc", types.Part(function_response=answer)))
        bad = types.FunctionCall(id="c2", name="div", args={"a": 1, "b": 0})
        await service.append_event(session, event("calc", types.Part(function_call=bad)))
        failed = types.FunctionResponse(id="c2", name="div", response={"error": "division by zero"})
        await service.append_event(session, event("calc", types.Part(function_response=failed)))
        await service.append_event(session, event("calc", types.Part(text="It is 5.")))
        await service.close()

    asyncio.run(go())


def test_ls_show_audit(tmp_path: Path) -> None:
    """ls lists the session by owner with title and turns; show and audit render it escaped."""
    db = tmp_path / "a.db"
    store_conversation(db)
    key = session_key(APP, "alice", "chat")
    [row] = json.loads(
        run("--db", str(db), "--json", "ls", "--owner", "alice", "--issuer", f"adk:{APP}").output
    )
    assert row["id"] == key and row["title"] == "add 2 3\x1b[2J" and row["turns"] == 1
    out = run("--db", str(db), "show", key).output
    assert "\x1b" not in out
    for expected in (
        "[1] user",
        "add 2 3\\x1b[2J",
        "[2] calc",
        '-> add({"a": 2, "b": 3})  id=c1',
        '<- c1: {"result": 5}',
        '<- c2 ERROR: {"error": "division by zero"}',
        "It is 5.",
    ):
        assert expected in out, expected
    rows = json.loads(run("--db", str(db), "--json", "audit", key).output)
    assert [(r["tool"], r["is_error"], r["run_id"]) for r in rows] == [
        ("add", False, "inv"),
        ("div", True, "inv"),
    ]


def test_rm_and_retention_keep_scoped_state(tmp_path: Path) -> None:
    """rm and retention remove every row of a session, never app:/user: state or leased ones."""
    db = tmp_path / "a.db"
    with freeze_time("2026-01-01T00:00:00Z"):
        store_conversation(db, "alice", "old")
        store_conversation(db, "bob", "leased")
    store_conversation(db, "carol", "new")
    with sqlstore.open(str(db)) as store:
        store.leases.acquire(session_key(APP, "bob", "leased"), "worker", timedelta(hours=1))
        policy = retention.Policy(
            main=retention.Rule(max_age=timedelta(days=30)), acknowledge_main_deletion=True
        )
        assert retention.sweep(store, retention.plan(store, policy)).deleted == 1
        old = session_key(APP, "alice", "old")
        assert store.audit.list(old) == [] and list(store.events.read(old)) == []
    assert run("--db", str(db), "rm", session_key(APP, "carol", "new"), "--yes").exit_code == 0
    service = SqlstoreSessionService(db)
    assert asyncio.run(service.get_user_state(app_name=APP, user_id="alice")) == {"u": 2}
    fresh = asyncio.run(service.create_session(app_name=APP, user_id="alice", session_id="x"))
    assert fresh.state == {"app:v": 1, "user:u": 2}
    listed = asyncio.run(service.list_sessions(app_name=APP))
    assert sorted(s.id for s in listed.sessions) == ["leased", "x"]
    asyncio.run(service.close())


def test_recent_events_read_only_the_tail(tmp_path: Path) -> None:
    """get_session(num_recent_events=5) reads a bounded number of records of a 2,000-event log."""
    inner = sqlstore.open(str(tmp_path / "t.db"), durability="normal")
    store = CountingStore(inner)
    store.scopes = inner.scopes  # type: ignore[attr-defined]
    service = SqlstoreSessionService(store)

    async def go() -> Any:
        session = await service.create_session(app_name=APP, user_id="u", session_id="long")
        for i in range(2000):
            await service.append_event(session, event("user", types.Part(text=f"m{i}")))
        store.records_read = 0
        got = await service.get_session(
            app_name=APP,
            user_id="u",
            session_id="long",
            config=GetSessionConfig(num_recent_events=5),
        )
        return got

    got = asyncio.run(go())
    assert [e.content.parts[0].text for e in got.events] == [f"m{i}" for i in range(1995, 2000)]
    assert store.records_read <= 5
    inner.close()


def test_uri_factory(tmp_path: Path) -> None:
    """sqlstore: URIs name an absolute path, a relative path or another store target."""
    absolute = session_service_factory(f"sqlstore://{tmp_path / 'abs.db'}")
    asyncio.run(absolute.close())
    assert (tmp_path / "abs.db").exists()
    memory = session_service_factory("sqlstore:memory:")
    made = asyncio.run(memory.create_session(app_name=APP, user_id="u", session_id="m"))
    assert made.id == "m"
    for bad in ("sqlite:///x.db", "sqlstore://"):
        try:
            session_service_factory(bad)
        except ValueError as exc:
            assert "sqlstore" in str(exc)
        else:
            raise AssertionError(f"{bad!r} was accepted")


def test_uri_options_are_checked_and_applied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """sqlstore: URIs carry store options after '?'; a bad one is InvalidOption, nothing made."""
    from sqlstore.errors import InvalidOption

    monkeypatch.chdir(tmp_path)
    for bad in (f"sqlstore://{tmp_path / 'a.db'}?durability=bogus", "sqlstore:r.db?bogus=1"):
        with pytest.raises(InvalidOption):
            session_service_factory(bad)
    assert list(tmp_path.iterdir()) == []
    made = session_service_factory(f"sqlstore://{tmp_path / 'a.db'}?durability=normal")
    assert made._store.db.durability == "normal"  # type: ignore[attr-defined]
    asyncio.run(made.close())
    rel = session_service_factory("sqlstore:r.db?busy_timeout_ms=100")
    assert rel._store.db.busy_timeout_ms == 100  # type: ignore[attr-defined]
    asyncio.run(rel.close())
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(("-wal", "-shm"))) == [
        "a.db",
        "r.db",
    ]


def test_temp_state_is_never_stored(tmp_path: Path) -> None:
    """A temp: key reaches the in-memory session only; the stored event and state lack it."""
    db = tmp_path / "t.db"
    service = SqlstoreSessionService(db)
    session = asyncio.run(service.create_session(app_name=APP, user_id="u", session_id="t"))
    delta = EventActions(state_delta={"temp:secret": "s3cr3t", "kept": 1})
    asyncio.run(service.append_event(session, event("calc", types.Part(text="x"), actions=delta)))
    assert session.state["temp:secret"] == "s3cr3t"
    asyncio.run(service.close())
    stored = b"".join(path.read_bytes() for path in tmp_path.glob("t.db*"))
    assert b"s3cr3t" not in stored and b"kept" in stored


def test_example_runs(tmp_path: Path) -> None:
    """The example runs offline; the installed `sqlstore show` renders its session."""
    db = tmp_path / "ex.db"
    done = run_example("adk_session_service.py", str(db))
    assert "Forecast: sunny, 21 °C." in done.stdout and "{'units': 'metric'}" in done.stdout
    shown = subprocess.run(
        [console_script(), "--db", str(db), "show", "adk/weather/alice/trip"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env=env_without_db(),
    )
    assert shown.returncode == 0, shown.stderr
    assert '-> get_weather({"city": "Lisbon"})  id=call-1' in shown.stdout
