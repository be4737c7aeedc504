"""mecatl snapshot objects ↔ ``Session`` (JSONL-FORMATS.md §2.2).

Go-named structures map one to one after snake-casing (``MaxTurns`` →
``max_turns``, ``pending`` → ``pending_ask``); ``usage`` comes from
``token_usage.main.Total`` (else the legacy ``usage``). Every key without a field
of its own goes to ``extra`` unchanged. What the mapping must remember to give
the same JSON back on export lives in ``extra`` under ``mecatl_*`` keys:
unknown keys inside mapped structures (``mecatl_<field>_extra``), a kind this
version does not know (``mecatl_kind``/``mecatl_relationship``), an absent
``kind`` (``mecatl_kind_absent``), a legacy ``usage`` that differs from what
export would write (``mecatl_usage``), and keys that collide with sqlstore's own
snapshot keys (``mecatl_clash``).
"""

from __future__ import annotations

import json
from typing import Any

from sqlstore import clock
from sqlstore.errors import InvalidSessionMetadata
from sqlstore.model import (
    JSON,
    ROLES,
    Ask,
    Counters,
    Kind,
    Limits,
    Message,
    Part,
    Principal,
    Relationship,
    State,
    ToolCall,
    ToolResult,
    Usage,
    validate_kind,
)
from sqlstore.session import Session, session_fields
from sqlstore.snapshot import to_json

LIMITS_KEYS = {
    "MaxTurns": "max_turns",
    "MaxToolCalls": "max_tool_calls",
    "MaxConsecutiveFailures": "max_consecutive_failures",
}
COUNTERS_KEYS = {
    "Turns": "turns",
    "ToolCalls": "tool_calls",
    "ConsecutiveFailures": "consecutive_failures",
}
USAGE_KEYS = {
    "InputTokens": "input_tokens",
    "OutputTokens": "output_tokens",
    "CacheReadTokens": "cache_read_tokens",
    "CacheWriteTokens": "cache_write_tokens",
    "ReasoningTokens": "reasoning_tokens",
}
OWNER_KEYS = {"Issuer": "issuer", "Subject": "subject", "GrantType": "grant_type", "Name": "name"}
ASK_KEYS = {"AskID": "ask_id", "Tool": "tool", "Args": "args", "Reason": "reason"}
TOOL_CALL_KEYS = {"ID": "id", "Name": "name", "Args": "args"}
TOOL_RESULT_KEYS = {"CallID": "call_id", "Content": "content", "IsError": "is_error"}
RELATIONSHIP_KEYS = {k: k for k in Relationship().to_json()}
_STRING_FIELDS = ("mode", "stop_reason", "title", "provider_id", "model_id", "last_error", "run_id")
_SQLSTORE_KEYS = frozenset(session_fields()) | {"v"}
_MARK = "mecatl_"


class MappingError(ValueError):
    """A mecatl object cannot be mapped to the session model."""


def split(raw: JSON, names: dict[str, str]) -> tuple[dict[str, Any], dict[str, JSON]]:
    """Rename the known keys of ``raw`` (Go → snake) and return them with the leftovers."""
    if not isinstance(raw, dict):
        return {}, {}
    mapped = {names[k]: v for k, v in raw.items() if k in names and v is not None}
    rest = {k: v for k, v in raw.items() if k not in names}
    return mapped, rest


def join(mapped: dict[str, JSON], names: dict[str, str], rest: JSON) -> dict[str, JSON]:
    """Inverse of :func:`split`: snake keys back to Go names, then the leftovers."""
    back = {snake: go for go, snake in names.items()}
    out = {back[k]: v for k, v in mapped.items() if k in back}
    if isinstance(rest, dict):
        out.update(rest)
    return out


def args_text(value: JSON) -> str:
    """Raw JSON arguments as compact JSON text (``""`` for null)."""
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def args_json(text: str) -> JSON:
    """JSON text back to a raw JSON value (null for ``""``; non-JSON text stays a string)."""
    if not text:
        return None
    try:
        value: JSON = json.loads(text)
    except ValueError:
        return text
    return value


def usage_from_go(raw: JSON) -> Usage:
    """A Go ``Usage`` object to ``Usage``."""
    return Usage.from_json(split(raw, USAGE_KEYS)[0])


def usage_to_go(usage: Usage) -> dict[str, JSON]:
    """``Usage`` to a Go ``Usage`` object."""
    return join(usage.to_json(), USAGE_KEYS, None)


