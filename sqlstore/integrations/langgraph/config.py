"""Translation between LangGraph's configs, checkpoints and writes and the checkpoint port."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_serializable_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from sqlstore.checkpoint_documents import CheckpointDocument
from sqlstore.checkpoints import (
    EMPTY_BLOB_TYPE,
    ChannelBlob,
    CheckpointEntry,
    CheckpointRecord,
    PendingWrite,
)
from sqlstore.errors import StoreError
from sqlstore.integrations.langgraph.serde import CorruptValue, JsonSerializer

TITLE_MAX_CHARS = 80
"""Longest session title taken from a thread's first user message."""

DEFAULT_TITLE = "LangGraph thread"


class InvalidConfig(StoreError, ValueError):
    """A LangGraph config without what the call needs (``thread_id``, ``checkpoint_id``)."""


def configurable(config: RunnableConfig | None) -> Mapping[str, Any]:
    """Return ``config["configurable"]`` (empty when absent)."""
    if config is None:
        return {}
    found = config.get("configurable")
    if found is None:
        return {}
    if type(found) is not dict and not isinstance(found, Mapping):
        raise InvalidConfig("config['configurable'] must be a mapping")
    return found


def thread_of(config: RunnableConfig | None) -> str:
    """Return the config's thread id as text.

    Raises:
        InvalidConfig: no ``thread_id`` in ``config["configurable"]``.
    """
    value = configurable(config).get("thread_id")
    if value is None or value == "":
        raise InvalidConfig(
            "the config has no thread_id",
            hint="Pass config={'configurable': {'thread_id': '...'}} to the graph call.",
        )
    return str(value)


def ns_of(config: RunnableConfig | None, default: str | None = "") -> str | None:
    """Return the config's ``checkpoint_ns`` (``default`` when absent)."""
    value = configurable(config).get("checkpoint_ns", default)
    return None if value is None else str(value)


def checkpoint_id_of(config: RunnableConfig | None) -> str | None:
    """Return the config's ``checkpoint_id``, or None."""
    value = configurable(config).get("checkpoint_id")
    return None if value in (None, "") else str(value)


def stored_config(thread_id: str, ns: str, checkpoint_id: str) -> RunnableConfig:
    """Return the config naming one stored checkpoint."""
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": ns,
            "checkpoint_id": checkpoint_id,
        }
    }


def to_record(
    serde: SerializerProtocol,
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    new_versions: ChannelVersions,
) -> tuple[CheckpointRecord, list[ChannelBlob], dict[str, Any]]:
    """Encode a put: the record, blobs of the channels in ``new_versions``, and the values.

    Raises:
        InvalidConfig: no thread id.
        UnsupportedValue: a value the serializer refuses (nothing is stored).
    """
    thread_id = thread_of(config)
    ns = ns_of(config) or ""
    body: dict[str, Any] = dict(checkpoint)
    values: dict[str, Any] = body.pop("channel_values", None) or {}
    blobs = []
    for channel, version in new_versions.items():
        if channel in values:
            type_, data = serde.dumps_typed(values[channel])
            blobs.append(ChannelBlob(channel, str(version), type_, data))
        else:
            blobs.append(ChannelBlob(channel, str(version), EMPTY_BLOB_TYPE, b""))
    type_, raw = serde.dumps_typed(body)
    meta = get_serializable_checkpoint_metadata(config, metadata)
    versions = {ch: str(v) for ch, v in checkpoint["channel_versions"].items()}
    record = CheckpointRecord(
        thread_id=thread_id,
        ns=ns,
        checkpoint_id=str(checkpoint["id"]),
        parent_id=checkpoint_id_of(config),
        type=type_,
        body=raw,
        metadata=_METADATA_CODEC.dumps(dict(meta)),
        versions=versions,
    )
    return record, blobs, values


