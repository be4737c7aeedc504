"""A decoded run log ↔ a session with its event log and audit rows (JSONL-FORMATS.md §1).

Import follows the mapping table of the format document. Record times that
the session model has no field for are kept where export can find them again:
``Message.extra["runlog_at"]`` and ``Event.data["at"]`` (the text as written).
Export (:func:`runlog_from_session`) inverts it; the round trip gives back the
same meta, current and discarded messages, events and result (the interleaving
of messages and events inside a segment follows the record times).
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from sqlstore import clock
from sqlstore.audit import ToolCallRecord
from sqlstore.events import Event
from sqlstore.jsonl import LineProblem
from sqlstore.migrate.items import ItemSkipped, LogEntry, SessionImport
from sqlstore.migrate.report import SKIP_NOT_A_SESSION
from sqlstore.migrate.runlog_messages import RunlogMessage, message_from_runlog, message_to_runlog
from sqlstore.model import JSON, Counters, Message, State, ToolCall, Usage
from sqlstore.runlog import DROPPED_EVENT_KINDS, Record, RunLog
from sqlstore.session import Session, clamp_title, one_line_error

INCOMPLETE_ERROR = "run log ended without a result record"
ARCHIVE_EVENT = "compaction.archive"
RESULT_EVENT = "result"
_META_LABELS = {"task": "task", "driver": "driver", "workdir": "workdir"}
_META_OPTIONAL_LABELS = {"resumedFrom": "resumed_from"}
_META_FIELDS = {"id", "model", "provider", *_META_LABELS, *_META_OPTIONAL_LABELS}
_RESULT_RENAMES = {"reason": "stop"}
_TOKEN_KEYS = {"inputTokens": "input_tokens", "outputTokens": "output_tokens"}


def _time(text: str) -> datetime | None:
    try:
        return clock.parse_rfc3339(text)
    except ValueError:
        return None


def session_from_runlog(
    log: RunLog, blobs: Mapping[str, bytes], mtime_ns: int, path: str
) -> SessionImport:
    """Map a decoded run log (id = its file stem) to a session import.

    Raises:
        ItemSkipped: the file is not a run log (no ``meta`` first record).
    """
    if not log.records or log.records[0].kind != "meta" or log.meta is None:
        raise ItemSkipped(SKIP_NOT_A_SESSION, "not a run log: the first record is not a meta")
    meta = log.meta
    warnings = list(log.problems)
    if meta.get("id") != log.id:
        warnings.append(
            LineProblem(path, log.records[0].line, f"meta.id {meta.get('id')!r} != file stem")
        )
    created = _time(log.records[0].at) or log.started or clock.from_ns(mtime_ns)
    labels: dict[str, str] = {}
    leftovers: dict[str, JSON] = {}
    for key, value in meta.items():
        label = _META_LABELS.get(key) or _META_OPTIONAL_LABELS.get(key)
        if label is not None and isinstance(value, str):
            labels[label] = value
        elif key not in _META_FIELDS or not isinstance(value, str):
            leftovers[key] = value
    model, provider = meta.get("model", ""), meta.get("provider", "")
    session = Session(
        id=log.id,
        created_at=created,
        title=clamp_title(labels.get("task", "")),
        model_id=model if isinstance(model, str) else "",
        provider_id=provider if isinstance(provider, str) else "",
        labels=labels,
        extra={"runlog_meta": leftovers} if leftovers else {},
    )
    out = SessionImport(session=session, modified_at_ns=mtime_ns, warnings=warnings)
    _replay(log, blobs, out, path)
    return out


def _replay(log: RunLog, blobs: Mapping[str, bytes], out: SessionImport, path: str) -> None:
    session = out.session
    session_id = session.id
    current: list[Message] = []
    requests: dict[str, tuple[str, ToolCall]] = {}
    result: Record | None = None
    add_entry = out.log.append
    for record in log.records[1:]:
        kind = record.kind
        if kind == "message":
            message = message_from_runlog(record.payload, record.at, blobs)
            current.append(message)
            if message.tool_calls or message.tool_result is not None:
                _pair_tool_call(session_id, message, record.at, requests, out.audit)
        elif kind == "event":
            payload = record.payload
            event_kind = payload.get("kind")
            if event_kind in DROPPED_EVENT_KINDS:
                continue
            if not isinstance(event_kind, str) or not event_kind:
                out.warnings.append(LineProblem(path, record.line, "event without a kind skipped"))
                continue
            text = payload.get("text", "")
            data = {k: v for k, v in payload.items() if k != "kind" and k != "text"}
            if not isinstance(text, str):
                data["text"], text = text, ""
            data["at"] = record.at
            add_entry(LogEntry(Event(type=event_kind, text=text, data=data)))
        elif kind == "reset":
            replaced: list[JSON] = [m.to_json() for m in current]
            archive = Event(type=ARCHIVE_EVENT, data={"replaced": replaced, "at": record.at})
            add_entry(LogEntry(archive))
            current = []
        elif kind == "result":
            result = record
    session.messages = current
    if result is None:
        session.state = State.FAILED
        session.stop_reason = "error"
        session.last_error = INCOMPLETE_ERROR
        out.incomplete = True
        return
    add_entry(LogEntry(_result_event(result)))
    _apply_result(session, result.payload)


def _pair_tool_call(
    session_id: str,
    message: Message,
    at: str,
    requests: dict[str, tuple[str, ToolCall]],
    audit: list[ToolCallRecord],
) -> None:
    """Turn an activity request + response pair into one audit row (at = response time)."""
    for call in message.tool_calls:
        requests[call.id] = (at, call)
    result = message.tool_result
    if result is None or result.call_id not in requests:
        return
    asked_at, request = requests.pop(result.call_id)
    start, end = _time(asked_at), _time(at)
    took_us = 0
    if start is not None and end is not None:
        # Whole microseconds between the two times (both exact to the microsecond).
        delta = end - start
        took_us = max(0, (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds)
    audit.append(
        ToolCallRecord(
            session_id=session_id,
            call_id=request.id,
            tool=request.name,
            args=request.args,
            result=result.content,
            is_error=result.is_error,
            at=end,
            took_us=took_us,
        )
    )


def _result_event(record: Record) -> Event:
    data: dict[str, JSON] = {}
    text = ""
    usage: dict[str, JSON] = {}
    for key, value in record.payload.items():
        if key == "message" and isinstance(value, str):
            text = value
        elif key in _TOKEN_KEYS:
            usage[_TOKEN_KEYS[key]] = value
        else:
            data[_RESULT_RENAMES.get(key, key)] = value
    if usage:
        data["usage"] = usage
    data["at"] = record.at
    return Event(type=RESULT_EVENT, text=text, data=data)


def _int(value: JSON) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _apply_result(session: Session, result: dict[str, JSON]) -> None:
    error = result.get("error")
    error = error if isinstance(error, str) else ""
    message = result.get("message")
    message = message if isinstance(message, str) else ""
    code = _int(result.get("code", 0))
    reason = result.get("reason")
    session.stop_reason = reason if isinstance(reason, str) else ""
    session.usage = Usage(
        input_tokens=_int(result.get("inputTokens")), output_tokens=_int(result.get("outputTokens"))
    )
    session.counters = Counters(
        turns=_int(result.get("iterations")), tool_calls=_int(result.get("calls"))
    )
    if error or code != 0:
        session.state = State.FAILED
        session.last_error = one_line_error(error or message or f"run ended with code {code}")
    else:
        session.state = State.COMPLETED


@dataclass(slots=True)
class RunlogExport:
    """The records of one exported run log (meta first) and the blobs of its images."""

    records: list[tuple[str, str, dict[str, JSON]]] = field(default_factory=list)
    blobs: dict[str, bytes] = field(default_factory=dict)


def runlog_from_session(session: Session, events: list[Event]) -> RunlogExport:
    """Map a session and its events (gaps left out) back to run-log records.

    Each record is ``(kind, at, payload)``; ``at`` falls back to the previous
    record's time (or ``created_at``) where the session kept none.
    """
    out = RunlogExport()
    created = clock.format_rfc3339(session.created_at)
    meta_extra = session.extra.get("runlog_meta")
    meta: dict[str, JSON] = {
        "id": session.id,
        "task": session.labels.get("task", session.title),
        "model": session.model_id,
        "provider": session.provider_id,
        "driver": session.labels.get("driver", ""),
        "workdir": session.labels.get("workdir", ""),
    }
    if "resumed_from" in session.labels:
        meta["resumedFrom"] = session.labels["resumed_from"]
    if isinstance(meta_extra, dict):
        meta.update(meta_extra)
    out.records.append(("meta", created, meta))
    pending: list[tuple[str, str, dict[str, JSON]]] = []
    result: dict[str, JSON] | None = None
    result_at = ""
    for event in events:
        at = event.data.get("at", "")
        at = at if isinstance(at, str) else ""
        if event.type == ARCHIVE_EVENT:
            replaced = event.data.get("replaced")
            replaced = replaced if isinstance(replaced, list) else []
            messages = [Message.from_json(m) for m in replaced]
            _flush(out, pending, messages)
            out.records.append(("reset", at, {}))
            pending = []
        elif event.type == RESULT_EVENT:
            result, result_at = _result_payload(event), at
        else:
            payload: dict[str, JSON] = {"kind": event.type}
            if event.text:
                payload["text"] = event.text
            payload.update({k: v for k, v in event.data.items() if k != "at"})
            pending.append(("event", at, payload))
    _flush(out, pending, session.messages)
    if result is None:
        result = _synthetic_result(session)
    if result is not None:
        out.records.append(("result", result_at, result))
    _fill_times(out.records, created)
    return out


def _flush(
    out: RunlogExport, events: list[tuple[str, str, dict[str, JSON]]], messages: list[Message]
) -> None:
    """Append one segment: its messages and events merged by record time."""
    mapped: list[RunlogMessage] = [m for message in messages for m in message_to_runlog(message)]
    for item in mapped:
        out.blobs.update(item.blobs)
    as_records = [("message", item.at, item.payload) for item in mapped]
    out.records.extend(heapq.merge(as_records, events, key=lambda r: _time(r[1]) or _NEVER))


_NEVER = datetime.max.replace(tzinfo=UTC)


def _result_payload(event: Event) -> dict[str, JSON]:
    renames = {v: k for k, v in _RESULT_RENAMES.items()}
    payload: dict[str, JSON] = {}
    if event.text:
        payload["message"] = event.text
    for key, value in event.data.items():
        if key == "at":
            continue
        if key == "usage" and isinstance(value, dict):
            for source, target in _TOKEN_KEYS.items():
                if target in value:
                    payload[source] = value[target]
            continue
        payload[renames.get(key, key)] = value
    return payload


def _synthetic_result(session: Session) -> dict[str, JSON] | None:
    if not session.state.terminal or session.last_error == INCOMPLETE_ERROR:
        return None
    failed = session.state is State.FAILED
    result: dict[str, JSON] = {"reason": session.stop_reason or str(session.state)}
    if failed:
        result["error"] = session.last_error
    result.update(
        {
            "code": 1 if failed else 0,
            "iterations": session.counters.turns,
            "calls": session.counters.tool_calls,
            "continuations": 0,
            "cycles": 0,
            "settles": 0,
        }
    )
    if not session.usage.is_zero():
        result["inputTokens"] = session.usage.input_tokens
        result["outputTokens"] = session.usage.output_tokens
    return result


def _fill_times(records: list[tuple[str, str, dict[str, JSON]]], created: str) -> None:
    last = created
    for index, (kind, at, payload) in enumerate(records):
        if at:
            last = at
        else:
            records[index] = (kind, last, payload)
