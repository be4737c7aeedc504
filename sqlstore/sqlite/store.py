"""``SQLiteStore``: the embedded, durable backend."""

from __future__ import annotations

import os

from sqlstore.ports import Closeable
from sqlstore.sqlite.audit import SQLiteAudit, SQLiteLeases
from sqlstore.sqlite.checkpoints import SQLiteCheckpoints
from sqlstore.sqlite.connection import BUSY_TIMEOUT_MS, Durability
from sqlstore.sqlite.database import Database
from sqlstore.sqlite.events import SQLiteEvents
from sqlstore.sqlite.sessions import SQLiteSessions


class SQLiteStore(Closeable):
    """Sessions, event logs, audit trail and leases in one SQLite file (WAL mode).

    Args:
        path: the database file. It is created (0600, directory 0700) when
            missing unless ``create`` is False; a symlink is refused.
        durability: ``"full"`` (default): every returned ``save``, ``create``,
            ``append*`` and ``record`` is fsynced and survives power loss.
            ``"normal"``: faster (``synchronous=NORMAL``); survives a crash of the
            process, but **the newest commits may be lost if the operating system
            crashes or power fails** before the next WAL checkpoint.
        busy_timeout_ms: how long a write waits for another process's lock before
            raising ``StoreBusy``.
        create: create the file when it does not exist (``StoreMissing`` otherwise).
        readonly: never write: no file is created, no schema is created or
            upgraded, and every write raises ``StoreReadOnly`` (for inspection
            commands such as ``sqlstore ls``).

    Many stores — in threads, processes, the CLI and the retention daemon — may
    open the same file at once. Concurrent writes from threads of one store are
    group-committed (one transaction and one fsync for all that wait).

    Raises:
        UnsafePath, StoreMissing, StoreCorrupt, ForeignDatabase, SchemaTooNew,
        StoreReadOnly: the file cannot be used (see ``sqlstore.errors``).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        durability: Durability = "full",
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
        create: bool = True,
        readonly: bool = False,
    ) -> None:
        self.db = Database(
            path,
            durability=durability,
            busy_timeout_ms=busy_timeout_ms,
            create=create,
            readonly=readonly,
        )
        self.path = self.db.path
        self.events = SQLiteEvents(self.db)
        self.sessions = SQLiteSessions(self.db, self.events)
        self.audit = SQLiteAudit(self.db)
        self.leases = SQLiteLeases(self.db)
        self.checkpoints = SQLiteCheckpoints(self.db)

    def close(self) -> None:
        """Close every connection; idempotent."""
        self.db.close()

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r}, durability={self.db.durability!r})"
