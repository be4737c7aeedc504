"""End-to-end: real LangGraph graphs (ToolNode, interrupt and resume, Send) on SqlstoreSaver."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import langgraph_graphs as graphs
import pytest
from click.testing import CliRunner
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.types import Command

from cli.main import cli
from sqlstore import SQLiteStore
from sqlstore.integrations.langgraph import SqlstoreSaver

GRAPHS = Path(__file__).with_name("langgraph_graphs.py")


def run_process(db: Path, mode: str, step: str, thread_id: str, answer: str = "") -> Any:
    """Run one step of the approval graph in a fresh Python process; return its JSON output."""
    done = subprocess.run(
        [sys.executable, str(GRAPHS), str(db), mode, step, thread_id, answer],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_chat_with_tool_node_sync(tmp_path: Path) -> None:
    """A model/tool loop stores its messages; the thread is a session ls and show display."""
    db = tmp_path / "chat.db"
    with SqlstoreSaver.from_conn_string(db) as saver:
        graph = graphs.chat_graph(saver)
        out = graph.invoke(
            {"messages": [HumanMessage("weather in Oslo?\x1b[31m")]}, graphs.thread("c1")
        )
        kinds = [type(m) for m in out["messages"]]
        assert kinds == [HumanMessage, AIMessage, ToolMessage, AIMessage]
        assert out["messages"][-1].content == "The weather: sunny in Oslo."
        state = graph.get_state(graphs.thread("c1"))
        assert state.values["messages"][1].tool_calls[0]["name"] == "lookup"
        assert state.next == ()
        history = list(graph.get_state_history(graphs.thread("c1")))
        assert len(history) >= 5
    runner = CliRunner()
    listed = runner.invoke(cli, ["--db", str(db), "ls"])
    assert listed.exit_code == 0 and "c1" in listed.output
    assert "weather in Oslo?" in listed.output
    shown = runner.invoke(cli, ["--db", str(db), "show", "c1"])
    assert shown.exit_code == 0, shown.output
    assert "latest checkpoint" in shown.output and "messages (" in shown.output
    assert "-> lookup(" in shown.output and "The weather: sunny in Oslo." in shown.output
    assert "\x1b" not in shown.output and "\\x1b[31m" in shown.output
    as_json = json.loads(runner.invoke(cli, ["--db", str(db), "show", "c1", "--json"]).output)
    assert as_json["checkpoint"]["metadata"]["source"] == "loop"


def test_chat_with_tool_node_async(tmp_path: Path) -> None:
    """The same loop through ainvoke and the async context manager."""

    async def go() -> list[Any]:
        async with SqlstoreSaver.from_conn_string(tmp_path / "chat.db") as saver:
            graph = graphs.chat_graph(saver)
            out = await graph.ainvoke({"messages": [("user", "weather?")]}, graphs.thread("a1"))
            state = await graph.aget_state(graphs.thread("a1"))
            assert state.values["messages"] == out["messages"]
            return [h async for h in graph.aget_state_history(graphs.thread("a1"))]

    history = asyncio.run(go())
    assert len(history) >= 5
    with SQLiteStore(tmp_path / "chat.db") as store:
        assert store.sessions.meta("a1").title == "weather?"


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_interrupt_then_resume_in_another_process(tmp_path: Path, mode: str) -> None:
    """A graph paused by interrupt() in one process is resumed by a second process."""
    db = tmp_path / "approval.db"
    first = run_process(db, mode, "start", "ap-1")
    assert first == {"request": "deploy"}
    runner = CliRunner()
    shown = runner.invoke(cli, ["--db", str(db), "show", "ap-1"])
    assert shown.exit_code == 0
    assert "interrupt" in shown.output and "approve deploy?" in shown.output
    second = run_process(db, mode, "resume", "ap-1", "yes")
    assert second == {"request": "deploy", "answer": "yes", "outcome": "approved"}
    with SqlstoreSaver(str(db)) as saver:
        state = graphs.approval_graph(saver).get_state(graphs.thread("ap-1"))
        assert state.next == () and state.values["outcome"] == "approved"


def test_send_fan_out_sync_and_async(tmp_path: Path) -> None:
    """A Send fan-out runs every task and its history (with the Send packets) reads back."""
    with SqlstoreSaver.from_conn_string(tmp_path / "fan.db") as saver:
        graph = graphs.fanout_graph(saver)
        out = graph.invoke({"items": ["a", "b", "c"]}, graphs.thread("f1"))
        assert sorted(out["results"]) == ["A", "B", "C"]
        history = list(graph.get_state_history(graphs.thread("f1")))
        assert any(len(h.tasks) == 3 for h in history)

        async def go() -> dict[str, Any]:
            result: dict[str, Any] = await graph.ainvoke({"items": ["x", "y"]}, graphs.thread("f2"))
            return result

        assert sorted(asyncio.run(go())["results"]) == ["X", "Y"]


def test_resume_with_command_in_same_process(tmp_path: Path) -> None:
    """Resuming with Command(resume=...) in the same saver rejects on another answer."""
    with SqlstoreSaver.from_conn_string(tmp_path / "a.db") as saver:
        graph = graphs.approval_graph(saver)
        paused = graph.invoke({"request": "drop"}, graphs.thread("t"))
        assert paused["__interrupt__"][0].value == {"question": "approve drop?"}
        done = graph.invoke(Command(resume="no"), graphs.thread("t"))
        assert done["outcome"] == "rejected"


def test_example_script_runs(tmp_path: Path) -> None:
    """examples/langgraph_chat.py runs the chat, pauses, and resumes in a second process."""
    example = Path(__file__).resolve().parents[1] / "examples" / "langgraph_chat.py"
    done = subprocess.run(
        [sys.executable, str(example), "--db", str(tmp_path / "ex.db")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "chat-1: Good news: it is sunny and 21 °C in Lisbon." in done.stdout
    assert "resumed in process 2: decision = 'yes'" in done.stdout