def to_writes(
    serde: SerializerProtocol, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str
) -> tuple[list[PendingWrite], bool]:
    """Encode a put_writes call; the flag is True when every write is a special channel.

    Special channels (errors, interrupts, ...) have fixed negative indices and
    replace what is stored; other writes keep the first value per (task_id, idx).
    """
    out = []
    for idx, (channel, value) in enumerate(writes):
        type_, data = serde.dumps_typed(value)
        out.append(
            PendingWrite(
                str(task_id), WRITES_IDX_MAP.get(channel, idx), channel, type_, data, task_path
            )
        )
    return out, all(channel in WRITES_IDX_MAP for channel, _ in writes)


def to_tuple(serde: SerializerProtocol, entry: CheckpointEntry) -> CheckpointTuple:
    """Decode a stored checkpoint into LangGraph's ``CheckpointTuple``."""
    r = entry.record
    checkpoint = serde.loads_typed((r.type, r.body))
    checkpoint["channel_values"] = {
        ch: serde.loads_typed((b.type, b.data))
        for ch, b in entry.blobs.items()
        if b.type != EMPTY_BLOB_TYPE
    }
    metadata = _METADATA_CODEC.loads(r.metadata)
    writes = [(w.task_id, w.channel, serde.loads_typed((w.type, w.data))) for w in entry.writes]
    parent = None if r.parent_id is None else stored_config(r.thread_id, r.ns, r.parent_id)
    return CheckpointTuple(
        config=stored_config(r.thread_id, r.ns, r.checkpoint_id),
        checkpoint=checkpoint,
        metadata=metadata,
        parent_config=parent,
        pending_writes=writes,
    )


def document_tuple(serde: JsonSerializer, doc: CheckpointDocument) -> CheckpointTuple | None:
    """Decode a listed checkpoint's JSON text with one parse; None when it must be read whole.

    None also for a text of any other shape than ``checkpoint_documents``
    describes (stored bytes are untrusted): the caller then reads the
    checkpoint piece by piece, which reports what is wrong with it.
    """
    if doc.text is None:
        return None
    try:
        checkpoint, values, metadata, writes = serde.loads_text(doc.text)
        checkpoint["channel_values"] = values
        pending = [(task, channel, value) for task, channel, value in writes]
    except (CorruptValue, ValueError, TypeError):
        return None
    if not (type(checkpoint) is dict and type(values) is dict and type(metadata) is dict):
        return None
    parent = doc.parent_id
    return CheckpointTuple(
        config=stored_config(doc.thread_id, doc.ns, doc.checkpoint_id),
        checkpoint=checkpoint,  # type: ignore[arg-type]
        metadata=metadata,  # type: ignore[arg-type]
        parent_config=None if parent is None else stored_config(doc.thread_id, doc.ns, parent),
        pending_writes=pending,
    )


_METADATA_CODEC = JsonSerializer()
"""Metadata is always JSON (whatever serde the saver uses), so listings can filter it."""


def title_from(values: Mapping[str, Any]) -> str:
    """Return a session title: the start of the first user message in the values, if any."""
    for key in ("messages", "__start__"):
        found = values.get(key)
        if key == "__start__" and isinstance(found, Mapping):
            found = found.get("messages")
        text = _first_user_text(found)
        if text:
            line = " ".join(text.split())
            return line if len(line) <= TITLE_MAX_CHARS else line[: TITLE_MAX_CHARS - 1] + "…"
    return DEFAULT_TITLE


def _first_user_text(messages: Any) -> str:
    if isinstance(messages, (str, BaseMessage, tuple)):
        messages = [messages]
    if not isinstance(messages, list):
        return ""
    for m in messages:
        if isinstance(m, BaseMessage) and m.type == "human":
            return content_text(m.content)
        if isinstance(m, str):
            return m
        if isinstance(m, tuple) and len(m) == 2 and m[0] in ("user", "human"):
            return str(m[1])
        if isinstance(m, Mapping) and m.get("role") in ("user", "human"):
            return str(m.get("content", ""))
    return ""


def content_text(content: Any) -> str:
    """Return the text of a message content: a string, or the text parts of a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            p if isinstance(p, str) else str(p.get("text", ""))
            for p in content
            if isinstance(p, str) or (isinstance(p, Mapping) and p.get("type") == "text")
        ]
        return " ".join(parts)
    return ""