def message_from_mecatl(raw: JSON) -> Message:
    """Map one mecatl message to a ``Message`` (unknown keys go to ``extra``)."""
    if not isinstance(raw, dict):
        raise MappingError("message is not an object")
    rest = dict(raw)
    role = rest.pop("role", "user")
    if role not in ROLES:
        raise MappingError(f"message role {role!r} is not one of {sorted(ROLES)}")
    extra: dict[str, JSON] = {}
    calls: list[ToolCall] = []
    call_rests: list[JSON] = []
    for call in rest.pop("tool_calls", None) or []:
        mapped, leftover = split(call, TOOL_CALL_KEYS)
        mapped["args"] = args_text(mapped.get("args"))
        calls.append(ToolCall.from_json(mapped))
        call_rests.append(leftover)
    if any(call_rests):
        extra["mecatl_tool_calls_extra"] = call_rests
    result = None
    raw_result = rest.pop("tool_result", None)
    if raw_result is not None:
        mapped, leftover = split(raw_result, TOOL_RESULT_KEYS)
        result = ToolResult.from_json(mapped)
        if leftover:
            extra["mecatl_tool_result_extra"] = leftover
    parts = [Part.from_json(p) for p in rest.pop("parts", None) or []]
    text, reasoning = rest.pop("text", ""), rest.pop("reasoning", "")
    extra.update(rest)
    return Message(
        role=role,
        text=text if isinstance(text, str) else "",
        tool_calls=calls,
        tool_result=result,
        parts=parts,
        reasoning=reasoning if isinstance(reasoning, str) else "",
        extra=extra,
    )


def message_to_mecatl(message: Message) -> dict[str, JSON]:
    """Map a ``Message`` back to a mecatl message object."""
    extra = message.extra
    out: dict[str, JSON] = {"role": message.role, "text": message.text}
    if message.tool_calls:
        rests = extra.get("mecatl_tool_calls_extra")
        rests = rests if isinstance(rests, list) else []
        out["tool_calls"] = [
            join(
                {"id": c.id, "name": c.name, "args": args_json(c.args)},
                TOOL_CALL_KEYS,
                rests[i] if i < len(rests) else None,
            )
            for i, c in enumerate(message.tool_calls)
        ]
    if message.tool_result is not None:
        out["tool_result"] = join(
            message.tool_result.to_json(), TOOL_RESULT_KEYS, extra.get("mecatl_tool_result_extra")
        )
    if message.reasoning:
        out["reasoning"] = message.reasoning
    if message.parts:
        out["parts"] = [p.to_json() for p in message.parts]
    out.update({k: v for k, v in extra.items() if not k.startswith(_MARK)})
    return out


def session_from_snapshot(raw: JSON) -> Session:
    """Map a mecatl snapshot object to a valid ``Session`` (one ``snapshot.encode`` accepts).

    Raises:
        MappingError: the snapshot is not one (no usable id, state or created_at,
            a value of the wrong type, an invalid kind or id, ...).
    """
    try:
        session = _session_from_snapshot(raw)
        to_json(session)  # validates id, kind and relationship, pending ask, extra keys
    except MappingError:
        raise
    except (TypeError, ValueError, AttributeError) as exc:
        raise MappingError(f"not a mecatl snapshot: {exc}") from None
    return session


def _session_from_snapshot(raw: JSON) -> Session:
    if not isinstance(raw, dict) or not raw:
        raise MappingError("snapshot is empty or not an object")
    rest = dict(raw)
    session_id = rest.pop("id", None)
    if not isinstance(session_id, str) or not session_id:
        raise MappingError("snapshot has no id")
    extra: dict[str, JSON] = {}
    try:
        state = State(rest.pop("state", "idle") or "idle")
        created = clock.parse_rfc3339(str(rest.pop("created_at", "")))
        messages = [message_from_mecatl(m) for m in rest.pop("messages", None) or []]
    except ValueError as exc:
        raise MappingError(f"snapshot {session_id!r}: {exc}") from None
    session = Session(id=session_id, state=state, created_at=created, messages=messages)
    for name in _STRING_FIELDS:
        value = rest.pop(name, None)
        if isinstance(value, str):
            setattr(session, name, value)
        elif value is not None:
            extra.setdefault("mecatl_clash", {})[name] = value
    structures = (("limits", LIMITS_KEYS, Limits), ("counters", COUNTERS_KEYS, Counters))
    for key, names, kind in structures:
        mapped, leftover = split(rest.pop(key, None), names)
        setattr(session, key, kind.from_json(mapped))
        if leftover:
            extra[f"mecatl_{key}_extra"] = leftover
    _map_kind(session, rest, extra)
    owner = rest.pop("owner", None)
    if isinstance(owner, dict):
        mapped, leftover = split(owner, OWNER_KEYS)
        session.owner = Principal.from_json(mapped)
        if leftover:
            extra["mecatl_owner_extra"] = leftover
    pending = rest.pop("pending", None)
    if isinstance(pending, dict) and state is State.AWAITING:
        mapped, leftover = split(pending, ASK_KEYS)
        mapped["args"] = args_text(mapped.get("args"))
        session.pending_ask = Ask.from_json(mapped)
        if leftover:
            extra["mecatl_pending_extra"] = leftover
    elif pending is not None:
        extra["pending"] = pending
    elif state is State.AWAITING:
        session.pending_ask = Ask()
    _map_usage(session, rest, extra)
    labels = rest.pop("labels", None)
    if isinstance(labels, dict) and all(isinstance(v, str) for v in labels.values()):
        session.labels = dict(labels)
    elif labels is not None:
        extra.setdefault("mecatl_clash", {})["labels"] = labels
    for key, value in rest.items():
        if key in _SQLSTORE_KEYS:
            extra.setdefault("mecatl_clash", {})[key] = value
        else:
            extra[key] = value
    session.extra = extra
    return session


