"""The shared state of one ``MemoryStore``: every part reads and writes it under one lock."""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field

from sqlstore import clock
from sqlstore.audit import ToolCallRecord
from sqlstore.errors import StoreClosed
from sqlstore.inventory import SessionMeta, meta_for
from sqlstore.memory.checkpoints import CheckpointTables
from sqlstore.session import Session
from sqlstore.tail import RawRecord


@dataclass(slots=True)
class Stored:
    """One encoded snapshot and its inventory row."""

    blob: bytes
    meta: SessionMeta


@dataclass(slots=True)
class Log:
    """One event log: its generation and its records in append order."""

    generation: str
    records: list[RawRecord] = field(default_factory=list)


class MemoryState:
    """All data of one MemoryStore, shared by its parts.

    One lock guards all of it; followers wait on ``changed``, tied to that lock.
    """

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.change_count = 0
        self.closed = False
        self.sessions: dict[str, Stored] = {}
        self.inventory_generation = 0
        self.logs: dict[str, Log] = {}
        self.audit: dict[str, list[tuple[int, ToolCallRecord]]] = {}
        self.audit_order = itertools.count(1)
        self.leases: dict[str, tuple[str, int, int]] = {}
        self.lease_tokens: dict[str, int] = {}
        self.checkpoint_tables = CheckpointTables()

    def create_session(self, session: Session, blob: bytes, now_ns: int) -> None:
        """Store a new session's snapshot (caller holds the lock and checked it is absent)."""
        self.sessions[session.id] = Stored(blob, meta_for(session, blob, now_ns, 1))
        self.inventory_generation += 1

    def check_open(self) -> None:
        """Raise ``StoreClosed`` once the store is closed."""
        if self.closed:
            raise StoreClosed("the store is closed")

    def touch(self, session_id: str, now_ns: int) -> None:
        """Record a write to the session: bump modified_at and version if it has a snapshot."""
        stored = self.sessions.get(session_id)
        if stored is not None:
            meta = stored.meta
            stored.meta = SessionMeta(
                meta.id,
                clock.from_ns(now_ns),
                meta.version + 1,
                meta.state,
                meta.kind,
                meta.relationship,
                meta.owner,
                meta.created_at,
                meta.title,
                meta.model_id,
                meta.turns,
                meta.estimated_bytes,
            )

    def notify(self) -> None:
        """Wake every follower: something changed."""
        self.change_count += 1
        self.changed.notify_all()

    def taken(self, session_id: str) -> bool:
        """True when the id has a snapshot, an event log or audit rows (call under the lock)."""
        return any(session_id in part for part in (self.sessions, self.logs, self.audit))
