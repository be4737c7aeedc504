"""Sessions written by a framework integration read well in the viewer: OpenAI Agents SDK
items, stored by sqlstore.integrations.openai_agents, shown through the generic views."""

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
        assert 'id="log-note"' in page
        timeline = c.get("/timeline", params={"id": "agents-run-1"}).text
        assert "role=user · content=What is the weather in Paris?" in timeline
        assert "role=assistant · type=output_text · text=It is sunny in Paris." in timeline
        tools = c.get("/tools", params={"id": "agents-run-1"}).text
        assert "get_weather" in tools and "sunny, 21 C" in tools
