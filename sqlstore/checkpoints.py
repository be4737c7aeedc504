"""Checkpoint data of graph-framework threads (LangGraph's model), framework-neutral.

A *thread* is a sqlstore session (its id is the session id). Within a thread,
checkpoints live in namespaces (``ns``, ``""`` for the root graph) and are
ordered by their id (LangGraph's ids sort by time). A checkpoint is stored as:

* a :class:`CheckpointRecord` — the encoded checkpoint without its channel
  values, its metadata (a JSON object), its parent's id, and ``versions``: the
  version of every channel it holds, which names the blob to read;
* :class:`ChannelBlob` rows keyed (thread, ns, channel, version), written only
  for the channels a put names as new, so an unchanged value is stored once
  however many checkpoints refer to it (``type == EMPTY_BLOB_TYPE`` records a
  channel that had a version but no value);
* :class:`PendingWrite` rows of the tasks that ran on top of the checkpoint,
  idempotent on (task_id, idx) and returned in :func:`write_order`.

This module holds only values and rules; ``sqlstore.ports.CheckpointStore`` is
the port and each backend implements it. Bodies, blobs and write values are
opaque bytes to the store; only ``metadata`` is decoded (to filter a listing).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from sqlstore.errors import StoreError
from sqlstore.model import validate_session_id

if TYPE_CHECKING:
    from sqlstore.session import Session

JSON_TYPE = "sqlstore-json/1"
"""Type name of values encoded by sqlstore's JSON serializer (LangGraph integration).

The bytes are UTF-8 JSON. Values JSON has no form for are objects whose
``TAG_KEY`` member names the type (``"message"``, ``"send"``, ``"tuple"``, ...);
docs/formats.md lists them. Tools that only display data (``sqlstore show``)
read it without the framework installed.
"""

TAG_KEY = "__sqlstore__"
"""The member that marks a tagged value in ``JSON_TYPE`` data."""

EMPTY_BLOB_TYPE = "empty"
"""Blob type of a channel that has a version but no value (it is left out on read)."""

CHECKPOINT_PAGE_ROWS = 100
"""Checkpoints read per short read transaction when listing."""

PruneStrategy = Literal["keep_latest", "delete"]

CheckpointKey = tuple[str, str, str]
"""Listing position: (checkpoint_id, thread_id, ns); listings run in descending key order."""


class InvalidCheckpoint(StoreError, ValueError):
    """A checkpoint, write or query is malformed (bad id, metadata not a JSON object, ...)."""


@dataclass(frozen=True, slots=True)
class ChannelBlob:
    """One channel's value at one version, encoded by the framework's serializer."""

    channel: str
    version: str
    type: str
    data: bytes


@dataclass(frozen=True, slots=True)
class PendingWrite:
    """One write of a task on top of a checkpoint; ``idx`` < 0 marks a special channel."""

    task_id: str
    idx: int
    channel: str
    type: str
    data: bytes
    task_path: str = ""


@dataclass(frozen=True, slots=True)
class CheckpointRecord:
    """A checkpoint without its channel values (those are :class:`ChannelBlob` rows)."""

    thread_id: str
    ns: str
    checkpoint_id: str
    parent_id: str | None
    type: str
    body: bytes
    metadata: bytes
    versions: Mapping[str, str] = field(default_factory=dict)

    @property
    def run_id(self) -> str | None:
        """The ``run_id`` of the metadata, when it is a string."""
        value = decode_metadata(self.metadata).get("run_id")
        return value if isinstance(value, str) else None


@dataclass(frozen=True, slots=True)
class CheckpointEntry:
    """A stored checkpoint with the blobs its versions name and its pending writes."""

    record: CheckpointRecord
    blobs: Mapping[str, ChannelBlob]
    writes: list[PendingWrite]

    @property
    def key(self) -> CheckpointKey:
        """The listing position of this checkpoint."""
        r = self.record
        return (r.checkpoint_id, r.thread_id, r.ns)


@dataclass(frozen=True, slots=True)
class CheckpointQuery:
    """What to list: every field set narrows it (``None`` = any).

    ``before`` keeps checkpoints whose id is strictly less; ``filter`` keeps
    those whose metadata has every key with an equal value (compared on the
    decoded JSON, never written into a query language).
    """

    thread_id: str | None = None
    ns: str | None = None
    checkpoint_id: str | None = None
    before: str | None = None
    filter: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class CheckpointPage:
    """One page of a listing: the matching entries among the rows read, and where to go on.

    ``next`` is the key of the last row read (matching or not) when more rows
    may follow, else ``None``; a page may hold fewer entries than asked, even
    none, while ``next`` is set.
    """

    entries: list[CheckpointEntry]
    next: CheckpointKey | None


CheckpointPut = tuple[CheckpointRecord, Sequence[ChannelBlob], "Session | None"]
"""One checkpoint of ``CheckpointStore.put_many``: (record, blobs, session or None)."""


@dataclass(frozen=True, slots=True)
class ThreadSummary:
    """Counts of one thread's checkpoint data (for ``sqlstore show`` and ``stats``)."""

    checkpoints: int
    namespaces: int
    blobs: int
    writes: int
    bytes: int


