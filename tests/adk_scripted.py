"""A scripted ADK model for tests: deterministic replies, no network.

Same rules as ``tests/agents_scripted.py``: the newest content decides —

* user text ``add A B`` → a function call of ``add`` with ``{"a": A, "b": B}``;
* a function response → the text ``the sum is N``;
* any other user text → ``I saw K user messages`` (K counts the user texts in
  the request, so a test can tell whether earlier history was sent).

Every request's contents are kept in ``requests`` (as JSON) for assertions.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types


class ScriptedLlm(BaseLlm):
    """Answers by the rules in the module docstring; records each request."""

    model: str = "scripted"
    requests: list[list[dict[str, Any]]] = []

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        contents = llm_request.contents
        self.requests.append([c.model_dump(mode="json", exclude_none=True) for c in contents])
        last = contents[-1]
        parts = last.parts or []
        response = next((p.function_response for p in parts if p.function_response), None)
        text = "".join(p.text or "" for p in parts)
        if response is not None:
            reply = types.Part(text=f"the sum is {(response.response or {}).get('result')}")
        elif text.startswith("add "):
            a, b = (int(x) for x in text.split()[1:3])
            reply = types.Part(
                function_call=types.FunctionCall(
                    id=f"call_{uuid.uuid4().hex[:8]}", name="add", args={"a": a, "b": b}
                )
            )
        else:
            users = sum(
                1 for c in contents if c.role == "user" and any(p.text for p in c.parts or [])
            )
            reply = types.Part(text=f"I saw {users} user messages")
        yield LlmResponse(content=types.Content(role="model", parts=[reply]))


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def make_agent(model: ScriptedLlm | None = None) -> LlmAgent:
    """Return an agent that uses a scripted model and the ``add`` function tool."""
    return LlmAgent(
        name="calc",
        model=model or ScriptedLlm(requests=[]),
        instruction="Add numbers.",
        tools=[add],
    )