def _map_kind(session: Session, rest: dict[str, JSON], extra: dict[str, JSON]) -> None:
    if "kind" not in rest:
        extra["mecatl_kind_absent"] = True
    raw_kind = rest.pop("kind", None) or "main"
    raw_rel = rest.pop("relationship", None)
    mapped, leftover = split(raw_rel, RELATIONSHIP_KEYS)
    try:
        kind = Kind(raw_kind)
        relationship = Relationship.from_json(mapped)
        validate_kind(kind, relationship)
    except (ValueError, TypeError, InvalidSessionMetadata):
        extra["mecatl_kind"] = raw_kind
        extra["mecatl_relationship"] = raw_rel
        session.kind = Kind.UNKNOWN  # retention never deletes what it cannot classify
        return
    session.kind, session.relationship = kind, relationship
    if leftover:
        extra["mecatl_relationship_extra"] = leftover


def _map_usage(session: Session, rest: dict[str, JSON], extra: dict[str, JSON]) -> None:
    legacy = rest.pop("usage", None)
    token_usage = rest.get("token_usage")
    main = token_usage.get("main") if isinstance(token_usage, dict) else None
    total = main.get("Total") if isinstance(main, dict) else None
    try:
        session.usage = usage_from_go(total if isinstance(total, dict) else legacy)
    except TypeError:
        session.usage = Usage()
    expected = None if session.usage.is_zero() else usage_to_go(session.usage)
    if legacy != expected:
        extra["mecatl_usage"] = legacy


def session_to_snapshot(session: Session) -> dict[str, JSON]:
    """Map a ``Session`` back to a mecatl snapshot object."""
    extra = session.extra
    out: dict[str, JSON] = {
        "id": session.id,
        "state": str(session.state),
        "mode": session.mode,
        "limits": join(session.limits.to_json(), LIMITS_KEYS, extra.get("mecatl_limits_extra")),
        "counters": join(
            session.counters.to_json(), COUNTERS_KEYS, extra.get("mecatl_counters_extra")
        ),
        "created_at": clock.format_rfc3339(session.created_at),
        "messages": [message_to_mecatl(m) for m in session.messages],
    }
    for name in _STRING_FIELDS[1:]:
        if getattr(session, name):
            out[name] = getattr(session, name)
    if "mecatl_kind" in extra:
        out["kind"] = extra["mecatl_kind"]
        out["relationship"] = extra.get("mecatl_relationship")
    else:
        if not extra.get("mecatl_kind_absent"):
            out["kind"] = str(session.kind)
        rel_extra = extra.get("mecatl_relationship_extra")
        if not session.relationship.is_empty() or rel_extra:
            out["relationship"] = join(session.relationship.to_json(), RELATIONSHIP_KEYS, rel_extra)
    if session.owner is not None:
        out["owner"] = join(session.owner.to_json(), OWNER_KEYS, extra.get("mecatl_owner_extra"))
    ask = session.pending_ask
    if ask is not None and ask != Ask():
        mapped: dict[str, JSON] = {**ask.to_json(), "args": args_json(ask.args)}
        out["pending"] = join(mapped, ASK_KEYS, extra.get("mecatl_pending_extra"))
    if "mecatl_usage" in extra:
        out["usage"] = extra["mecatl_usage"]
    elif not session.usage.is_zero():
        out["usage"] = usage_to_go(session.usage)
    if session.labels:
        out["labels"] = dict(session.labels)
    for key, value in extra.items():
        if not key.startswith(_MARK):
            out[key] = value
    clash = extra.get("mecatl_clash")
    if isinstance(clash, dict):
        out.update(clash)
    return out
