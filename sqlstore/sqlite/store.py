"""``SQLiteStore``: the embedded, durable backend."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence

import apsw

from sqlstore.audit import ToolCallRecord
from sqlstore.changes import Applied, ChangeSet, Unit, prepare
from sqlstore.events import Event
from sqlstore.model import JSON
from sqlstore.ports import Closeable
from sqlstore.session import Session
from sqlstore.sqlite.audit import SQLiteAudit, SQLiteLeases
from sqlstore.sqlite.checkpoints import SQLiteCheckpoints
from sqlstore.sqlite.connection import BUSY_TIMEOUT_MS, Durability
from sqlstore.sqlite.database import Database
from sqlstore.sqlite.events import SQLiteEvents
from sqlstore.sqlite.history import SQLiteHistory
from sqlstore.sqlite.housekeeping import SQLiteHousekeeping
from sqlstore.sqlite.imports import SQLiteImports
from sqlstore.sqlite.scopes import SQLiteScopes
from sqlstore.sqlite.sessions import SQLiteSessions
from sqlstore.sqlite.units import apply_changes


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

    Capabilities: ``imports`` (import target, one transaction per batch),
    ``history`` (the ``retention_runs`` table) and ``housekeeping`` (pacing,
    checkpoint and shrink for large sweeps).

    Many stores — in threads, processes, the CLI and the retention daemon — may
    open the same file at once. Concurrent writes from threads of one store are
    group-committed (one transaction and one fsync for all that wait).

    Raises:
        InvalidOption: ``durability`` or ``busy_timeout_ms`` is invalid (checked
            before the path is touched: nothing is created).
        UnsafePath, StoreMissing, StoreCorrupt, ForeignDatabase, SchemaTooNew,
        StoreReadOnly: the file cannot be used (see ``sqlstore.errors``).
    """

    in_process = True
    """Reads are local (``sqlstore.ports.reads_in_process``): WAL readers never wait for
    the writer."""

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
        self.imports = SQLiteImports(self.db)
        self.history = SQLiteHistory(self.db)
        self.checkpoints = SQLiteCheckpoints(self.db)
        self.scopes = SQLiteScopes(self.db)
        if not readonly:
            # A deletion a crash interrupted is finished now, in bounded steps
            # (its session is already gone to every reader).
            self.sessions.finish_pending_deletions()

    @property
    def housekeeping(self) -> SQLiteHousekeeping:
        """Pacing, checkpoint and shrink for large sweeps (made on access: no reference cycle)."""
        return SQLiteHousekeeping(self)

    def apply(
        self,
        session_id: str,
        *,
        snapshot: Session | None = None,
        events: Sequence[Event] = (),
        audit: Sequence[ToolCallRecord] = (),
        expected_version: int | None = None,
        scopes: Mapping[str, Mapping[str, JSON]] | None = None,
    ) -> Applied:
        """Write a snapshot, events and audit rows of one session as one durable unit.

        ``scopes`` maps scope ids to state deltas merged in the same unit
        (``dict.update`` per scope; see :mod:`sqlstore.scopes`); a unit of scope
        deltas alone does not write the session.

        All of it or none, in one transaction and one fsync (one write of the
        group commit). With ``expected_version`` the unit is conditional like
        ``sessions.save``: ``0`` means the session must have no snapshot yet,
        ``n`` that its stored version is ``n``. Without a snapshot only the events
        and audit rows are written (a session without snapshot gets no version:
        ``Applied.version`` is then 0). Nothing to write and no condition → a
        no-op returning the current version. The session's version grows by one
        for the whole unit. Input is checked before anything is written.

        Returns:
            ``Applied(version, cursors)``: the version after the unit and the
            cursor just after each event.

        Raises:
            VersionConflict: the stored version does not meet ``expected_version``;
                nothing was written.
            ValueError, TypeError, InvalidEvent, SnapshotError, InvalidSessionId:
                bad input (the snapshot or an audit record of another session, ...).
            StoreBusy, StoreFull, StoreIOError: the transaction failed; nothing
                written. The outcome of a failed commit is unknown: do not retry
                blindly, re-read the version.
        """
        changes = prepare(
            session_id,
            snapshot=snapshot,
            events=events,
            audit=audit,
            expected_version=expected_version,
            scopes=scopes,
        )
        return self.db.write(lambda conn: apply_changes(conn, changes))

    def apply_many(self, units: Sequence[Unit]) -> list[Applied | BaseException]:
        """Apply several units as one member of the group commit; an outcome per unit.

        Each unit is exactly one ``apply`` (validated, conditional, atomic); when
        none fails they share one transaction and one fsync. A unit that fails
        (bad input, ``VersionConflict``) gets its error and leaves nothing: the
        others are then written without it. A failure to begin or commit (busy,
        disk full) is every unit's outcome. See :func:`sqlstore.ports.apply_each`.
        """
        prepared: list[ChangeSet | BaseException] = []
        for unit in units:
            try:
                prepared.append(_prepared(unit))
            except Exception as exc:  # bad input: refused before anything is written
                prepared.append(exc)
        valid = [changes for changes in prepared if isinstance(changes, ChangeSet)]
        written = self.db.write_each([_applier(changes) for changes in valid]) if valid else []
        results = iter(written)
        outcomes: list[Applied | BaseException] = []
        for changes in prepared:
            if isinstance(changes, BaseException):
                outcomes.append(changes)
                continue
            result, error = next(results)
            if error is not None:
                outcomes.append(error)
            else:
                assert result is not None
                outcomes.append(result)
        return outcomes

    def close(self) -> None:
        """Close every connection; idempotent."""
        self.db.close()

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r}, durability={self.db.durability!r})"


def _prepared(unit: Unit) -> ChangeSet:
    return prepare(
        unit.session_id,
        snapshot=unit.snapshot,
        events=unit.events,
        audit=unit.audit,
        expected_version=unit.expected_version,
    )


def _applier(changes: ChangeSet) -> Callable[[apsw.Connection], Applied]:
    return lambda conn: apply_changes(conn, changes)
