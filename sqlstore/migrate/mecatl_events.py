"""mecatl event-log and tool-audit lines ↔ ``Event`` / ``ToolCallRecord`` (§2.3, §2.4).

Events use Go field names and ``null`` payloads. The fold payloads become the
``data`` keys of SPEC §2.4 (``ToolCall`` → ``call``, ``ToolResult`` → ``result``,
``Ask`` → ``ask``, ``Result`` → ``stop``/``usage``/``error``/``progress``,
``UserPrompt.Parts`` → ``parts``, ``CompactionArchive.Replaced`` → ``replaced``);
other non-null payloads and unknown keys stay in ``data`` under their own key.
Fields of a converted payload that have no SPEC key are kept in
``data["mecatl"][<payload>]`` so export gives back equal JSON.

Export checks each event by mapping it back: when the Go form would not give
the same ``Event`` (``data`` shaped in a way the Go payloads cannot hold, or
keys named like the Go fields), the original ``data`` is also written under
``SqlstoreData``, which import then takes verbatim. Events that came from mecatl
never need it.
"""

from __future__ import annotations

from typing import Any

from sqlstore import clock
from sqlstore.audit import ToolCallRecord
from sqlstore.events import Event
from sqlstore.migrate.mecatl_mapping import (
    ASK_KEYS,
    TOOL_CALL_KEYS,
    TOOL_RESULT_KEYS,
    MappingError,
    args_json,
    args_text,
    join,
    message_from_mecatl,
    message_to_mecatl,
    split,
    usage_from_go,
    usage_to_go,
)
from sqlstore.migrate.runlog_messages import as_text
from sqlstore.model import JSON, Message, Usage

EVENT_VERSION = "eventlog-json/1"
GAP_VERSION = "eventlog-gap/1"
GENERATION_VERSION = "eventlog-gen/1"
PAYLOAD_KEYS = (
    "ToolCall",
    "ToolResult",
    "Ask",
    "Result",
    "TurnEnd",
    "Hook",
    "Approval",
    "CompactionArchive",
    "UserPrompt",
    "Usage",
    "Subagent",
    "Team",
    "Parallel",
    "Schedule",
    "ModelRetry",
)
RESULT_KEYS = {"Stop": "stop", "Usage": "usage", "Error": "error", "Progress": "progress"}
SQLSTORE_DATA_KEY = "SqlstoreData"
_SCALARS = {"Type": "type", "Seq": "seq", "Turn": "turn", "Text": "text", "RunID": "run_id"}
_RESERVED = frozenset({*_SCALARS, "Actor", SQLSTORE_DATA_KEY})
_CONVERTED = ("call", "result", "ask", "stop", "usage", "error", "progress", "parts", "replaced")


def event_from_mecatl(raw: JSON) -> Event:
    """Map one ``ev`` object of an ``eventlog-json/1`` line to an ``Event``.

    Raises:
        MappingError: the object has no event type.
    """
    if not isinstance(raw, dict) or not isinstance(raw.get("Type"), str) or not raw["Type"]:
        raise MappingError("event has no Type")
    rest = dict(raw)
    verbatim = rest.pop(SQLSTORE_DATA_KEY, None)
    scalars, _ = split({k: rest.pop(k) for k in list(rest) if k in _SCALARS}, _SCALARS)
    data: dict[str, JSON] = {}
    kept: dict[str, JSON] = {}
    actor = rest.pop("Actor", None)
    if actor not in (None, ""):
        data["actor"] = actor
    for key in ("ToolCall", "ToolResult", "Ask", "Result", "UserPrompt", "CompactionArchive"):
        payload = rest.pop(key, None)
        if payload is None:
            continue
        if not isinstance(payload, dict):
            data[key] = payload
            continue
        leftover = _convert(key, payload, data)
        if leftover:
            kept[key] = leftover
    data.update({k: v for k, v in rest.items() if v is not None})
    if kept:
        data["mecatl"] = kept
    if isinstance(verbatim, dict):
        data = verbatim
    try:
        return Event(
            type=scalars["type"],
            seq=_int(scalars.get("seq")),
            turn=_int(scalars.get("turn")),
            text=_str(scalars.get("text")),
            run_id=_str(scalars.get("run_id")),
            data=data,
        )
    except TypeError as exc:
        raise MappingError(str(exc)) from None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _convert(key: str, payload: dict[str, JSON], data: dict[str, JSON]) -> dict[str, JSON]:
    """Move one fold payload into ``data``; return the fields that have no SPEC key."""
    if key == "ToolCall":
        call, rest = split(payload, TOOL_CALL_KEYS)
        data["call"] = {"id": "", "name": "", **call, "args": args_text(call.get("args"))}
    elif key == "ToolResult":
        result, rest = split(payload, TOOL_RESULT_KEYS)
        data["result"] = {"call_id": "", "content": "", "is_error": False, **result}
    elif key == "Ask":
        ask, rest = split(payload, ASK_KEYS)
        ask["args"] = args_text(ask.get("args"))
        data["ask"] = {"ask_id": "", "tool": "", "reason": "", **ask}
    elif key == "Result":
        result, rest = split(payload, RESULT_KEYS)
        if "usage" in result:
            result["usage"] = usage_from_go(result["usage"]).to_json()
        data.update(result)
    elif key == "UserPrompt":
        rest = dict(payload)
        if rest.get("Parts") is not None:
            data["parts"] = rest.pop("Parts")
    else:  # CompactionArchive
        rest = dict(payload)
        replaced = rest.pop("Replaced", None)
        if isinstance(replaced, list):
            data["replaced"] = [message_from_mecatl(m).to_json() for m in replaced]
        elif replaced is not None:
            rest["Replaced"] = replaced
    return rest


