"""OpenAI Agents SDK session items as sqlstore records — framework-free.

An item (``TResponseInputItem``: a JSON object) is stored as one event of type
``openai_agents.item``. Its JSON goes in ``data.item`` as is; an item the event
codec cannot carry verbatim (a lone surrogate in a string, NaN or an infinity)
goes in ``data.item_json`` as ``json.dumps`` text instead, so every item that
``SQLiteSession`` stores comes back equal. This module also derives what
sqlstore shows of a session: its title (the first user message), its turn
count (user messages), tool-call audit rows (a call paired with its output),
and a readable conversation of :class:`~sqlstore.model.Message` values.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlstore.audit import ToolCallRecord
from sqlstore.errors import StoreError
from sqlstore.events import Event
from sqlstore.integrations.item_stack import ITEM_EVENT
from sqlstore.model import JSON, Counters, Message, Part, ToolCall, ToolResult
from sqlstore.session import Session, clamp_title

MARKER_KEY = "openai_agents"
"""Snapshot ``extra`` key of an OpenAI Agents session: ``{"calls": {call id: [tool, args,
at_ns]}}`` (the tool calls still awaiting their output)."""

PENDING_CALLS_MAX = 256
"""Tool calls kept waiting for their output in the snapshot (the oldest are dropped)."""

TOOL_ERROR_PREFIX = "An error occurred while running the tool"
"""Start of the SDK's default tool failure text: such an output is audited as an error."""

_CALL_TYPES = frozenset(
    {
        "function_call",
        "custom_tool_call",
        "computer_call",
        "local_shell_call",
        "shell_call",
        "apply_patch_call",
    }
)
"""Item types answered by a ``<type>_output`` item with the same ``call_id``."""

_STRICT = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


class InvalidItem(StoreError, TypeError):
    """A session item is not a JSON object the store can keep; nothing was stored."""

    default_hint = "Session items must be JSON objects (dicts of str, numbers, lists, dicts)."


def item_events(items: Sequence[object], *, careful: bool = False) -> list[Event]:
    """Return one ``openai_agents.item`` event per item.

    The quick form only checks that every item is a dict, and leaves the JSON
    check to the store (which refuses the whole batch, storing nothing, when an
    event does not encode). ``careful=True`` encodes each item here: an item the
    event codec cannot carry verbatim goes in ``data.item_json``, and one that
    is not JSON at all is named by its index.

    Raises:
        InvalidItem: ``items`` is not a list, or an item is not a dict or (careful)
            not JSON-serialisable.
    """
    if isinstance(items, str | bytes | Mapping) or not isinstance(items, Sequence):
        raise InvalidItem(f"add_items takes a list of items, not {type(items).__name__}")
    events: list[Event] = []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise InvalidItem(f"item {index} is a {type(item).__name__}, not a JSON object")
        data: dict[str, JSON] = {"item": item}
        if careful:
            try:
                _STRICT.encode(item).encode("utf-8")  # what the event codec accepts
            except (ValueError, UnicodeEncodeError):
                try:
                    data = {"item_json": json.dumps(item)}
                except (TypeError, ValueError, RecursionError) as exc:
                    raise InvalidItem(f"item {index} is not JSON-serialisable: {exc}") from None
            except (TypeError, RecursionError) as exc:
                raise InvalidItem(f"item {index} is not JSON-serialisable: {exc}") from None
        events.append(Event(ITEM_EVENT, data=data))
    return events


def item_of(event: Event) -> dict[str, Any]:
    """Return the item an ``openai_agents.item`` event carries (see :func:`item_of_data`)."""
    return item_of_data(event.data)


def item_of_data(data: Mapping[str, JSON]) -> dict[str, Any]:
    """Return the item held in an ``openai_agents.item`` record's ``data``.

    Every backend decodes a record from its stored bytes on each read, so the
    item is the caller's own object, shared with no one.
    """
    item = data.get("item")
    if isinstance(item, dict):
        return item
    text = data.get("item_json")
    return json.loads(text) if isinstance(text, str) else {}


