"""OpenAI Agents sessions through the CLI and retention: ls, show, events, audit, prune, leases."""

from __future__ import annotations

import asyncio
import json
import queue
import subprocess
import threading
from datetime import timedelta
from pathlib import Path

from click.testing import CliRunner, Result
from freezegun import freeze_time

import retention
import sqlstore
from cli.main import cli
from sqlstore.integrations.openai_agents import SqlstoreSession
from tests.integration_support import run_example
from tests.test_cli_process import TIMEOUT_S, console_script, env_without_db, read_lines

CONVERSATION = [
    {"role": "user", "content": "What is 2+3?\x1b[2J"},
    {"type": "reasoning", "id": "r1", "summary": [{"type": "summary_text", "text": "use add"}]},
    {"type": "function_call", "call_id": "c1", "name": "add", "arguments": '{"a": 2, "b": 3}'},
    {"type": "function_call_output", "call_id": "c1", "output": "5"},
    {"type": "function_call", "call_id": "c2", "name": "div", "arguments": '{"a": 1, "b": 0}'},
    {
        "type": "function_call_output",
        "call_id": "c2",
        "output": "An error occurred while running the tool. Please try again.",
    },
    {
        "type": "message",
        "role": "assistant",
        "id": "m1",
        "status": "completed",
        "content": [{"type": "output_text", "text": "It is 5.\nDone.", "annotations": []}],
    },
]


def run(*args: str) -> Result:
    """Invoke the CLI in-process."""
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def store_conversation(db: Path, session_id: str = "chat") -> None:
    session = SqlstoreSession(session_id, db, owner="alice")
    asyncio.run(session.add_items(CONVERSATION))
    session.close()


def test_ls_lists_title_and_turns(tmp_path: Path) -> None:
    """`sqlstore ls` lists the session with its first user message as title and its turns."""
    db = tmp_path / "s.db"
    store_conversation(db)
    listed = run("--db", str(db), "--json", "ls")
    [row] = json.loads(listed.output)
    assert row["id"] == "chat" and row["title"] == "What is 2+3?\x1b[2J" and row["turns"] == 1
    human = run("--db", str(db), "ls", "--owner", "alice").output
    assert "What is 2+3?\\x1b[2J" in human and "\x1b" not in human


def test_show_renders_the_conversation(tmp_path: Path) -> None:
    """`sqlstore show` prints roles, text, reasoning, calls with arguments, outputs and errors."""
    db = tmp_path / "s.db"
    store_conversation(db)
    out = run("--db", str(db), "show", "chat").output
    assert "\x1b" not in out
    for expected in (
        "[1] user",
        "What is 2+3?\\x1b[2J",
        "(reasoning) use add",
        '-> add({"a": 2, "b": 3})  id=c1',
        "<- c1: 5",
        '-> div({"a": 1, "b": 0})  id=c2',
        "<- c2 ERROR: An error occurred while running the tool.",
        "It is 5.",
        "Done.",
    ):
        assert expected in out, expected
    assert ["messages", "6"] in [line.split() for line in out.splitlines()]
    doc = json.loads(run("--db", str(db), "show", "chat", "--json").output)
    assert [m["role"] for m in doc["messages"]] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]


def test_show_applies_pops(tmp_path: Path) -> None:
    """Popped items are not shown."""
    db = tmp_path / "s.db"
    session = SqlstoreSession("p", db)
    asyncio.run(
        session.add_items(
            [{"role": "user", "content": "keep"}, {"role": "user", "content": "drop me"}]
        )
    )
    asyncio.run(session.pop_item())
    session.close()
    out = run("--db", str(db), "show", "p").output
    assert "keep" in out and "drop me" not in out


def test_audit_lists_tool_calls(tmp_path: Path) -> None:
    """`sqlstore audit` lists each call with its output; --errors keeps the failed one."""
    db = tmp_path / "s.db"
    store_conversation(db)
    rows = json.loads(run("--db", str(db), "--json", "audit", "chat").output)
    assert [(r["tool"], r["result"], r["is_error"]) for r in rows] == [
        ("add", "5", False),
        ("div", "An error occurred while running the tool. Please try again.", True),
    ]
    errors = json.loads(run("--db", str(db), "--json", "audit", "chat", "--errors").output)
    assert [r["tool"] for r in errors] == ["div"]


def test_prune_and_rm_remove_everything(tmp_path: Path) -> None:
    """Retention deletes an old session (not a leased one); rm deletes the rest, audit included."""
    db = tmp_path / "s.db"
    with freeze_time("2026-01-01T00:00:00Z"):
        store_conversation(db, "old")
        store_conversation(db, "leased")
    store_conversation(db, "new")
    with sqlstore.open(str(db)) as store:
        store.leases.acquire("leased", "worker-1", timedelta(hours=1))
        policy = retention.Policy(
            main=retention.Rule(max_age=timedelta(days=30)), acknowledge_main_deletion=True
        )
        report = retention.sweep(store, retention.plan(store, policy))
        assert report.deleted == 1
        assert {s.id for s in store.sessions.list()} == {"leased", "new"}
        assert store.audit.list("old") == [] and list(store.events.read("old")) == []
    removed = run("--db", str(db), "rm", "new", "--yes")
    assert removed.exit_code == 0
    with sqlstore.open(str(db)) as store:
        assert store.audit.list("new") == [] and list(store.events.read("new")) == []
        assert [s.id for s in store.sessions.list()] == ["leased"]


def test_events_follow_through_console_script(tmp_path: Path) -> None:
    """`sqlstore events ID --follow` (the installed script) prints items as they are added."""
    db = tmp_path / "s.db"
    session = SqlstoreSession("live", db)
    asyncio.run(session.add_items([{"role": "user", "content": "first"}]))
    with subprocess.Popen(
        [console_script(), "--db", str(db), "events", "live", "--follow"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env_without_db(),
    ) as child:
        lines: queue.Queue[str | None] = queue.Queue()
        reader = threading.Thread(target=read_lines, args=(child.stdout, lines), daemon=True)
        reader.start()
        try:
            first = json.loads(lines.get(timeout=TIMEOUT_S) or "null")
            assert first["event"]["data"]["item"] == {"role": "user", "content": "first"}
            asyncio.run(session.add_items([{"role": "assistant", "content": "second"}]))
            second = json.loads(lines.get(timeout=TIMEOUT_S) or "null")
            assert second["event"]["type"] == "openai_agents.item"
            assert second["event"]["data"]["item"]["content"] == "second"
            assert second["live"] is True
            child.terminate()
            assert child.wait(timeout=TIMEOUT_S) == 0
        finally:
            if child.poll() is None:
                child.kill()
            reader.join(timeout=TIMEOUT_S)
            session.close()


def test_example_runs(tmp_path: Path) -> None:
    """The example runs offline and leaves a session that `sqlstore show` renders."""
    db = tmp_path / "ex.db"
    done = run_example("openai_agents_session.py", str(db))
    assert "sunny and 21 °C in Lisbon" in done.stdout
    out = run("--db", str(db), "show", "weather-chat").output
    assert '-> get_weather({"city": "Lisbon"})' in out and "Thanks!" in out
