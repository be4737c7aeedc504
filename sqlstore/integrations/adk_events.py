"""Google ADK sessions as sqlstore records — framework-free.

An ADK ``Event`` is stored as one sqlstore event of type ``adk.event`` whose
``data`` is the event's JSON (``model_dump(mode="json", exclude_none=True)``).
This module derives what sqlstore shows of such a session: ids, the title
(the first user text), turn and tool-call counts, audit rows (a function call
paired with its response) and a readable conversation.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any
from urllib.parse import quote

from sqlstore.audit import ToolCallRecord
from sqlstore.model import JSON, Message, Principal, ToolCall, ToolResult

EVENT_TYPE = "adk.event"
"""Event type of one ADK event (``data``: the event's JSON)."""

MARKER_KEY = "adk"
"""Snapshot ``extra`` key of an ADK session: app, user, session id, session-scoped state,
last_update_time, and the function calls still awaiting their response."""

PENDING_CALLS_MAX = 256
"""Function calls kept waiting for their response in the snapshot (the oldest are dropped)."""


def session_key(app_name: str, user_id: str, session_id: str) -> str:
    """Return the sqlstore session id of an ADK session: ``adk/<app>/<user>/<id>``.

    Each part is percent-encoded (``/`` and ``%`` included), so two different
    (app, user, id) triples never share a sqlstore id.
    """
    return "adk/" + "/".join(quote(part, safe="") for part in (app_name, user_id, session_id))


def app_scope(app_name: str) -> str:
    """Return the scope id of an app's ``app:`` state."""
    return "adk-app/" + quote(app_name, safe="")


def user_scope(app_name: str, user_id: str) -> str:
    """Return the scope id of a user's ``user:`` state within an app."""
    return f"adk-user/{quote(app_name, safe='')}/{quote(user_id, safe='')}"


def owner(app_name: str, user_id: str) -> Principal:
    """Return the sqlstore owner of an ADK user's sessions: subject = user, issuer = app."""
    return Principal(issuer=f"adk:{app_name}", subject=user_id, name=user_id)


def parts_of(event: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Return the content parts of an event's JSON (``[]`` when it has none)."""
    content = event.get("content")
    parts = content.get("parts") if isinstance(content, Mapping) else None
    return [p for p in parts if isinstance(p, Mapping)] if isinstance(parts, list) else []


def text_of(event: Mapping[str, Any]) -> str:
    """Return the text parts of an event, joined by newlines (thoughts excluded)."""
    return "\n".join(
        str(p["text"])
        for p in parts_of(event)
        if isinstance(p.get("text"), str) and not p.get("thought")
    )


def is_user_text(event: Mapping[str, Any]) -> bool:
    """True for an event the user wrote that carries text (a turn)."""
    return event.get("author") == "user" and bool(text_of(event).strip())


def audit_rows(
    session_id: str,
    event: Mapping[str, Any],
    pending: dict[str, JSON],
    now_ns: int,
    at: datetime,
) -> list[ToolCallRecord]:
    """Pair function calls with their responses; return an audit row per response.

    ``pending`` maps call ids to ``[tool, args, at_ns]`` of calls not yet
    answered and is updated in place. ``is_error`` is set when the response
    object has an ``error`` key (ADK's convention for a failed tool).
    """
    rows: list[ToolCallRecord] = []
    for part in parts_of(event):
        call = part.get("function_call")
        if isinstance(call, Mapping) and isinstance(call.get("id"), str):
            args = json.dumps(call.get("args") or {}, ensure_ascii=False, sort_keys=True)
            pending[str(call["id"])] = [str(call.get("name", "")), args, now_ns]
        response = part.get("function_response")
        if isinstance(response, Mapping):
            call_id = str(response.get("id") or "")
            known = pending.pop(call_id, None)
            tool, args, took_us = str(response.get("name", "")), "", 0
            if isinstance(known, list) and len(known) == 3:
                tool, args = str(known[0]) or tool, str(known[1])
                took_us = max(0, (now_ns - int(str(known[2]))) // 1000)
            body = response.get("response")
            rows.append(
                ToolCallRecord(
                    session_id=session_id,
                    call_id=call_id,
                    tool=tool,
                    args=args,
                    result=json.dumps(body, ensure_ascii=False, sort_keys=True),
                    is_error=isinstance(body, Mapping) and "error" in body,
                    at=at,
                    took_us=took_us,
                    run_id=str(event.get("invocation_id", "")),
                )
            )
    while len(pending) > PENDING_CALLS_MAX:
        del pending[next(iter(pending))]
    return rows


def messages(events: Iterable[Mapping[str, Any]]) -> list[Message]:
    """Return a readable conversation: one message per event (role = author)."""
    out: list[Message] = []
    for event in events:
        author = str(event.get("author", ""))
        calls = [
            ToolCall(
                id=str(c.get("id", "")),
                name=str(c.get("name", "")),
                args=json.dumps(c.get("args") or {}, ensure_ascii=False),
            )
            for p in parts_of(event)
            if isinstance(c := p.get("function_call"), Mapping)
        ]
        responses = [
            r for p in parts_of(event) if isinstance(r := p.get("function_response"), Mapping)
        ]
        thoughts = "\n".join(
            str(p["text"])
            for p in parts_of(event)
            if p.get("thought") and isinstance(p.get("text"), str)
        )
        text = text_of(event)
        error = event.get("error_message") or event.get("error_code")
        if error:
            text = (text + "\n" if text else "") + f"[error] {error}"
        if text or calls or thoughts or not responses:
            role = "user" if author == "user" else (author or "model")
            out.append(Message(role=role, text=text, tool_calls=calls, reasoning=thoughts))
        for response in responses:
            body = response.get("response")
            out.append(
                Message(
                    role="tool",
                    text=str(response.get("name", "")),
                    tool_result=ToolResult(
                        call_id=str(response.get("id", "")),
                        content=json.dumps(body, ensure_ascii=False),
                        is_error=isinstance(body, Mapping) and "error" in body,
                    ),
                )
            )
    return out
