"""LangGraph on sqlstore: a tool-calling chat and a human approval that survives a restart.

Run: ``python examples/langgraph_chat.py [--db sessions.db]`` (needs
``pip install 'sqlstore[langgraph]'``). No model or network: the "model" is a
scripted function. The script

1. runs a chat graph (model node + LangGraph's ``ToolNode``) on thread ``chat-1``;
2. starts an approval graph on thread ``approval-1`` that stops at ``interrupt()``;
3. resumes that thread in a *new process* (``--resume``), as a restarted
   service would, and prints the outcome.

Afterwards try ``sqlstore --db sessions.db ls`` and ``sqlstore --db sessions.db
show chat-1``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from typing import Any, TypedDict

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, interrupt

from sqlstore.integrations.langgraph import SqlstoreSaver


@tool
def weather(city: str) -> str:
    """Return the weather of a city (scripted)."""
    return f"sunny and 21 °C in {city}"


def model(state: MessagesState) -> dict[str, list[BaseMessage]]:
    """A scripted model: call the tool for a question, then answer from its result."""
    last = state["messages"][-1]
    if isinstance(last, ToolMessage):
        return {"messages": [AIMessage(f"Good news: it is {last.content}.")]}
    call = {"name": "weather", "args": {"city": "Lisbon"}, "id": "call-1", "type": "tool_call"}
    return {"messages": [AIMessage("", tool_calls=[call])]}


def chat(saver: SqlstoreSaver) -> Any:
    """Model and tools in a loop."""
    builder = StateGraph(MessagesState)
    builder.add_node("model", model)
    builder.add_node("tools", ToolNode([weather]))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition)
    builder.add_edge("tools", "model")
    return builder.compile(checkpointer=saver)


class Request(TypedDict, total=False):
    """State of the approval graph."""

    action: str
    decision: str


def ask(state: Request) -> Request:
    """Stop until a human answers."""
    return {"decision": str(interrupt({"question": f"May I {state['action']}?"}))}


def approval(saver: SqlstoreSaver) -> Any:
    """START -> ask (interrupts) -> END."""
    builder = StateGraph(Request)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    return builder.compile(checkpointer=saver)


def main() -> None:
    """Run the chat, start the approval, and resume it in a second process."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--db", default="sessions.db", help="the sqlstore database")
    parser.add_argument("--resume", action="store_true", help="resume the approval thread")
    args = parser.parse_args()
    approval_thread = {"configurable": {"thread_id": "approval-1"}}
    with SqlstoreSaver.from_conn_string(args.db) as saver:
        if args.resume:
            result = approval(saver).invoke(Command(resume="yes"), approval_thread)
            print(f"resumed in process 2: decision = {result['decision']!r}")
            return
        out = chat(saver).invoke(
            {"messages": [("user", "What is the weather in Lisbon?")]},
            {"configurable": {"thread_id": "chat-1"}},
        )
        print("chat-1:", out["messages"][-1].content)
        paused = approval(saver).invoke({"action": "deploy the release"}, approval_thread)
        print("approval-1 paused:", paused["__interrupt__"][0].value)
    done = subprocess.run([sys.executable, __file__, "--db", args.db, "--resume"], check=True)
    print(f"(second process exited with {done.returncode}); try: sqlstore --db {args.db} ls")


if __name__ == "__main__":
    main()
