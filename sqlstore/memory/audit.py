"""Tool-call audit records and leases of a ``MemoryStore``."""

from __future__ import annotations

import builtins
from dataclasses import replace
from datetime import datetime, timedelta

from sqlstore import clock
from sqlstore.audit import ToolCallRecord, check_record
from sqlstore.clock import ttl_ns
from sqlstore.errors import LeaseHeld
from sqlstore.inventory import Lease
from sqlstore.memory.state import MemoryState
from sqlstore.model import validate_session_id


class MemoryAudit:
    """Tool-call audit records of a ``MemoryStore``."""

    def __init__(self, state: MemoryState) -> None:
        self._s = state

    def record(self, rec: ToolCallRecord) -> None:
        """Store one record; ``at`` defaults to now.

        Raises:
            InvalidSessionId: the record's session id is not valid.
            TypeError, ValueError: a field cannot be stored
                (:func:`sqlstore.audit.check_record`); nothing written.
        """
        validate_session_id(rec.session_id)
        check_record(rec)
        now_ns = clock.now_ns()
        if rec.at is None:
            rec = _with_time(rec, clock.from_ns(now_ns))
        with self._s.lock:
            self._s.check_open()
            self._s.audit.setdefault(rec.session_id, []).append((next(self._s.audit_order), rec))
            self._s.touch(rec.session_id, now_ns)

    def list(self, session_id: str) -> builtins.list[ToolCallRecord]:
        """Return a session's records in record order."""
        validate_session_id(session_id)
        with self._s.lock:
            self._s.check_open()
            return [rec for _, rec in self._s.audit.get(session_id, [])]

    def query(
        self,
        *,
        tool: str | None = None,
        since: datetime | None = None,
        errors_only: bool = False,
        limit: int | None = None,
    ) -> builtins.list[ToolCallRecord]:
        """Return matching records across sessions in record order."""
        with self._s.lock:
            self._s.check_open()
            rows = sorted(
                (item for items in self._s.audit.values() for item in items), key=lambda x: x[0]
            )
        out = [
            rec
            for _, rec in rows
            if (tool is None or rec.tool == tool)
            and (since is None or (rec.at is not None and rec.at >= since))
            and (not errors_only or rec.is_error)
        ]
        return out if limit is None else out[:limit]


def _with_time(rec: ToolCallRecord, at: datetime) -> ToolCallRecord:
    return replace(rec, at=at)


class MemoryLeases:
    """Leases of a ``MemoryStore``."""

    def __init__(self, state: MemoryState) -> None:
        self._s = state

    def acquire(self, session_id: str, owner: str, ttl: timedelta) -> Lease:
        """Take the lease, or renew it if ``owner`` holds it; ``LeaseHeld`` otherwise."""
        validate_session_id(session_id)
        now_ns = clock.now_ns()
        expires = now_ns + ttl_ns(ttl)
        with self._s.lock:
            self._s.check_open()
            current = self._s.leases.get(session_id)
            if current is not None and current[2] > now_ns and current[0] != owner:
                raise LeaseHeld(
                    f"session {session_id!r} is leased by {current[0]!r} until "
                    f"{clock.format_rfc3339(clock.from_ns(current[2]))}",
                    holder=current[0],
                    expires_at=clock.from_ns(current[2]),
                )
            if current is not None and current[0] == owner and current[2] > now_ns:
                token = current[1]
            else:
                token = self._s.lease_tokens.get(session_id, 0) + 1
                self._s.lease_tokens[session_id] = token
            self._s.leases[session_id] = (owner, token, expires)
            return Lease(session_id, owner, token, clock.from_ns(expires))

    def renew(self, lease: Lease, ttl: timedelta) -> Lease:
        """Extend a live lease held by the same owner and token."""
        now_ns = clock.now_ns()
        with self._s.lock:
            self._s.check_open()
            current = self._s.leases.get(lease.id)
            if current is None or current[:2] != (lease.owner, lease.token) or current[2] <= now_ns:
                raise LeaseHeld(f"lease on {lease.id!r} was lost (expired or taken over)")
            expires = now_ns + ttl_ns(ttl)
            self._s.leases[lease.id] = (lease.owner, lease.token, expires)
            return Lease(lease.id, lease.owner, lease.token, clock.from_ns(expires))

    def release(self, lease: Lease) -> None:
        """Drop the lease if the same owner and token still hold it."""
        with self._s.lock:
            self._s.check_open()
            current = self._s.leases.get(lease.id)
            if current is not None and current[:2] == (lease.owner, lease.token):
                del self._s.leases[lease.id]

    def held(self) -> set[str]:
        """Return ids with a live lease."""
        now_ns = clock.now_ns()
        with self._s.lock:
            self._s.check_open()
            return {k for k, v in self._s.leases.items() if v[2] > now_ns}
