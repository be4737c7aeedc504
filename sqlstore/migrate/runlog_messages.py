"""Run-log ``message`` payloads ↔ ``Message`` (JSONL-FORMATS.md §1 mapping table).

Import keeps what the session model has no field for in ``Message.extra`` so that
export restores the original payload: ``runlog_type`` (the message type),
``runlog_at`` (the record time as written), ``runlog_activity`` (the activity
fields not mapped to a tool call or result, including ``kind``), ``runlog_fields``
(other unknown message keys), ``runlog_images`` and ``runlog_blobs`` (image
descriptors and the blob file name of each part, ``""`` when the blob is missing).
"""

from __future__ import annotations

import hashlib
import json
import mimetypes
from collections.abc import Mapping
from dataclasses import dataclass

from sqlstore.model import JSON, Message, Part, ToolCall, ToolResult

ROLE_OF_TYPE = {
    "instructions": "system",
    "user": "user",
    "checkpoint": "user",
    "attachment": "user",
    "bot": "assistant",
    "reasoning": "assistant",
}
"""Roles of the plain message types; ``activity`` depends on its kind; others are ``user``."""

_MAPPED_MESSAGE_KEYS = frozenset({"type", "text", "images", "activity"})


def as_text(value: JSON) -> str:
    """Return a string as is, anything else as compact JSON text."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _blob_name(image: JSON, blobs: Mapping[str, bytes]) -> str:
    if not isinstance(image, dict):
        return ""
    digest = image.get("digest")
    if not isinstance(digest, str) or not digest:
        return ""
    hex_digest = digest.split(":", 1)[1] if ":" in digest else digest
    for name in sorted(blobs):
        if name.split(".", 1)[0] == hex_digest:
            return name
    return ""


def message_from_runlog(payload: dict[str, JSON], at: str, blobs: Mapping[str, bytes]) -> Message:
    """Map one run-log message payload (recorded at ``at``) to a ``Message``.

    ``blobs`` maps file names of the run's ``.blobs`` folder to their bytes; an
    image whose blob is missing becomes a part with empty data (not an error).
    """
    mtype = payload.get("type")
    mtype = mtype if isinstance(mtype, str) else ""
    raw_text = payload.get("text", "")
    text = raw_text if isinstance(raw_text, str) else ""
    extra: dict[str, JSON] = {"runlog_type": mtype, "runlog_at": at}
    fields: dict[str, JSON] = (
        {}
        if payload.keys() <= _MAPPED_MESSAGE_KEYS  # the usual case: no unknown keys
        else {k: v for k, v in payload.items() if k not in _MAPPED_MESSAGE_KEYS}
    )
    if not isinstance(raw_text, str):
        fields["text"] = raw_text
    if fields:
        extra["runlog_fields"] = fields
    parts: list[Part] = []
    images = payload.get("images")
    if images is not None:
        extra["runlog_images"] = images
        if isinstance(images, list):
            names = [_blob_name(image, blobs) for image in images]
            extra["runlog_blobs"] = list(names)
            for image, name in zip(images, names, strict=True):
                mime = image.get("media_type", "") if isinstance(image, dict) else ""
                parts.append(
                    Part(
                        kind="image",
                        mime_type=mime if isinstance(mime, str) else "",
                        data=blobs.get(name, b""),
                    )
                )
    role = ROLE_OF_TYPE.get(mtype, "user")
    if mtype == "reasoning":
        return Message(role="assistant", reasoning=text, parts=parts, extra=extra)
    activity = payload.get("activity")
    if mtype != "activity" or not isinstance(activity, dict):
        if activity is not None:
            fields["activity"] = activity
            extra["runlog_fields"] = fields
        return Message(role=role, text=text, parts=parts, extra=extra)
    rest = dict(activity)
    kind = activity.get("kind")
    call_id = _pop_str(rest, "id")
    if kind == "request":
        name = _pop_str(rest, "name")
        args = _pop_str(rest, "arguments")
        extra["runlog_activity"] = rest
        call = ToolCall(id=call_id, name=name, args=args)
        return Message(role="assistant", text=text, tool_calls=[call], parts=parts, extra=extra)
    if kind == "response":
        result = activity.get("result", "")
        content = as_text(result)
        if isinstance(result, str):
            rest.pop("result", None)
        failure = activity.get("failure", "")
        extra["runlog_activity"] = rest
        outcome = ToolResult(call_id=call_id, content=content, is_error=failure not in ("", None))
        return Message(role="tool", text=text, tool_result=outcome, parts=parts, extra=extra)
    extra["runlog_activity"] = dict(activity)
    return Message(role=role, text=text, parts=parts, extra=extra)


def _pop_str(rest: dict[str, JSON], key: str) -> str:
    value = rest.get(key, "")
    if isinstance(value, str):
        rest.pop(key, None)
        return value
    return ""


@dataclass(frozen=True, slots=True)
class RunlogMessage:
    """One exported run-log message: payload, record time (``""`` = unknown) and blobs."""

    payload: dict[str, JSON]
    at: str
    blobs: dict[str, bytes]


def message_to_runlog(message: Message) -> list[RunlogMessage]:
    """Map a ``Message`` back to run-log message payloads (one per tool call for
    foreign assistant messages that carry several)."""
    extra = message.extra
    mtype = extra.get("runlog_type")
    at = extra.get("runlog_at", "")
    at = at if isinstance(at, str) else ""
    if not isinstance(mtype, str):
        return _foreign_message(message)
    text = message.reasoning if mtype == "reasoning" else message.text
    payload: dict[str, JSON] = {"type": mtype, "text": text}
    fields = extra.get("runlog_fields")
    if isinstance(fields, dict):
        payload.update(fields)
    activity = extra.get("runlog_activity")
    if isinstance(activity, dict):
        restored: dict[str, JSON] = {"kind": activity.get("kind")} if "kind" in activity else {}
        if message.tool_calls:
            call = message.tool_calls[0]
            restored.update({"id": call.id, "name": call.name, "arguments": call.args})
        elif message.tool_result is not None:
            result = message.tool_result
            restored.update({"id": result.call_id, "result": result.content})
        restored.update(activity)
        payload["activity"] = restored
    blobs: dict[str, bytes] = {}
    if "runlog_images" in extra:
        payload["images"] = extra["runlog_images"]
        names = extra.get("runlog_blobs")
        if isinstance(names, list):
            for name, part in zip(names, message.parts, strict=False):
                if isinstance(name, str) and name and part.data:
                    blobs[name] = part.data
    return [RunlogMessage(payload, at, blobs)]


def _foreign_message(message: Message) -> list[RunlogMessage]:
    """Best-effort mapping of a message that did not come from a run log."""
    images, blobs = _images_of(message.parts)
    out: list[RunlogMessage] = []

    def emit(payload: dict[str, JSON]) -> None:
        if images and not out:
            payload["images"] = images
        out.append(RunlogMessage(payload, "", blobs if len(out) == 0 else {}))

    if message.role == "system":
        emit({"type": "instructions", "text": message.text})
    elif message.role == "tool" and message.tool_result is not None:
        result = message.tool_result
        failure = result.content if result.is_error else ""
        activity = {"kind": "response", "id": result.call_id, "name": "", "result": result.content}
        emit({"type": "activity", "text": "", "activity": {**activity, "failure": failure}})
    elif message.role == "assistant":
        if message.reasoning:
            emit({"type": "reasoning", "text": message.reasoning})
        if message.text or not (message.reasoning or message.tool_calls):
            emit({"type": "bot", "text": message.text})
        for call in message.tool_calls:
            request = {"kind": "request", "id": call.id, "name": call.name, "arguments": call.args}
            emit({"type": "activity", "text": "", "activity": request})
    else:
        emit({"type": "attachment" if images else "user", "text": message.text})
    return out


def _images_of(parts: list[Part]) -> tuple[list[JSON], dict[str, bytes]]:
    images: list[JSON] = []
    blobs: dict[str, bytes] = {}
    for part in parts:
        if not part.data:
            continue
        digest = hashlib.sha256(part.data).hexdigest()
        ext = (mimetypes.guess_extension(part.mime_type) or ".bin").lstrip(".")
        blobs[f"{digest}.{ext}"] = part.data
        images.append({"digest": digest, "media_type": part.mime_type, "width": 0, "height": 0})
    return images, blobs
