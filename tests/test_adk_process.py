"""``SqlstoreSessionService`` across real processes, and through ADK's own service loader."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path
from typing import Any

import sqlstore
from sqlstore.integrations.adk_events import session_key
from tests.integration_support import spawn

TIMEOUT_S = 120.0
"""Upper bound for any wait on a child process (never a timing assertion)."""


def run_agent(db: str, prompt: str) -> dict[str, Any]:
    """Child: run the scripted LlmAgent once on session "conv" of user "alice"; report."""
    from google.adk.runners import Runner
    from google.genai import types

    from sqlstore.integrations.adk import SqlstoreSessionService
    from tests.adk_scripted import ScriptedLlm, make_agent

    async def main() -> dict[str, Any]:
        service = SqlstoreSessionService(db)
        model = ScriptedLlm(requests=[])
        runner = Runner(agent=make_agent(model), app_name="calc", session_service=service)
        if await service.get_session(app_name="calc", user_id="alice", session_id="conv") is None:
            await service.create_session(app_name="calc", user_id="alice", session_id="conv")
        texts = []
        message = types.Content(role="user", parts=[types.Part(text=prompt)])
        async for event in runner.run_async(
            user_id="alice", session_id="conv", new_message=message
        ):
            if event.content and event.content.parts:
                texts.extend(p.text for p in event.content.parts if p.text)
        await service.close()
        return {"texts": texts, "requests": model.requests}

    return asyncio.run(main())


def stale_writer(db: str, loaded: str, marker: str, start: Any) -> str:
    """Child: append to the session the parent loaded (``loaded``, ``marker``) once started."""
    from google.adk.errors import StaleSessionError
    from google.adk.events.event import Event
    from google.adk.sessions.session import Session
    from google.genai import types

    from sqlstore.integrations.adk import SqlstoreSessionService

    async def main() -> str:
        service = SqlstoreSessionService(db)
        session = Session.model_validate_json(loaded)
        session._storage_update_marker = marker  # the storage version the parent loaded
        start.wait(TIMEOUT_S)
        event = Event(
            author="user",
            invocation_id="inv",
            content=types.Content(role="user", parts=[types.Part(text="from a child")]),
        )
        try:
            await service.append_event(session, event)
            return "ok"
        except StaleSessionError:
            return "stale"
        finally:
            await service.close()

    return asyncio.run(main())


def test_runner_in_two_processes_shares_history(tmp_path: Path) -> None:
    """A second process's run sees the first's events, function call and response included."""
    db = str(tmp_path / "adk.db")
    with spawn().Pool(1) as pool:
        first = pool.apply_async(run_agent, (db, "add 2 3")).get(TIMEOUT_S)
    with spawn().Pool(1) as pool:
        second = pool.apply_async(run_agent, (db, "what did we do?")).get(TIMEOUT_S)
    assert first["texts"] == ["the sum is 5"]
    assert second["texts"] == ["I saw 2 user messages"]
    history = second["requests"][0]
    kinds = [next(iter(c["parts"][0])) for c in history]
    assert kinds == ["text", "function_call", "function_response", "text", "text"]
    with sqlstore.open(db) as store:
        key = session_key("calc", "alice", "conv")
        meta = store.sessions.meta(key)
        audit = store.audit.list(key)
    assert meta.title == "add 2 3" and meta.turns == 2
    assert meta.owner is not None and (meta.owner.issuer, meta.owner.subject) == (
        "adk:calc",
        "alice",
    )
    assert [(a.tool, a.args, a.result) for a in audit] == [
        ("add", '{"a": 2, "b": 3}', '{"result": 5}')
    ]


def test_two_processes_one_stale(tmp_path: Path) -> None:
    """Two processes append to the same loaded session at once: one wins, one is stale."""
    from sqlstore.integrations.adk import SqlstoreSessionService

    db = str(tmp_path / "race.db")
    service = SqlstoreSessionService(db)
    asyncio.run(service.create_session(app_name="calc", user_id="alice", session_id="race"))
    loaded = asyncio.run(service.get_session(app_name="calc", user_id="alice", session_id="race"))
    assert loaded is not None
    dumped = loaded.model_dump_json()
    ctx = spawn()
    with ctx.Manager() as manager:
        start = manager.Event()
        with ctx.Pool(2) as pool:
            marker = loaded._storage_update_marker
            jobs = [pool.apply_async(stale_writer, (db, dumped, marker, start)) for _ in range(2)]
            start.set()
            outcomes = sorted(job.get(TIMEOUT_S) for job in jobs)
    assert outcomes == ["ok", "stale"]
    got = asyncio.run(service.get_session(app_name="calc", user_id="alice", session_id="race"))
    assert got is not None and [e.author for e in got.events] == ["user"]
    asyncio.run(service.close())


def test_adk_loader_builds_the_service_from_services_py(tmp_path: Path) -> None:
    """The documented services.py makes ADK's own loader build ours for a sqlstore: URI."""
    from google.adk.cli.service_registry import load_services_module
    from google.adk.cli.utils.service_factory import create_session_service_from_options

    from sqlstore.integrations.adk import SqlstoreSessionService

    agents = tmp_path / "agents"
    agents.mkdir()
    docs = Path(__file__).resolve().parents[1] / "docs" / "integrations" / "adk.md"
    block = docs.read_text(encoding="utf-8").split("```python services.py\n", 1)[1].split("```")[0]
    (agents / "services.py").write_text(textwrap.dedent(block), encoding="utf-8")
    load_services_module(str(agents))
    db = tmp_path / "via-uri.db"
    service = create_session_service_from_options(
        base_dir=agents, session_service_uri=f"sqlstore://{db}"
    )
    assert isinstance(service, SqlstoreSessionService)
    asyncio.run(service.create_session(app_name="calc", user_id="u", session_id="s"))
    asyncio.run(service.close())
    with sqlstore.open(str(db)) as store:
        assert [s.id for s in store.sessions.list()] == [session_key("calc", "u", "s")]
