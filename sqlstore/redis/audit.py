"""Tool-call audit trail and leases in Redis."""

from __future__ import annotations

import builtins
import json
from dataclasses import replace
from datetime import datetime, timedelta

from sqlstore import clock
from sqlstore.audit import ToolCallRecord, check_record
from sqlstore.clock import ttl_ns
from sqlstore.errors import LeaseHeld
from sqlstore.inventory import Lease
from sqlstore.jsonl import canonical_json
from sqlstore.model import validate_session_id
from sqlstore.redis import keys
from sqlstore.redis.connection import Connection


def _decode_row(raw: bytes) -> tuple[int, ToolCallRecord]:
    seq, _, doc = raw.partition(b" ")
    return int(seq), ToolCallRecord.from_json(json.loads(doc))


class RedisAudit:
    """Tool-call audit records (SPEC §3.3): a list per session, global order by a counter."""

    def __init__(self, conn: Connection) -> None:
        self._c = conn

    def record(self, rec: ToolCallRecord) -> None:
        """Store one record (one atomic script that also touches the session's version).

        ``at`` defaults to the time of the call. Returns once Redis acknowledged it.

        Raises:
            InvalidSessionId: the record's session id is not valid.
            TypeError, ValueError: a field cannot be stored
                (:func:`sqlstore.audit.check_record`); nothing written.
        """
        validate_session_id(rec.session_id)
        check_record(rec)
        now_ns = clock.now_ns()
        if rec.at is None:
            rec = replace(rec, at=clock.from_ns(now_ns))
        k = self._c.keys
        sid = rec.session_id
        with self._c.guard():
            self._c.audit(
                keys=[
                    k.audit(sid),
                    k.audit_ids,
                    k.audit_seq,
                    k.session(sid),
                    k.page_index,
                    k.age_index,
                    k.write_seq,
                ],
                args=[
                    canonical_json(rec.to_json()),
                    sid,
                    str(now_ns),
                    keys.page_prefix(now_ns),
                    keys.age_prefix(now_ns),
                    keys.hex_id(sid),
                    self._c.prefix,
                ],
            )

    def list(self, session_id: str) -> builtins.list[ToolCallRecord]:
        """Return a session's records in record order."""
        validate_session_id(session_id)
        with self._c.guard():
            raw = self._c.client.lrange(self._c.keys.audit(session_id), 0, -1)
        return [_decode_row(r)[1] for r in raw]

    def query(
        self,
        *,
        tool: str | None = None,
        since: datetime | None = None,
        errors_only: bool = False,
        limit: int | None = None,
    ) -> builtins.list[ToolCallRecord]:
        """Return records across sessions matching every given filter, in record order.

        Reads every session's list (Redis has no secondary index here): meant for
        operators, not for hot paths.
        """
        with self._c.guard():
            ids = self._c.client.smembers(self._c.keys.audit_ids)
            pipe = self._c.client.pipeline(transaction=False)
            for raw_id in ids:
                pipe.lrange(self._c.keys.audit(raw_id.decode()), 0, -1)
            lists = pipe.execute()
        rows = sorted(_decode_row(r) for items in lists for r in items)
        out = [
            rec
            for _, rec in rows
            if (tool is None or rec.tool == tool)
            and (since is None or (rec.at is not None and rec.at >= since))
            and (not errors_only or rec.is_error)
        ]
        return out if limit is None else out[:limit]


class RedisLeases:
    """Leases with fencing tokens (SPEC §3.4); the token survives release and keeps growing."""

    def __init__(self, conn: Connection) -> None:
        self._c = conn

    def acquire(self, session_id: str, owner: str, ttl: timedelta) -> Lease:
        """Take the lease, or extend it if ``owner`` already holds it (one atomic script).

        Raises:
            LeaseHeld: another owner holds an unexpired lease.
            ValueError: ``ttl`` is not positive.
        """
        validate_session_id(session_id)
        span = ttl_ns(ttl)
        now_ns = clock.now_ns()
        expires = now_ns + span
        with self._c.guard():
            reply = self._c.lease_acquire(
                keys=[self._c.keys.lease(session_id), self._c.keys.leases],
                args=[owner, keys.ns20(now_ns), keys.ns20(expires), session_id],
            )
        if int(reply[0]) == 0:
            holder, until = reply[1].decode(), clock.from_ns(int(reply[2]))
            raise LeaseHeld(
                f"session {session_id!r} is leased by {holder!r} until "
                f"{clock.format_rfc3339(until)}",
                holder=holder,
                expires_at=until,
            )
        return Lease(session_id, owner, int(reply[1]), clock.from_ns(expires))

    def renew(self, lease: Lease, ttl: timedelta) -> Lease:
        """Extend a live lease still held with the same owner and token.

        Raises:
            LeaseHeld: the lease expired or was taken over.
        """
        span = ttl_ns(ttl)
        now_ns = clock.now_ns()
        expires = now_ns + span
        with self._c.guard():
            done = self._c.lease_renew(
                keys=[self._c.keys.lease(lease.id)],
                args=[lease.owner, str(lease.token), keys.ns20(now_ns), keys.ns20(expires)],
            )
        if not int(done):
            raise LeaseHeld(f"lease on {lease.id!r} was lost (expired or taken over)")
        return Lease(lease.id, lease.owner, lease.token, clock.from_ns(expires))

    def release(self, lease: Lease) -> None:
        """Give the lease up if the same owner and token still hold it; idempotent."""
        with self._c.guard():
            self._c.lease_release(
                keys=[self._c.keys.lease(lease.id)],
                args=[lease.owner, str(lease.token), keys.ns20(0)],
            )

    def held(self) -> set[str]:
        """Return the ids with a live lease now."""
        now_ns = clock.now_ns()
        with self._c.guard():
            ids = [raw.decode() for raw in self._c.client.smembers(self._c.keys.leases)]
            pipe = self._c.client.pipeline(transaction=False)
            for session_id in ids:
                pipe.hmget(self._c.keys.lease(session_id), ["owner", "expires"])
            found = pipe.execute()
        return {
            session_id
            for session_id, (owner, expires) in zip(ids, found, strict=True)
            if owner and expires is not None and int(expires) > now_ns
        }
