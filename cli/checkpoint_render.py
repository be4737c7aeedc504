"""``sqlstore show`` for a graph thread: its latest checkpoint, summarised without the framework.

Values written by sqlstore's JSON serializer (``sqlstore-json/1``) are read as
plain JSON here — tags (``{"__sqlstore__": "message", ...}``) are interpreted
for display only, nothing is constructed — so this works without LangGraph
installed. Values of another serializer are shown by type and size. All
stored text is escaped (:func:`cli.render.visible`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from sqlstore.checkpoints import (
    EMPTY_BLOB_TYPE,
    JSON_TYPE,
    TAG_KEY,
    CheckpointEntry,
    ThreadSummary,
    decode_metadata,
)

from .render import human_bytes, one_line, visible

INTERRUPT_CHANNEL = "__interrupt__"
MESSAGES_CHANNEL = "messages"
TEXT_MAX_CHARS = 200
"""Longest message line ``show`` prints for one message part."""


def decoded(type_: str, data: bytes) -> Any:
    """Return the JSON document of a ``sqlstore-json/1`` value, or None for other types."""
    if type_ != JSON_TYPE:
        return None
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return None


def describe(value: Any) -> str:
    """Return a one-line description of a decoded value (tags shown by name)."""
    if isinstance(value, dict) and isinstance(value.get(TAG_KEY), str):
        tag = value[TAG_KEY]
        if tag == "interrupt":
            return one_line(_plain(value.get("value")), TEXT_MAX_CHARS)
        return f"<{visible(tag)}>"
    return one_line(_plain(value), TEXT_MAX_CHARS)


def _plain(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def checkpoint_lines(summary: ThreadSummary, entry: CheckpointEntry) -> Iterator[str]:
    """Yield the checkpoint section of ``sqlstore show``: step, channels, interrupts."""
    r = entry.record
    meta = decode_metadata(r.metadata)
    yield ""
    yield "latest checkpoint"
    fields = [
        ("id", r.checkpoint_id),
        ("namespace", r.ns or "(root)"),
        ("step", str(meta.get("step", ""))),
        ("source", str(meta.get("source", ""))),
        ("run id", str(meta.get("run_id", ""))),
        ("checkpoints", f"{summary.checkpoints} in {summary.namespaces} namespace(s)"),
        ("stored", f"{summary.blobs} channel values, {summary.writes} writes, "
         f"{human_bytes(summary.bytes)}"),
    ]  # fmt: skip
    width = max(len(k) for k, _ in fields)
    for key, value in fields:
        if value:
            yield f"  {key.ljust(width)}  {visible(value)}"
    channels = [
        f"{visible(ch)} ({'empty' if b.type == EMPTY_BLOB_TYPE else human_bytes(len(b.data))})"
        for ch, b in sorted(entry.blobs.items())
    ]
    yield f"  {'channels'.ljust(width)}  {', '.join(channels) if channels else '(none)'}"
    interrupts = [w for w in entry.writes if w.channel == INTERRUPT_CHANNEL]
    for w in interrupts:
        for value in _interrupt_values(decoded(w.type, w.data)):
            yield f"  {'interrupt'.ljust(width)}  {describe(value)}"
    pending = len(entry.writes) - len(interrupts)
    if pending:
        yield f"  {'pending'.ljust(width)}  {pending} write(s) of the next step"


def _interrupt_values(doc: Any) -> list[Any]:
    if isinstance(doc, dict) and doc.get(TAG_KEY) in ("tuple", "set"):
        doc = doc.get("items")
    return doc if isinstance(doc, list) else [doc]


def thread_conversation(entry: CheckpointEntry) -> Iterator[str]:
    """Yield the ``messages`` channel of a checkpoint as a transcript."""
    found = entry.blobs.get(MESSAGES_CHANNEL)
    if found is None:
        return
    messages = decoded(found.type, found.data)
    if not isinstance(messages, list):
        yield ""
        yield f"[messages: {visible(found.type)}, {human_bytes(len(found.data))}]"
        return
    for index, doc in enumerate(messages, start=1):
        yield ""
        yield from _message_lines(index, doc)


def _message_lines(index: int, doc: Any) -> Iterator[str]:
    data = doc.get("data") if isinstance(doc, dict) and doc.get(TAG_KEY) == "message" else None
    if not isinstance(data, dict):
        yield f"[{index}] {describe(doc)}"
        return
    role = str(data.get("type", "message"))
    name = f" {data['name']}" if isinstance(data.get("name"), str) else ""
    yield f"[{index}] {visible(role)}{visible(name)}"
    content = data.get("content")
    if isinstance(content, list):
        content = "\n".join(
            p if isinstance(p, str) else str(p.get("text", "")) for p in content if p
        )
    for text_line in str(content or "").splitlines():
        yield f"  {one_line(text_line, TEXT_MAX_CHARS)}"
    for call in data.get("tool_calls") or []:
        if isinstance(call, dict):
            args = json.dumps(call.get("args", {}), ensure_ascii=False)
            yield (
                f"  -> {visible(str(call.get('name', '')))}({one_line(args, TEXT_MAX_CHARS)})"
                f"  id={visible(str(call.get('id', '')))}"
            )
    if role == "tool" and data.get("tool_call_id"):
        yield f"  <- {visible(str(data['tool_call_id']))}"


def checkpoint_doc(summary: ThreadSummary, entry: CheckpointEntry) -> dict[str, Any]:
    """Return the ``--json`` form of the checkpoint section."""
    r = entry.record
    return {
        "checkpoint_id": r.checkpoint_id,
        "namespace": r.ns,
        "metadata": decode_metadata(r.metadata),
        "checkpoints": summary.checkpoints,
        "namespaces": summary.namespaces,
        "bytes": summary.bytes,
        "channels": {
            ch: decoded(b.type, b.data) if b.type == JSON_TYPE else None
            for ch, b in sorted(entry.blobs.items())
        },
        "pending_writes": [
            {"task_id": w.task_id, "channel": w.channel, "value": decoded(w.type, w.data)}
            for w in entry.writes
        ],
    }