def event_to_mecatl(event: Event) -> dict[str, JSON]:
    """Map an ``Event`` back to the ``ev`` object of an ``eventlog-json/1`` line.

    The result always maps back to an equal ``Event`` (see ``SqlstoreData`` above).
    """
    try:
        out = _event_to_go(event)
        same = event_from_mecatl(out) == event
    except (MappingError, TypeError, ValueError):  # data the Go payloads cannot hold
        out = _event_to_go(Event(event.type, event.seq, event.turn, event.text, event.run_id))
        same = False
    if not same:
        out[SQLSTORE_DATA_KEY] = event.data
    return out


def _event_to_go(event: Event) -> dict[str, JSON]:
    data = dict(event.data)
    kept = data.pop("mecatl", None)
    kept = kept if isinstance(kept, dict) else {}
    out: dict[str, JSON] = {
        "Type": event.type,
        "Seq": event.seq,
        "Turn": event.turn,
        "Text": event.text,
    }
    out.update(dict.fromkeys(PAYLOAD_KEYS))
    out["RunID"] = event.run_id
    # mecatl's Actor is a principal object or null; a Go decoder rejects a string.
    # Anything else (a string stored by hand) goes through SqlstoreData instead.
    actor = data.pop("actor", None)
    out["Actor"] = actor if isinstance(actor, dict) else None
    call = data.pop("call", None)
    if isinstance(call, dict):
        mapped = {**call, "args": args_json(str(call.get("args", "")))}
        out["ToolCall"] = join(mapped, TOOL_CALL_KEYS, kept.get("ToolCall"))
    result = data.pop("result", None)
    if isinstance(result, dict):
        out["ToolResult"] = join(result, TOOL_RESULT_KEYS, kept.get("ToolResult"))
    ask = data.pop("ask", None)
    if isinstance(ask, dict):
        mapped = {**ask, "args": args_json(str(ask.get("args", "")))}
        out["Ask"] = join(mapped, ASK_KEYS, kept.get("Ask"))
    outcome: dict[str, JSON] = {k: data.pop(k) for k in RESULT_KEYS.values() if k in data}
    if outcome or "Result" in kept:
        usage = outcome.get("usage")
        if isinstance(usage, dict):
            outcome["usage"] = usage_to_go(Usage.from_json(usage))
        out["Result"] = join(outcome, RESULT_KEYS, kept.get("Result"))
    if "parts" in data or "UserPrompt" in kept:
        out["UserPrompt"] = {**(kept.get("UserPrompt") or {}), "Parts": data.pop("parts", None)}
    if "replaced" in data or "CompactionArchive" in kept:
        replaced = data.pop("replaced", None)
        archive = dict(kept.get("CompactionArchive") or {})
        if isinstance(replaced, list):
            archive["Replaced"] = [message_to_mecatl(Message.from_json(m)) for m in replaced]
        out["CompactionArchive"] = archive
    out.update({k: v for k, v in data.items() if k not in _RESERVED})
    return out


AUDIT_TYPE = "tool_call"


def audit_from_mecatl(raw: JSON, session_id: str) -> ToolCallRecord:
    """Map one ``.tools.jsonl`` line to a ``ToolCallRecord`` of ``session_id``.

    Raises:
        MappingError: the line is not a ``tool_call`` record.
    """
    if not isinstance(raw, dict) or raw.get("type") != AUDIT_TYPE:
        raise MappingError("not a tool_call record")
    at = raw.get("time")
    try:
        moment = clock.parse_rfc3339(at) if isinstance(at, str) and at else None
    except ValueError as exc:
        raise MappingError(str(exc)) from None
    return ToolCallRecord(
        session_id=session_id,
        call_id=_str(raw.get("call_id")),
        tool=_str(raw.get("tool")),
        args=args_text(raw.get("args")),
        result=as_text(raw.get("result", "")),
        is_error=raw.get("is_error") is True,
        at=moment,
        queued_us=_int(raw.get("queued_micros")),
        took_us=_int(raw.get("took_micros")),
        run_id=_str(raw.get("run_id")),
    )


def _str(value: JSON) -> str:
    return value if isinstance(value, str) else ""


def audit_to_mecatl(record: ToolCallRecord) -> dict[str, JSON]:
    """Map a ``ToolCallRecord`` back to a ``.tools.jsonl`` line object."""
    out: dict[str, JSON] = {
        "type": AUDIT_TYPE,
        "time": "" if record.at is None else clock.format_rfc3339(record.at),
        "session_id": record.session_id,
        "call_id": record.call_id,
        "tool": record.tool,
        "args": args_json(record.args),
        "result": record.result,
        "is_error": record.is_error,
        "queued_micros": record.queued_us,
        "took_micros": record.took_us,
    }
    if record.run_id:
        out["run_id"] = record.run_id
    return out
