"""Listed checkpoints as one JSON text each (``CheckpointStore.documents``).

A listing that decodes the body, every channel blob, the metadata and every
pending write of a checkpoint separately pays a parse (and a Python call)
per piece. When every piece is :data:`~sqlstore.checkpoints.JSON_TYPE` data
(UTF-8 JSON), a backend can instead hand back one JSON text per checkpoint::

    [body, {channel: value, ...}, metadata, [[task_id, channel, value], ...]]

``body`` and ``metadata`` are the stored JSON objects, the object holds the
blob values the checkpoint's versions name (empty blobs left out), and the
writes are in :func:`~sqlstore.checkpoints.write_order`. The pieces are
joined as stored (no re-encoding), so the reader parses each checkpoint once.
A checkpoint with any piece of another type (another serializer's bytes) has
``text = None``; the reader then gets it whole with ``get``.

The text is made of stored bytes: a reader treats it as untrusted input like
the pieces themselves (parse it, check its shape, and fall back to the
piecewise read when it is not what is described here).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlstore.checkpoints import (
    CHECKPOINT_PAGE_ROWS,
    EMPTY_BLOB_TYPE,
    JSON_TYPE,
    CheckpointEntry,
    CheckpointKey,
    CheckpointPage,
    CheckpointPut,
    CheckpointQuery,
)


@dataclass(frozen=True, slots=True)
class CheckpointDocument:
    """One listed checkpoint: its key, its parent and its JSON text (None: read it whole)."""

    thread_id: str
    ns: str
    checkpoint_id: str
    parent_id: str | None
    text: str | None


@dataclass(frozen=True, slots=True)
class DocumentPage:
    """A page of documents; ``next`` as in :class:`~sqlstore.checkpoints.CheckpointPage`."""

    documents: list[CheckpointDocument]
    next: CheckpointKey | None


def document_of(entry: CheckpointEntry) -> CheckpointDocument:
    """Build the document of an entry from its stored pieces (no re-encoding)."""
    r = entry.record
    return CheckpointDocument(r.thread_id, r.ns, r.checkpoint_id, r.parent_id, _text(entry))


def _text(entry: CheckpointEntry) -> str | None:
    """Return the entry's JSON text, or None when a piece is not UTF-8 JSON-type data."""
    r = entry.record
    if (
        r.type != JSON_TYPE
        or any(b.type not in (JSON_TYPE, EMPTY_BLOB_TYPE) for b in entry.blobs.values())
        or any(w.type != JSON_TYPE for w in entry.writes)
    ):
        return None
    try:
        values = ",".join(
            f"{json.dumps(b.channel)}:{b.data.decode()}"
            for b in entry.blobs.values()
            if b.type != EMPTY_BLOB_TYPE
        )
        writes = ",".join(
            f"[{json.dumps(w.task_id)},{json.dumps(w.channel)},{w.data.decode()}]"
            for w in entry.writes
        )
        return f"[{r.body.decode()},{{{values}}},{r.metadata.decode()},[{writes}]]"
    except UnicodeDecodeError:
        return None


def documents_of(page: CheckpointPage) -> DocumentPage:
    """Turn a page of entries into a page of documents (backends without a faster way)."""
    return DocumentPage([document_of(e) for e in page.entries], page.next)


class FromPieces:
    """``documents`` and ``put_many`` of a backend from its ``page`` and ``put``.

    For backends with no faster way (memory, Redis): documents are built from
    the entries of a page, and a batch is one ``put`` per item.
    """

    def documents(
        self,
        query: CheckpointQuery,
        *,
        after: CheckpointKey | None = None,
        limit: int = CHECKPOINT_PAGE_ROWS,
    ) -> DocumentPage:
        """:meth:`page`, each checkpoint as one JSON text (built from the entries)."""
        port: Any = self  # a backend class with ``page`` (no import of the port: a cycle)
        return documents_of(port.page(query, after=after, limit=limit))

    def put_many(self, items: Sequence[CheckpointPut]) -> list[BaseException | None]:
        """Store several checkpoints, one :meth:`put` each; return each one's error or None."""
        port: Any = self  # a backend class with ``put``
        errors: list[BaseException | None] = []
        for record, blobs, session in items:
            try:
                port.put(record, blobs, session=session)
                errors.append(None)
            except Exception as exc:
                errors.append(exc)
        return errors
