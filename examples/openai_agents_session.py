"""Keep an OpenAI Agents SDK conversation in sqlstore, then inspect it with the CLI.

Run (offline: a tiny rule-based model stands in for a real one, so no API key
is needed)::

    pip install 'sqlstore[openai-agents]'
    python examples/openai_agents_session.py /tmp/agents.db
    sqlstore --db /tmp/agents.db ls
    sqlstore --db /tmp/agents.db show weather-chat
    sqlstore --db /tmp/agents.db audit weather-chat

With a real model, drop ``OfflineModel`` and let the agent use its default
model; nothing else changes.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from typing import Any

from agents import Agent, Model, ModelResponse, Runner, Usage, function_tool, set_tracing_disabled
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from sqlstore.integrations.openai_agents import SqlstoreSession


@function_tool
def get_weather(city: str) -> str:
    """Return the weather in a city."""
    return f"sunny and 21 °C in {city}"


class OfflineModel(Model):
    """Calls ``get_weather`` for "weather in X", then reports its output; no network."""

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        items = input if isinstance(input, list) else [{"role": "user", "content": input}]
        last = items[-1]
        if last.get("type") == "function_call_output":
            out: Any = _message(f"Here you go: {last['output']}.")
        elif "weather in" in str(last.get("content", "")):
            city = str(last["content"]).rsplit("weather in", 1)[1].strip(" ?")
            out = ResponseFunctionToolCall(
                type="function_call",
                call_id=f"call_{len(items)}",
                name="get_weather",
                arguments=json.dumps({"city": city}),
            )
        else:
            users = sum(1 for i in items if i.get("role") == "user")
            out = _message(f"This is message {users} of our conversation.")
        return ModelResponse(output=[out], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError


def _message(text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id="msg",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )


async def main(db: str) -> None:
    set_tracing_disabled(True)
    agent = Agent(name="weather", model=OfflineModel(), tools=[get_weather])
    session = SqlstoreSession("weather-chat", db, owner="alice", labels={"app": "example"})
    try:
        for prompt in ("What is the weather in Lisbon?", "Thanks!"):
            result = await Runner.run(agent, prompt, session=session)
            print(f"> {prompt}\n{result.final_output}")
        print(f"{len(await session.get_items())} items stored in {db}")
    finally:
        session.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "sessions.db"))
