"""A scripted ``agents.Model`` for tests: deterministic replies, no network.

The model reads the conversation it is given and answers by rule, so two
processes running it agree without sharing a script:

* a user message ``add A B`` (the newest input) → a ``function_call`` of the
  ``add`` tool with ``{"a": A, "b": B}``;
* a ``function_call_output`` as the newest input → the text ``the sum is N``;
* any other user message → ``I saw K user messages`` (K counts every user
  message in its input, so a test can tell whether earlier history was sent).

Every call's input is kept in ``inputs`` for assertions.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

from agents import Agent, FunctionTool, Model, ModelResponse, Usage, function_tool
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)


class ScriptedModel(Model):
    """Answers by the rules in the module docstring; records each call's input."""

    def __init__(self) -> None:
        self.inputs: list[list[dict[str, Any]]] = []

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[Any],
        model_settings: Any,
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: Any,
        *,
        previous_response_id: str | None = None,
        conversation_id: str | None = None,
        prompt: Any = None,
    ) -> ModelResponse:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        self.inputs.append([dict(i) for i in items])
        return ModelResponse(output=[self._answer(items)], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the tests run the model without streaming")

    @staticmethod
    def _answer(items: list[Any]) -> Any:
        last = items[-1]
        if last.get("type") == "function_call_output":
            return _text(f"the sum is {last['output']}")
        content = last.get("content")
        if last.get("role") == "user" and isinstance(content, str) and content.startswith("add "):
            a, b = (int(x) for x in content.split()[1:3])
            return ResponseFunctionToolCall(
                type="function_call",
                call_id=f"call_{uuid.uuid4().hex[:8]}",
                name="add",
                arguments=json.dumps({"a": a, "b": b}),
                id=f"fc_{uuid.uuid4().hex[:8]}",
                status="completed",
            )
        users = sum(1 for i in items if i.get("role") == "user")
        return _text(f"I saw {users} user messages")


def _text(text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id=f"msg_{uuid.uuid4().hex[:8]}",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )


@function_tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def make_agent(model: ScriptedModel) -> Agent[Any]:
    """Return an agent that uses ``model`` and the ``add`` function tool."""
    tool: FunctionTool = add
    return Agent(name="calc", instructions="Add numbers.", model=model, tools=[tool])
