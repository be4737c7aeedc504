"""Real LangGraph graphs driven by scripted models (no network), for the end-to-end tests.

Also a script, so a test can run a graph in a fresh OS process::

    python tests/langgraph_graphs.py DB MODE STEP THREAD [ANSWER]

MODE is ``sync`` or ``async``; STEP ``start`` runs the approval graph up to its
``interrupt()`` and exits, ``resume`` resumes it with ANSWER and prints the
final state as JSON.
"""

from __future__ import annotations

import asyncio
import json
import operator
import sys
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, Send, interrupt

from sqlstore.integrations.langgraph import SqlstoreSaver


@tool
def lookup(city: str) -> str:
    """Return the (scripted) weather of a city."""
    return f"sunny in {city}"


def scripted_model(state: MessagesState) -> dict[str, list[BaseMessage]]:
    """Call the tool once for a user question, then answer from the tool result."""
    last = state["messages"][-1]
    if isinstance(last, ToolMessage):
        return {"messages": [AIMessage(content=f"The weather: {last.content}.")]}
    call = {"name": "lookup", "args": {"city": "Oslo"}, "id": "call-1", "type": "tool_call"}
    return {"messages": [AIMessage(content="", tool_calls=[call])]}


def chat_graph(saver: SqlstoreSaver) -> CompiledStateGraph[Any, Any, Any, Any]:
    """A model node and a tool node (LangGraph's prebuilt ``ToolNode``)."""
    builder = StateGraph(MessagesState)
    builder.add_node("agent", scripted_model)
    builder.add_node("tools", ToolNode([lookup]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=saver)


class Approval(TypedDict, total=False):
    """State of the approval graph."""

    request: str
    answer: str
    outcome: str


def ask_human(state: Approval) -> Approval:
    """Pause for a human decision (``interrupt()``), then record it."""
    answer = interrupt({"question": f"approve {state['request']}?"})
    return {"answer": str(answer)}


def decide(state: Approval) -> Approval:
    """Turn the answer into an outcome."""
    return {"outcome": "approved" if state["answer"] == "yes" else "rejected"}


def approval_graph(saver: SqlstoreSaver) -> CompiledStateGraph[Any, Any, Any, Any]:
    """START -> ask_human (interrupts) -> decide -> END."""
    builder = StateGraph(Approval)
    builder.add_node("ask_human", ask_human)
    builder.add_node("decide", decide)
    builder.add_edge(START, "ask_human")
    builder.add_edge("ask_human", "decide")
    builder.add_edge("decide", END)
    return builder.compile(checkpointer=saver)


class FanOut(TypedDict, total=False):
    """State of the map-reduce graph."""

    items: list[str]
    results: Annotated[list[str], operator.add]


def spread(state: FanOut) -> list[Send]:
    """Send one task per item (LangGraph's ``Send`` fan-out)."""
    return [Send("work", {"items": [item]}) for item in state["items"]]


def work(state: FanOut) -> FanOut:
    """Process one item."""
    return {"results": [state["items"][0].upper()]}


def fanout_graph(saver: SqlstoreSaver) -> CompiledStateGraph[Any, Any, Any, Any]:
    """START -Send-> work (x N) -> END."""
    builder = StateGraph(FanOut)
    builder.add_node("work", work)
    builder.add_conditional_edges(START, spread, ["work"])
    builder.add_edge("work", END)
    return builder.compile(checkpointer=saver)


def thread(thread_id: str) -> dict[str, Any]:
    """Return the config of one thread."""
    return {"configurable": {"thread_id": thread_id}}


def run_step(db: str, mode: str, step: str, thread_id: str, answer: str = "") -> dict[str, Any]:
    """Start the approval graph (to its interrupt) or resume it, in this process."""
    payload: Any = {"request": "deploy"} if step == "start" else Command(resume=answer)
    if mode == "sync":
        with SqlstoreSaver.from_conn_string(db) as saver:
            result = approval_graph(saver).invoke(payload, thread(thread_id))
    else:

        async def go() -> dict[str, Any]:
            async with SqlstoreSaver.from_conn_string(db) as saver:
                out: dict[str, Any] = await approval_graph(saver).ainvoke(
                    payload, thread(thread_id)
                )
                return out

        result = asyncio.run(go())
    return {k: v for k, v in result.items() if k != "__interrupt__"}


if __name__ == "__main__":
    print(json.dumps(run_step(*sys.argv[1:])))