def all_entries(port: Any, thread_id: str) -> list[CheckpointEntry]:
    """Read every checkpoint of a thread from a ``CheckpointStore``, page by page."""
    query = CheckpointQuery(thread_id=thread_id)
    entries: list[CheckpointEntry] = []
    after: CheckpointKey | None = None
    while True:
        page = port.page(query, after=after, limit=CHECKPOINT_PAGE_ROWS)
        entries += page.entries
        if page.next is None:
            return entries
        after = page.next


def write_order(write: PendingWrite) -> tuple[str, str, int]:
    """Sort key of pending writes: LangGraph's ``(task_path, task_id, idx)``."""
    return (write.task_path, write.task_id, write.idx)


def decode_metadata(raw: bytes) -> dict[str, Any]:
    """Decode a metadata JSON object.

    Raises:
        InvalidCheckpoint: not UTF-8 JSON, or not an object.
    """
    try:
        doc = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidCheckpoint(f"checkpoint metadata is not JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise InvalidCheckpoint("checkpoint metadata must be a JSON object")
    return doc


def metadata_matches(raw: bytes, wanted: Mapping[str, Any] | None) -> bool:
    """True when the metadata holds every key of ``wanted`` with an equal value.

    A key missing from the metadata compares as ``None`` (as LangGraph's own
    savers do). Keys are looked up in the decoded object, so any text is a
    valid key and none can change the query.
    """
    if not wanted:
        return True
    doc = decode_metadata(raw)
    return all(_same(doc.get(key), value) for key, value in wanted.items())


def _same(stored: Any, wanted: Any) -> bool:
    # JSON has no tuples: a filter value given as a tuple matches the stored list.
    if isinstance(wanted, tuple):
        wanted = list(wanted)
    if isinstance(wanted, bool) or isinstance(stored, bool):
        return type(wanted) is type(stored) and bool(wanted) == bool(stored)
    return bool(stored == wanted)


def check_record(record: CheckpointRecord, blobs: Iterable[ChannelBlob]) -> str | None:
    """Validate a checkpoint before it is stored; return its metadata's ``run_id``.

    Raises:
        InvalidSessionId: the thread id is not a valid session id.
        InvalidCheckpoint: empty checkpoint id, metadata not a JSON object, a blob
            for a channel whose version the checkpoint does not name.
    """
    validate_session_id(record.thread_id)
    check_names(record.ns, record.checkpoint_id)
    run_id = decode_metadata(record.metadata).get("run_id")
    for channel, version in record.versions.items():
        _check_text("channel name", channel)
        _check_text("channel version", version)
    for blob in blobs:
        _check_text("channel name", blob.channel)
        _check_text("channel version", blob.version)
        if not isinstance(blob.data, bytes):
            raise InvalidCheckpoint(f"blob of channel {blob.channel!r} is not bytes")
    return run_id if isinstance(run_id, str) else None


def check_writes(writes: Iterable[PendingWrite]) -> None:
    """Validate pending writes before they are stored.

    Raises:
        InvalidCheckpoint: a task id, channel or task path that is not text without NUL.
    """
    for w in writes:
        _check_text("task id", w.task_id)
        _check_text("write channel", w.channel)
        _check_text("task path", w.task_path, empty=True)
        if not isinstance(w.data, bytes) or not isinstance(w.idx, int):
            raise InvalidCheckpoint(f"write {w.task_id!r}/{w.idx!r} has no bytes or int index")


def _check_text(what: str, value: object, *, empty: bool = False) -> None:
    if not isinstance(value, str) or (not value and not empty) or "\x00" in value:
        raise InvalidCheckpoint(f"{what} must be non-empty text without NUL, not {value!r}")


def check_names(ns: str, checkpoint_id: str | None) -> None:
    """Validate a namespace and (when given) a checkpoint id.

    Raises:
        InvalidCheckpoint: not strings, an empty checkpoint id, or a NUL character.
    """
    if not isinstance(ns, str) or "\x00" in ns:
        raise InvalidCheckpoint(f"checkpoint namespace must be text without NUL, not {ns!r}")
    if checkpoint_id is not None and (
        not isinstance(checkpoint_id, str) or not checkpoint_id or "\x00" in checkpoint_id
    ):
        raise InvalidCheckpoint(f"checkpoint id must be non-empty text, not {checkpoint_id!r}")


def check_page_limit(limit: int) -> None:
    """Raise ``ValueError`` unless ``limit`` is a positive int."""
    if not isinstance(limit, int) or limit <= 0:
        raise ValueError(f"page limit must be a positive int, not {limit!r}")


def query_admits(query: CheckpointQuery, key: CheckpointKey) -> bool:
    """True when a row at ``key`` is within the query's thread, namespace, id and ``before``."""
    checkpoint_id, thread_id, ns = key
    return (
        (query.thread_id is None or thread_id == query.thread_id)
        and (query.ns is None or ns == query.ns)
        and (query.checkpoint_id is None or checkpoint_id == query.checkpoint_id)
        and (query.before is None or checkpoint_id < query.before)
    )


def referenced_blobs(records: Iterable[CheckpointRecord]) -> set[tuple[str, str]]:
    """Return the (channel, version) pairs the given checkpoints refer to."""
    return {(channel, version) for r in records for channel, version in r.versions.items()}
