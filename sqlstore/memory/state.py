"""The shared state of one ``MemoryStore``: every part reads and writes it under one lock."""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field, replace

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
        self.orphans: dict[str, int] = {}  # id without a snapshot -> last write (ns)
        self.write_seq = 0
        """Highest snapshot version handed out or deleted: versions never repeat for an id."""
        self.checkpoint_tables = CheckpointTables()
        self.scopes: dict[str, dict[str, str]] = {}
        """Scoped state: scope → key → JSON text (:mod:`sqlstore.scopes`); apart from sessions."""

    def merge_scopes(self, deltas: dict[str, dict[str, str]]) -> None:
        """Merge encoded scope deltas (call under the lock)."""
        for scope, delta in deltas.items():
            self.scopes.setdefault(scope, {}).update(delta)

    def check_open(self) -> None:
        """Raise ``StoreClosed`` once the store is closed."""
        if self.closed:
            raise StoreClosed("the store is closed")

    def touch(self, session_id: str, now_ns: int) -> int | None:
        """Record a write to the session: bump modified_at and version if it has a snapshot.

        Returns the new version, or None when the session has no snapshot (the id
        is then an orphan, last written now).
        """
        stored = self.sessions.get(session_id)
        if stored is None:
            self.orphans[session_id] = max(now_ns, self.orphans.get(session_id, now_ns))
            return None
        meta = stored.meta
        stored.meta = replace(meta, modified_at=clock.from_ns(now_ns), version=meta.version + 1)
        return stored.meta.version

    def put(self, session: Session, blob: bytes, now_ns: int) -> int:
        """Store a snapshot (call under the lock); return its version.

        The version is above the old row's and above every version handed out or
        deleted before (``write_seq``), so it never repeats for an id, not even
        after delete and re-create (as in the SQLite backend).
        """
        old = self.sessions.get(session.id)
        version = max(0 if old is None else old.meta.version, self.write_seq) + 1
        self.write_seq = version
        self.sessions[session.id] = Stored(blob, meta_for(session, blob, now_ns, version))
        self.orphans.pop(session.id, None)
        self.inventory_generation += 1
        return version

    def forget(self, session_id: str) -> bool:
        """Drop snapshot, log and audit rows of an id (under the lock); True if a snapshot went."""
        gone = self.sessions.pop(session_id, None)
        self.orphans.pop(session_id, None)
        self.audit.pop(session_id, None)
        self.checkpoint_tables.drop(session_id)  # a graph thread's checkpoints (issue 17)
        if self.logs.pop(session_id, None) is not None:
            self.notify()
        if gone is None:
            return False
        self.write_seq = max(self.write_seq, gone.meta.version)
        self.inventory_generation += 1
        return True

    def notify(self) -> None:
        """Wake every follower: something changed."""
        self.change_count += 1
        self.changed.notify_all()

    def taken(self, session_id: str) -> bool:
        """True when the id has a snapshot, an event log or audit rows (call under the lock)."""
        return any(session_id in part for part in (self.sessions, self.logs, self.audit))
