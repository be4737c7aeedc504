"""Keep Google ADK sessions in sqlstore, then inspect them with the CLI.

Run (offline: a scripted model stands in for Gemini, so no API key is needed)::

    pip install 'sqlstore[adk]'
    python examples/adk_session_service.py /tmp/adk.db
    sqlstore --db /tmp/adk.db ls --owner alice --issuer adk:weather
    sqlstore --db /tmp/adk.db show adk/weather/alice/trip
    sqlstore --db /tmp/adk.db audit adk/weather/alice/trip

With a real model, give the agent ``model="gemini-2.5-flash"`` instead of
``OfflineLlm()``; nothing else changes.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncGenerator

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.genai import types

from sqlstore.integrations.adk import SqlstoreSessionService


def get_weather(city: str) -> dict[str, str]:
    """Return the weather in a city."""
    return {"city": city, "forecast": "sunny, 21 °C"}


class OfflineLlm(BaseLlm):
    """Calls ``get_weather`` for "weather in X", then reports its answer; no network."""

    model: str = "offline"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        parts = llm_request.contents[-1].parts or []
        answer = next((p.function_response for p in parts if p.function_response), None)
        text = "".join(p.text or "" for p in parts)
        if answer is not None:
            reply = types.Part(text=f"Forecast: {(answer.response or {}).get('forecast')}.")
        elif "weather in" in text:
            city = text.rsplit("weather in", 1)[1].strip(" ?")
            call = types.FunctionCall(id="call-1", name="get_weather", args={"city": city})
            reply = types.Part(function_call=call)
        else:
            reply = types.Part(text="You are welcome.")
        yield LlmResponse(content=types.Content(role="model", parts=[reply]))


async def main(db: str) -> None:
    service = SqlstoreSessionService(db)
    agent = LlmAgent(name="weather", model=OfflineLlm(), tools=[get_weather])
    runner = Runner(agent=agent, app_name="weather", session_service=service)
    session = await service.get_session(app_name="weather", user_id="alice", session_id="trip")
    if session is None:
        await service.create_session(
            app_name="weather", user_id="alice", session_id="trip", state={"user:units": "metric"}
        )
    for prompt in ("What is the weather in Lisbon?", "Thanks!"):
        message = types.Content(role="user", parts=[types.Part(text=prompt)])
        async for event in runner.run_async(
            user_id="alice", session_id="trip", new_message=message
        ):
            for part in (event.content.parts if event.content else None) or []:
                if part.text:
                    print(f"{event.author}: {part.text}")
    print("user state:", await service.get_user_state(app_name="weather", user_id="alice"))
    await service.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "sessions.db"))
