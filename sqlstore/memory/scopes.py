"""``MemoryScopes``: scoped state (``store.scopes``) in memory."""

from __future__ import annotations

import builtins
from collections.abc import Mapping

from sqlstore.memory.state import MemoryState
from sqlstore.model import JSON
from sqlstore.scopes import decode_state, encode_delta, validate_scope


class MemoryScopes:
    """Key/value JSON state per scope, shared beyond sessions (see :mod:`sqlstore.scopes`)."""

    def __init__(self, state: MemoryState) -> None:
        self._state = state

    def get(self, scope: str) -> dict[str, JSON]:
        """Return the scope's state (``{}`` when none was stored)."""
        validate_scope(scope)
        with self._state.lock:
            self._state.check_open()
            return decode_state(dict(self._state.scopes.get(scope, {})))

    def merge(self, scope: str, delta: Mapping[str, JSON]) -> None:
        """Merge ``delta`` into the scope's state (``dict.update``), atomically."""
        encoded = encode_delta(scope, delta)
        with self._state.lock:
            self._state.check_open()
            self._state.merge_scopes({scope: encoded} if encoded else {})

    def delete(self, scope: str) -> None:
        """Remove the scope's whole state; idempotent."""
        validate_scope(scope)
        with self._state.lock:
            self._state.check_open()
            self._state.scopes.pop(scope, None)

    def list(self, prefix: str = "") -> builtins.list[str]:
        """Return the ids of the scopes with state whose id starts with ``prefix``, sorted."""
        with self._state.lock:
            self._state.check_open()
            return sorted(
                s for s, rows in self._state.scopes.items() if rows and s.startswith(prefix)
            )
