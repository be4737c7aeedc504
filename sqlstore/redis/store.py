"""``RedisStore``: the scale-out backend (many hosts, one Redis server)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlstore.audit import ToolCallRecord
from sqlstore.changes import Applied, prepare
from sqlstore.events import Event
from sqlstore.model import JSON
from sqlstore.ports import Closeable
from sqlstore.redis.audit import RedisAudit, RedisLeases
from sqlstore.redis.checkpoints import RedisCheckpoints
from sqlstore.redis.connection import Connection
from sqlstore.redis.events import RedisEvents
from sqlstore.redis.history import RedisHistory
from sqlstore.redis.imports import RedisImports
from sqlstore.redis.keys import DEFAULT_PREFIX
from sqlstore.redis.scopes import RedisScopes
from sqlstore.redis.sessions import RedisSessions
from sqlstore.redis.units import apply_unit
from sqlstore.session import Session


class RedisStore(Closeable):
    """Sessions, event logs, audit trail and leases in one Redis database (see docs/redis.md).

    Args:
        url_or_client: a ``redis://host:port/db`` (or ``rediss://``, ``unix://``)
            URL, or a ``redis.Redis`` client the caller owns (it is not closed by
            ``close()``; it must not set ``decode_responses``). A URL may carry
            ``?prefix=...``.
        prefix: the prefix of every key; stores with different prefixes share a
            database without seeing each other. Default ``sqlstore:``.

    Every write is one Lua script, so it is atomic for every client of the
    server; a returned write means Redis acknowledged it — whether it survives a
    crash of Redis depends on the server's AOF/``appendfsync`` settings. Redis
    Cluster is not supported.

    Raises:
        StoreUnavailable: the server cannot be reached (a URL is checked at once).
    """

    def __init__(self, url_or_client: Any, *, prefix: str | None = None) -> None:
        if isinstance(url_or_client, str):
            self.conn = Connection.from_url(url_or_client, prefix=prefix)
        else:
            self.conn = Connection.from_client(
                url_or_client, prefix=DEFAULT_PREFIX if prefix is None else prefix
            )
        self.prefix = self.conn.prefix
        self.events = RedisEvents(self.conn)
        self.sessions = RedisSessions(self.conn, self.events)
        self.audit = RedisAudit(self.conn)
        self.leases = RedisLeases(self.conn)
        self.imports = RedisImports(self.conn)
        self.history = RedisHistory(self.conn)
        self.checkpoints = RedisCheckpoints(self.conn)
        self.scopes = RedisScopes(self.conn)

    housekeeping: None = None

    def import_target(self) -> RedisImports:
        """Return ``self.imports`` (the name used before ``store.imports`` existed)."""
        return self.imports

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
        """Write snapshot, events, audit rows and scope deltas as one atomic script.

        Same contract as ``SQLiteStore.apply`` (conditional with
        ``expected_version``, all or nothing); durable as far as the server's
        AOF settings make any acknowledged write (docs/redis.md).
        """
        changes = prepare(
            session_id,
            snapshot=snapshot,
            events=events,
            audit=audit,
            expected_version=expected_version,
            scopes=scopes,
        )
        return apply_unit(self.conn, changes)

    def close(self) -> None:
        """Close the connection pool (when the store created it); idempotent."""
        self.conn.close()

    def __repr__(self) -> str:
        return f"RedisStore({self.conn.where!r}, prefix={self.prefix!r})"
