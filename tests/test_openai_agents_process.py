"""``SqlstoreSession`` across real processes: the SDK's Runner, and concurrent adds and pops."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.integration_support import spawn

TIMEOUT_S = 120.0
"""Upper bound for any wait on a child process (never a timing assertion)."""

ITEMS_PER_WORKER = 60
POPS_PER_WORKER = 25


def run_agent(db: str, prompt: str) -> dict[str, Any]:
    """Child: run the scripted agent once on session "conv" of ``db``; report what it saw."""
    from agents import Runner, set_tracing_disabled

    from sqlstore.integrations.openai_agents import SqlstoreSession
    from tests.agents_scripted import ScriptedModel, make_agent

    set_tracing_disabled(True)

    async def main() -> dict[str, Any]:
        model = ScriptedModel()
        session = SqlstoreSession("conv", db)
        try:
            result = await Runner.run(make_agent(model), prompt, session=session)
            return {"output": result.final_output, "inputs": model.inputs}
        finally:
            session.close()

    return asyncio.run(main())


def add_and_pop(db: str, worker: int, start: Any) -> list[Any]:
    """Child: add numbered items one by one and pop between them; return what it popped."""
    from sqlstore.integrations.openai_agents import SqlstoreSession

    async def main() -> list[Any]:
        session = SqlstoreSession("shared", db)
        popped: list[Any] = []
        try:
            start.wait(TIMEOUT_S)
            for step in range(ITEMS_PER_WORKER):
                await session.add_items([{"content": f"w{worker}-{step}"}])
                if step % 2 == 1 and len(popped) < POPS_PER_WORKER:
                    item = await session.pop_item()
                    if item is not None:
                        popped.append(item["content"])
        finally:
            session.close()
        return popped

    return asyncio.run(main())


def test_runner_in_two_processes_shares_history(tmp_path: Path) -> None:
    """A second process's run sees the first process's run, tool call and output included."""
    db = str(tmp_path / "runs.db")
    with spawn().Pool(1) as pool:
        first = pool.apply_async(run_agent, (db, "add 2 3")).get(TIMEOUT_S)
    with spawn().Pool(1) as pool:
        second = pool.apply_async(run_agent, (db, "what did we do?")).get(TIMEOUT_S)
    assert first["output"] == "the sum is 5"
    assert second["output"] == "I saw 2 user messages"
    history = second["inputs"][0]
    assert [i.get("type", "message") for i in history] == [
        "message",
        "function_call",
        "function_call_output",
        "message",
        "message",
    ]
    assert history[0]["content"] == "add 2 3" and history[2]["output"] == "5"

    import sqlstore

    with sqlstore.open(db) as store:
        meta = store.sessions.meta("conv")
        audit = store.audit.list("conv")
        items = len(list(store.events.read("conv")))
    assert meta.title == "add 2 3" and meta.turns == 2
    assert [(a.tool, a.args, a.result) for a in audit] == [("add", '{"a": 2, "b": 3}', "5")]
    assert items == 6


@pytest.mark.slow
def test_two_processes_add_and_pop_at_once(tmp_path: Path) -> None:
    """Two processes adding and popping at once lose nothing and never pop one item twice."""
    db = str(tmp_path / "shared.db")
    ctx = spawn()
    with ctx.Manager() as manager:
        start = manager.Event()
        with ctx.Pool(2) as pool:
            jobs = [pool.apply_async(add_and_pop, (db, w, start)) for w in range(2)]
            start.set()
            popped = [job.get(TIMEOUT_S) for job in jobs]

    from sqlstore.integrations.openai_agents import SqlstoreSession

    session = SqlstoreSession("shared", db)
    left = [item["content"] for item in asyncio.run(session.get_items())]
    session.close()
    all_popped = popped[0] + popped[1]
    assert len(all_popped) == len(set(all_popped))  # nothing popped twice
    added = {f"w{w}-{s}" for w in range(2) for s in range(ITEMS_PER_WORKER)}
    assert sorted(all_popped + left) == sorted(added)  # nothing lost, nothing invented
    for worker in range(2):  # each writer's surviving items keep its order
        mine = [c for c in left if c.startswith(f"w{worker}-")]
        assert mine == sorted(mine, key=lambda c: int(c.split("-")[1]))