def text_of(content: object) -> str:
    """Return the text of a message item's ``content`` (a string or a list of parts)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts: list[str] = []
    for part in content:
        if isinstance(part, dict):
            for key in ("text", "refusal"):
                value = part.get(key)
                if isinstance(value, str):
                    texts.append(value)
    return "\n".join(texts)


def user_text(item: Mapping[str, Any]) -> str | None:
    """Return the text of a user message item, or None for any other item."""
    if item.get("role") != "user" or item.get("type", "message") != "message":
        return None
    return text_of(item.get("content"))


def audit_rows(
    session_id: str,
    items: Iterable[Mapping[str, Any]],
    pending: dict[str, JSON],
    now_ns: int,
    at: datetime,
) -> list[ToolCallRecord]:
    """Pair tool calls with their outputs; return an audit row per answered call.

    ``pending`` maps call ids to ``[tool, args, at_ns]`` of calls stored earlier
    and not yet answered; it is updated in place (calls added, answered ones
    removed, at most ``PENDING_CALLS_MAX`` kept). ``took_us`` is the time between
    the call's and the output's writes (0 within one ``add_items``).
    """
    rows: list[ToolCallRecord] = []
    batch: dict[str, tuple[str, str]] = {}
    for item in items:
        kind = item.get("type")
        call_id = item.get("call_id")
        if kind == "mcp_call":
            error = item.get("error")
            rows.append(
                ToolCallRecord(
                    session_id=session_id,
                    call_id=str(item.get("id", "")),
                    tool=str(item.get("name", "mcp")),
                    args=_text(item.get("arguments", "")),
                    result=_text(error if error else item.get("output", "")),
                    is_error=bool(error),
                    at=at,
                )
            )
            continue
        if not isinstance(kind, str) or not isinstance(call_id, str):
            continue
        if kind in _CALL_TYPES:
            tool = str(item.get("name") or kind.removesuffix("_call"))
            args = item.get("arguments", item.get("input", item.get("action", "")))
            batch[call_id] = (tool, _text(args))
        elif kind.removesuffix("_output") in _CALL_TYPES:
            took_us = 0
            if call_id in batch:
                tool, args = batch.pop(call_id)
            elif isinstance(known := pending.pop(call_id, None), list) and len(known) == 3:
                tool, args = str(known[0]), str(known[1])
                took_us = max(0, (now_ns - int(known[2])) // 1000)
            else:
                tool, args = kind.removesuffix("_call_output"), ""
            result = _text(item.get("output", ""))
            rows.append(
                ToolCallRecord(
                    session_id=session_id,
                    call_id=call_id,
                    tool=tool,
                    args=args,
                    result=result,
                    is_error=result.startswith(TOOL_ERROR_PREFIX) or item.get("status") == "failed",
                    at=at,
                    took_us=took_us,
                )
            )
    for call_id, (tool, args) in batch.items():
        pending[call_id] = [tool, args, now_ns]
    while len(pending) > PENDING_CALLS_MAX:
        del pending[next(iter(pending))]
    return rows


def _text(value: object) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def messages(items: Iterable[Mapping[str, Any]]) -> list[Message]:
    """Return a readable conversation: one message per item, tool calls on assistant turns."""
    out: list[Message] = []
    for item in items:
        kind = item.get("type", "message")
        role = item.get("role")
        if kind == "message" and isinstance(role, str):
            out.append(
                Message(
                    role="system" if role == "developer" else role,
                    text=text_of(item.get("content")),
                    parts=_parts(item.get("content")),
                )
            )
        elif kind in _CALL_TYPES or kind == "mcp_call":
            call = ToolCall(
                id=str(item.get("call_id", item.get("id", ""))),
                name=str(item.get("name") or str(kind).removesuffix("_call")),
                args=_text(item.get("arguments", item.get("input", item.get("action", "")))),
            )
            if out and out[-1].role == "assistant" and out[-1].tool_result is None:
                out[-1].tool_calls.append(call)
            else:
                out.append(Message(role="assistant", tool_calls=[call]))
            if kind == "mcp_call":
                error = item.get("error")
                content = _text(error if error else item.get("output", ""))
                out.append(_tool_message(call.id, content, bool(error)))
        elif isinstance(kind, str) and kind.removesuffix("_output") in _CALL_TYPES:
            content = _text(item.get("output", ""))
            out.append(
                _tool_message(
                    str(item.get("call_id", "")),
                    content,
                    content.startswith(TOOL_ERROR_PREFIX) or item.get("status") == "failed",
                )
            )
        elif kind == "reasoning":
            summary = text_of(item.get("summary")) or text_of(item.get("content"))
            out.append(Message(role="assistant", reasoning=summary or "(reasoning)"))
        else:
            out.append(Message(role=str(kind), text=_text(dict(item))))
    return out


def _tool_message(call_id: str, content: str, is_error: bool) -> Message:
    return Message(role="tool", tool_result=ToolResult(call_id, content, is_error))


def _parts(content: object) -> list[Part]:
    if not isinstance(content, list):
        return []
    parts: list[Part] = []
    for part in content:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind in ("input_image", "input_file", "input_audio"):
            url = part.get("image_url") or part.get("file_url") or part.get("file_id") or ""
            name = str(kind).removeprefix("input_")
            parts.append(Part(kind=name, url=str(url or part.get("filename", ""))))
    return parts


def marker(session: Session) -> dict[str, JSON]:
    """Return the session's ``openai_agents`` bookkeeping (a copy; empty when none)."""
    doc = session.extra.get(MARKER_KEY)
    return dict(doc) if isinstance(doc, dict) else {}


def after_add(
    base: Session,
    items: Sequence[Mapping[str, Any]],
    pending: dict[str, JSON],
    audited: int,
) -> Session:
    """Return the snapshot after ``add_items``: title, turn and tool-call counts, bookkeeping."""
    doc = marker(base)
    doc["calls"] = pending
    title, turns = base.title, base.counters.turns
    for item in items:
        text = user_text(item)
        if text is not None:
            turns += 1
            if not title and text.strip():
                title = clamp_title(text)
    counters = replace(base.counters, turns=turns, tool_calls=base.counters.tool_calls + audited)
    return _changed(base, doc, title=title, counters=counters)


def after_pop(base: Session, popped: Mapping[str, Any]) -> Session:
    """Return the snapshot after ``pop_item`` removed ``popped``."""
    doc = marker(base)
    counters = base.counters
    if user_text(popped) is not None:
        counters = replace(counters, turns=max(0, counters.turns - 1))
    return _changed(base, doc, title=base.title, counters=counters)


def _changed(base: Session, doc: dict[str, JSON], *, title: str, counters: Counters) -> Session:
    # A shallow copy: the snapshot is never changed in place (the store encodes it on save),
    # so the new one may share every unchanged field with ``base``.
    return replace(base, title=title, counters=counters, extra={**base.extra, MARKER_KEY: doc})


def listing_changed(base: Session, snap: Session) -> bool:
    """True when ``snap`` differs from ``base`` in what sqlstore stores for listing."""
    return (
        snap.title != base.title or snap.counters != base.counters or marker(snap) != marker(base)
    )
