"""``SQLiteScopes``: scoped state (``store.scopes``) in the ``scoped_state`` table.

One row per (scope, key) with the value's JSON text, so a merge is one upsert
per key of the delta and never reads or rewrites the other keys.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping

import apsw

from sqlstore import clock
from sqlstore.model import JSON
from sqlstore.scopes import decode_state, encode_delta, validate_scope
from sqlstore.sqlite.database import Database


def merge_scopes(
    conn: apsw.Connection, deltas: Mapping[str, Mapping[str, str]], now_ns: int
) -> None:
    """Upsert encoded scope deltas inside the caller's write transaction."""
    conn.executemany(
        "INSERT INTO scoped_state (scope, key, value, modified_at_ns) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (scope, key) DO UPDATE SET value = excluded.value, "
        "modified_at_ns = excluded.modified_at_ns",
        [
            (scope, key, text, now_ns)
            for scope, delta in deltas.items()
            for key, text in delta.items()
        ],
    )


class SQLiteScopes:
    """Key/value JSON state per scope, shared beyond sessions (see :mod:`sqlstore.scopes`)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def get(self, scope: str) -> dict[str, JSON]:
        """Return the scope's state (``{}`` when none was stored)."""
        validate_scope(scope)
        with self._db.reader() as conn:
            found = conn.execute(
                "SELECT key, value FROM scoped_state WHERE scope = ?", (scope,)
            ).fetchall()
        return decode_state({str(key): str(value) for key, value in found})

    def merge(self, scope: str, delta: Mapping[str, JSON]) -> None:
        """Merge ``delta`` into the scope's state (``dict.update``): one durable transaction."""
        encoded = encode_delta(scope, delta)
        if encoded:
            self._db.write(lambda conn: merge_scopes(conn, {scope: encoded}, clock.now_ns()))

    def delete(self, scope: str) -> None:
        """Remove the scope's whole state; idempotent."""
        validate_scope(scope)
        self._db.write(
            lambda conn: conn.execute("DELETE FROM scoped_state WHERE scope = ?", (scope,))
        )

    def list(self, prefix: str = "") -> builtins.list[str]:
        """Return the ids of the scopes with state whose id starts with ``prefix``, sorted."""
        with self._db.reader() as conn:
            found = conn.execute(
                "SELECT DISTINCT scope FROM scoped_state WHERE substr(scope, 1, ?) = ? "
                "ORDER BY scope",
                (len(prefix), prefix),
            ).fetchall()
        return [str(scope) for (scope,) in found]
