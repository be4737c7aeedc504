"""Tool-call audit trail and leases in SQLite."""

from __future__ import annotations

import builtins
from datetime import datetime, timedelta

import apsw

from sqlstore import clock
from sqlstore.audit import ToolCallRecord, check_record
from sqlstore.clock import ttl_ns
from sqlstore.errors import LeaseHeld
from sqlstore.inventory import Lease
from sqlstore.model import validate_session_id
from sqlstore.sqlite import rows
from sqlstore.sqlite.database import Database


class SQLiteAudit:
    """Tool-call audit records (SPEC §3.3)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def record(self, rec: ToolCallRecord) -> None:
        """Store one record durably; ``at`` defaults to the time of the call.

        Raises:
            InvalidSessionId: the record's session id is not valid.
            TypeError, ValueError: a field cannot be stored
                (:func:`sqlstore.audit.check_record`); nothing written.
        """
        validate_session_id(rec.session_id)
        check_record(rec)

        def op(conn: apsw.Connection) -> None:
            now_ns = clock.now_ns()
            at_ns = now_ns if rec.at is None else clock.to_ns(rec.at)
            rows.insert_audit(conn, rec, at_ns)
            rows.touch_session(conn, rec.session_id, now_ns)

        self._db.write(op)

    def list(self, session_id: str) -> builtins.list[ToolCallRecord]:
        """Return a session's records in record order."""
        validate_session_id(session_id)
        with self._db.reader() as conn:
            return [
                rows.audit_from_row(r)
                for r in conn.execute(
                    f"SELECT {rows.AUDIT_COLUMNS} FROM tool_calls WHERE session_id = ?1 "
                    # rows of a session being deleted in steps are already gone to readers
                    "AND NOT EXISTS (SELECT 1 FROM deletions WHERE session_id = ?1) "
                    "ORDER BY seq",
                    (session_id,),
                )
            ]

    def query(
        self,
        *,
        tool: str | None = None,
        since: datetime | None = None,
        errors_only: bool = False,
        limit: int | None = None,
    ) -> builtins.list[ToolCallRecord]:
        """Return records across sessions matching every given filter, in record order."""
        conditions: list[str] = ["session_id NOT IN (SELECT session_id FROM deletions)"]
        params: list[object] = []
        if tool is not None:
            conditions.append("tool = ?")
            params.append(tool)
        if since is not None:
            conditions.append("at_ns >= ?")
            params.append(clock.to_ns(since))
        if errors_only:
            conditions.append("is_error = 1")
        sql = f"SELECT {rows.AUDIT_COLUMNS} FROM tool_calls"
        if conditions:
            sql += " WHERE " + " AND ".join(conditions)
        sql += " ORDER BY seq"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        with self._db.reader() as conn:
            return [rows.audit_from_row(r) for r in conn.execute(sql, params)]


class SQLiteLeases:
    """Leases with fencing tokens (SPEC §3.4); ``last token`` survives release."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def acquire(self, session_id: str, owner: str, ttl: timedelta) -> Lease:
        """Take the lease, or extend it if ``owner`` already holds it.

        Raises:
            LeaseHeld: another owner holds an unexpired lease.
            ValueError: ``ttl`` is not positive.
        """
        validate_session_id(session_id)
        span = ttl_ns(ttl)

        def op(conn: apsw.Connection) -> Lease:
            now_ns = clock.now_ns()
            row = conn.execute(
                "SELECT owner, token, expires_at_ns FROM leases WHERE name = ?", (session_id,)
            ).fetchone()
            if row is not None and row[0] is not None and row[2] > now_ns and row[0] != owner:
                until = clock.format_rfc3339(clock.from_ns(row[2]))
                raise LeaseHeld(
                    f"session {session_id!r} is leased by {row[0]!r} until {until}",
                    holder=str(row[0]),
                    expires_at=clock.from_ns(int(row[2])),
                )
            if row is not None and row[0] == owner and row[2] > now_ns:
                token = int(row[1])
            else:
                token = 1 if row is None else int(row[1]) + 1
            expires = now_ns + span
            conn.execute(
                "INSERT INTO leases (name, owner, token, expires_at_ns) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, "
                "token = excluded.token, expires_at_ns = excluded.expires_at_ns",
                (session_id, owner, token, expires),
            )
            return Lease(session_id, owner, token, clock.from_ns(expires))

        return self._db.write(op)

    def renew(self, lease: Lease, ttl: timedelta) -> Lease:
        """Extend a live lease still held with the same owner and token.

        Raises:
            LeaseHeld: the lease expired or was taken over.
        """
        span = ttl_ns(ttl)

        def op(conn: apsw.Connection) -> Lease:
            now_ns = clock.now_ns()
            expires = now_ns + span
            conn.execute(
                "UPDATE leases SET expires_at_ns = ? WHERE name = ? AND owner = ? AND token = ? "
                "AND expires_at_ns > ?",
                (expires, lease.id, lease.owner, lease.token, now_ns),
            )
            if conn.changes() == 0:
                raise LeaseHeld(f"lease on {lease.id!r} was lost (expired or taken over)")
            return Lease(lease.id, lease.owner, lease.token, clock.from_ns(expires))

        return self._db.write(op)

    def release(self, lease: Lease) -> None:
        """Give the lease up if the same owner and token still hold it; idempotent."""
        self._db.write(
            lambda conn: conn.execute(
                "UPDATE leases SET owner = NULL, expires_at_ns = 0 "
                "WHERE name = ? AND owner = ? AND token = ?",
                (lease.id, lease.owner, lease.token),
            )
        )

    def held(self) -> set[str]:
        """Return the ids with a live lease now."""
        now_ns = clock.now_ns()
        with self._db.reader() as conn:
            return {
                str(name)
                for (name,) in conn.execute(
                    "SELECT name FROM leases WHERE owner IS NOT NULL AND expires_at_ns > ?",
                    (now_ns,),
                )
            }
