"""``RedisScopes``: scoped state (``store.scopes``) as one hash per scope.

A scope's hash maps each state key to its JSON text, so a merge is one ``HSET``
of the delta's keys (atomic by itself, and inside ``store.apply``'s script);
the set ``<prefix>scopes`` lists the scope ids that have state.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping

from sqlstore.model import JSON
from sqlstore.redis.connection import Connection
from sqlstore.scopes import decode_state, encode_delta, validate_scope


class RedisScopes:
    """Key/value JSON state per scope, shared beyond sessions (see :mod:`sqlstore.scopes`)."""

    def __init__(self, conn: Connection) -> None:
        self._c = conn

    def get(self, scope: str) -> dict[str, JSON]:
        """Return the scope's state (``{}`` when none was stored)."""
        validate_scope(scope)
        with self._c.guard():
            raw = self._c.client.hgetall(self._c.keys.scope(scope))
        return decode_state({bytes(k).decode("utf-8"): bytes(v) for k, v in raw.items()})

    def merge(self, scope: str, delta: Mapping[str, JSON]) -> None:
        """Merge ``delta`` into the scope's state (``dict.update``), in one transaction."""
        encoded = encode_delta(scope, delta)
        if not encoded:
            return
        with self._c.guard():
            pipe = self._c.client.pipeline(transaction=True)
            pipe.hset(self._c.keys.scope(scope), mapping=encoded)
            pipe.sadd(self._c.keys.scopes, scope)
            pipe.execute()

    def delete(self, scope: str) -> None:
        """Remove the scope's whole state; idempotent."""
        validate_scope(scope)
        with self._c.guard():
            pipe = self._c.client.pipeline(transaction=True)
            pipe.delete(self._c.keys.scope(scope))
            pipe.srem(self._c.keys.scopes, scope)
            pipe.execute()

    def list(self, prefix: str = "") -> builtins.list[str]:
        """Return the ids of the scopes with state whose id starts with ``prefix``, sorted."""
        with self._c.guard():
            members = self._c.client.smembers(self._c.keys.scopes)
        found = (bytes(m).decode("utf-8") for m in members)
        return sorted(s for s in found if s.startswith(prefix))
