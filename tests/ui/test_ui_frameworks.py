"""Sessions written by the framework integrations read well in the viewer's generic views:
OpenAI Agents SDK items (sqlstore.integrations.openai_agents) and an ADK run driven by
ADK's own Runner with a scripted model (sqlstore.integrations.adk)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from starlette.testclient import TestClient

from sqlstore.integrations.openai_agents import SqlstoreSession
from tests.ui.test_ui_http import client_for

ITEMS = [
    {"role": "user", "content": "What is the weather in Paris?"},
    {
        "type": "function_call",
        "call_id": "call-w1",
        "name": "get_weather",
        "arguments": json.dumps({"city": "Paris"}),
    },
    {"type": "function_call_output", "call_id": "call-w1", "output": "sunny, 21 C"},
    {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "It is sunny in Paris."}],
    },
]


def test_openai_agents_session_in_the_viewer(tmp_path: Path) -> None:
    """The items show in the timeline by role and text, the tool call in the audit view."""
    path = tmp_path / "agents.db"
    session = SqlstoreSession("agents-run-1", store=str(path), labels={"app": "weather"})

    async def write() -> None:
        await session.add_items(ITEMS)

    asyncio.run(write())
    session.close()
    with client_for(path) as c:
        assert isinstance(c, TestClient)
        listed = c.get("/", params={"label": "app=weather"}).text
        assert "agents-run-1" in listed and "What is the weather in Paris?" in listed
        page = c.get("/session", params={"id": "agents-run-1"}).text
        assert 'id="log-note"' not in page  # no pointer to the log: the conversation is here
        # The session page rebuilds the conversation from the items, as `sqlstore show` does.
        assert "What is the weather in Paris?" in page and "It is sunny in Paris." in page
        assert "get_weather" in page and "sunny, 21 C" in page
        timeline = c.get("/timeline", params={"id": "agents-run-1"}).text
        assert "role=user · content=What is the weather in Paris?" in timeline
        assert "role=assistant · type=output_text · text=It is sunny in Paris." in timeline
        tools = c.get("/tools", params={"id": "agents-run-1"}).text
        assert "get_weather" in tools and "sunny, 21 C" in tools


def test_adk_session_in_the_viewer(tmp_path: Path) -> None:
    """An ADK run (scripted model, real Runner) shows its events by author and text."""
    from google.adk.runners import Runner
    from google.genai import types

    from sqlstore.integrations.adk import SqlstoreSessionService
    from tests.adk_scripted import make_agent

    path = tmp_path / "adk.db"

    async def run() -> str:
        service = SqlstoreSessionService(store=str(path))
        try:
            runner = Runner(agent=make_agent(), app_name="calc", session_service=service)
            session = await service.create_session(app_name="calc", user_id="ann")
            message = types.Content(role="user", parts=[types.Part(text="add 2 3")])
            async for _ in runner.run_async(
                user_id="ann", session_id=session.id, new_message=message
            ):
                pass
            return str(session.id)
        finally:
            await service.close()

    adk_id = asyncio.run(run())
    sid = f"adk/calc/ann/{adk_id}"
    with client_for(path) as c:
        assert sid in c.get("/").text
        timeline = c.get("/timeline", params={"id": sid}).text
        assert "author=user" in timeline and "text=add 2 3" in timeline
        assert "text=the sum is 5" in timeline
        session_page = c.get("/session", params={"id": sid})
        assert session_page.status_code == 200
        assert "add 2 3" in session_page.text and "the sum is 5" in session_page.text


def test_langgraph_thread_in_the_viewer(tmp_path: Path) -> None:
    """A LangGraph thread's page shows its latest checkpoint and its messages, escaped."""
    from langchain_core.messages import HumanMessage

    from sqlstore.integrations.langgraph import SqlstoreSaver
    from tests import langgraph_graphs as graphs

    path = tmp_path / "graph.db"
    with SqlstoreSaver.from_conn_string(path) as saver:
        graph = graphs.chat_graph(saver)
        graph.invoke({"messages": [HumanMessage("weather in Oslo? <b>x</b>")]}, graphs.thread("g1"))
    with client_for(path) as c:
        assert "g1" in c.get("/").text
        page = c.get("/session", params={"id": "g1"}).text
        assert 'id="graph"' in page and "latest checkpoint" in page
        assert "The weather: sunny in Oslo." in page
        assert "weather in Oslo? &lt;b&gt;x&lt;/b&gt;" in page and "<b>x</b>" not in page
        other = c.get("/session", params={"id": "g1-missing"})
        assert other.status_code == 404
