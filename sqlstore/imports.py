"""The vocabulary of an import batch: what ``sqlstore.migrate`` hands a backend's import target.

These value types sit between :mod:`sqlstore.migrate` (which maps sources onto
them) and each backend's ``imports`` module (which writes them, see
:class:`sqlstore.ports.ImportTarget`), so that no backend imports
``sqlstore.migrate``. Outcomes an import target writes are named here too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlstore import snapshot
from sqlstore.audit import ToolCallRecord
from sqlstore.events import Event, check_record_size, encode_event
from sqlstore.jsonl import LineProblem
from sqlstore.session import Session

OUTCOME_IMPORTED = "imported"
"""Checkpoint outcome: the item's session was written."""

SKIP_EXISTS = "exists"
"""Checkpoint outcome: the session id already held something and nothing was written."""

SKIP_ALREADY_IMPORTED = "already_imported"
"""Outcome: this job (in any run) already imported the item with the same fingerprint."""

SKIP_CHANGED = "changed"
"""Outcome: this job imported the item before with another fingerprint (no ``overwrite``)."""


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """Size, newest mtime and content hash of the files that make up one source item."""

    size: int
    mtime_ns: int
    sha256: str


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One record to append to the imported log: an event, or a gap with its reason."""

    event: Event | None = None
    gap_reason: str = ""


@dataclass(frozen=True, slots=True)
class EncodedSession:
    """A session import in stored form: snapshot bytes and ``(is_gap, type, body)`` records."""

    snapshot: bytes
    records: list[tuple[bool, str, bytes]]


@dataclass(slots=True)
class SessionImport:
    """One source item mapped to a session, ready to be written in one transaction."""

    session: Session
    log: list[LogEntry] = field(default_factory=list)
    audit: list[ToolCallRecord] = field(default_factory=list)
    modified_at_ns: int = 0
    generation: str | None = None
    warnings: list[LineProblem] = field(default_factory=list)
    incomplete: bool = False
    encoded: EncodedSession | None = None

    def encode(self) -> EncodedSession:
        """Encode (once) the snapshot and every log record, validating them.

        Raises:
            SnapshotError: the session cannot be encoded.
            InvalidEvent: an event or gap reason cannot be stored.
        """
        if self.encoded is None:
            records: list[tuple[bool, str, bytes]] = []
            for entry in self.log:
                if entry.event is None:
                    body = check_record_size(entry.gap_reason.encode("utf-8"), "gap reason")
                    records.append((True, "", body))
                else:
                    records.append((False, entry.event.type, encode_event(entry.event)))
            self.encoded = EncodedSession(snapshot.encode(self.session), records)
        return self.encoded


@dataclass(frozen=True, slots=True)
class ItemRow:
    """One checkpoint row: a source item, its fingerprint and its outcome."""

    item: str
    fingerprint: Fingerprint
    outcome: str
    session_id: str | None = None
    detail: str = ""


@dataclass(frozen=True, slots=True)
class BatchEntry:
    """One item of a batch: its checkpoint row, and the session to write when importing."""

    row: ItemRow
    payload: SessionImport | None = None
