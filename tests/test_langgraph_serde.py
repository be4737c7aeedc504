"""JsonSerializer: JSON-only round trips, an allow-list for user types, loud refusals."""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import enum
import json
import pickle
import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.types import Command, Interrupt, Overwrite, Send
from pydantic import BaseModel

from sqlstore.checkpoints import JSON_TYPE
from sqlstore.integrations.langgraph import CorruptValue, JsonSerializer, UnsupportedValue


@dataclasses.dataclass
class Point:
    """A user dataclass."""

    x: int
    y: int


class Color(enum.Enum):
    """A user enum."""

    RED = "red"


class Profile(BaseModel):
    """A user pydantic model."""

    name: str
    tags: list[str]


def round_trip(value: Any, serde: JsonSerializer | None = None) -> Any:
    """Encode and decode ``value``; check the bytes are plain JSON."""
    s = serde or JsonSerializer()
    type_, data = s.dumps_typed(value)
    assert type_ == JSON_TYPE
    json.loads(data)
    return s.loads_typed((type_, data))


VALUES: list[Any] = [
    None,
    "text é \x00",
    42,
    1.5,
    True,
    [1, [2, {"a": None}]],
    {"nested": {"k": [1, 2]}},
    (1, "two", (3,)),
    {"a", "b"},
    frozenset({1, 2}),
    b"\x00\xff bytes",
    dt.datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=dt.UTC),
    dt.date(2026, 1, 2),
    dt.time(3, 4, 5),
    dt.timedelta(days=1, seconds=2, microseconds=3),
    uuid.UUID("12345678-1234-5678-1234-567812345678"),
    decimal.Decimal("1.10"),
    {1: "int key", (2, 3): "tuple key"},
    {"__sqlstore__": "user data that looks like a tag"},
]


@pytest.mark.parametrize("value", VALUES, ids=[type(v).__name__ for v in VALUES])
def test_plain_and_tagged_values_round_trip(value: Any) -> None:
    """Every supported Python value comes back equal and of the same type."""
    back = round_trip(value)
    assert back == value and type(back) is type(value)


def test_langchain_messages_round_trip() -> None:
    """Human, AI (with tool calls), tool, system, chunk and remove messages round-trip."""
    call = {"name": "f", "args": {"a": [1, 2]}, "id": "c1", "type": "tool_call"}
    messages = [
        HumanMessage("hi", id="1"),
        AIMessage("", tool_calls=[call], id="2", usage_metadata=None),
        ToolMessage("result", tool_call_id="c1", artifact={"raw": (1, 2)}),
        SystemMessage([{"type": "text", "text": "be brief"}]),
        AIMessageChunk("par"),
        RemoveMessage(id="1"),
    ]
    back = round_trip(messages)
    assert back == messages
    assert [type(m) for m in back] == [type(m) for m in messages]


def test_send_interrupt_command_overwrite_round_trip() -> None:
    """LangGraph's Send, Interrupt, Command and Overwrite round-trip."""
    values = [
        Send("work", {"item": "a"}),
        Send("work", {"item": "b"}, timeout=5.0),
        Interrupt({"question": "ok?"}, id="abc"),
        Interrupt("x", id="d", response_schema={"type": "string"}),
        Command(resume={"abc": "yes"}, goto=[Send("n", 1)]),
        Overwrite([1, 2]),
    ]
    back = round_trip(values)
    assert back[0] == values[0] and back[1].timeout == values[1].timeout
    assert back[2].value == values[2].value and back[2].id == "abc"
    assert back[3].response_schema == {"type": "string"}
    assert back[4].resume == {"abc": "yes"} and back[4].goto == (Send("n", 1),)
    assert back[5] == values[5]


def test_exceptions_are_stored_as_text() -> None:
    """An exception (LangGraph's __error__ write) is stored as its repr; nothing is raised."""
    assert round_trip(ValueError("boom")) == "ValueError('boom')"


def test_user_types_need_the_allow_list() -> None:
    """Dataclasses, pydantic models and enums are refused unless allowed, then round-trip."""
    for value in (Point(1, 2), Profile(name="a", tags=["x"]), Color.RED):
        with pytest.raises(UnsupportedValue, match="cannot store"):
            JsonSerializer().dumps_typed(value)
    allowing = JsonSerializer(allow=[Point, Profile, Color])
    assert round_trip([Point(1, 2), Profile(name="a", tags=["x"]), Color.RED], allowing) == [
        Point(1, 2),
        Profile(name="a", tags=["x"]),
        Color.RED,
    ]
    data = allowing.dumps_typed(Point(1, 2))
    with pytest.raises(CorruptValue, match="not allowed"):
        JsonSerializer().loads_typed(data)


def test_reading_never_imports_or_unpickles() -> None:
    """Other serializers' bytes, unknown tags and class names from storage are refused."""
    s = JsonSerializer()
    with pytest.raises(CorruptValue, match="cannot be read"):
        s.loads_typed(("pickle", pickle.dumps(Point(1, 2))))
    with pytest.raises(CorruptValue, match="cannot be read"):
        s.loads_typed(("msgpack", b"\x81"))
    forged = json.dumps({"__sqlstore__": "object", "type": "os:system", "data": {}}).encode()
    with pytest.raises(CorruptValue, match="not allowed"):
        s.loads_typed((JSON_TYPE, forged))
    forged_msg = {"__sqlstore__": "message", "class": "subprocess.Popen", "data": {}}
    with pytest.raises(CorruptValue, match="not allowed"):
        s.loads_typed((JSON_TYPE, json.dumps(forged_msg).encode()))
    with pytest.raises(CorruptValue, match="unknown tag"):
        s.loads_typed((JSON_TYPE, b'{"__sqlstore__": "eval"}'))
    with pytest.raises(CorruptValue, match="malformed"):
        s.loads_typed((JSON_TYPE, b'{"__sqlstore__": "bytes", "b64": "!!"}'))
    assert s.loads_typed(("null", b"")) is None


def test_unsupported_values_fail_loudly() -> None:
    """Functions, arbitrary objects and non-dict Interrupt schemas raise UnsupportedValue."""
    for value in (lambda: 1, object(), {"k": [object()]}, Interrupt(1, response_schema=int)):
        with pytest.raises(UnsupportedValue):
            JsonSerializer().dumps_typed(value)


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text() | st.binary(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=5) | st.integers(), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(JSONISH)
def test_property_round_trip(value: Any) -> None:
    """Random nestings of scalars, bytes, lists, tuples and dicts round-trip exactly."""
    assert round_trip(value) == value
