"""The Redis backend: ``RedisStore`` (needs the ``redis`` extra).

``copy_store`` (in :mod:`sqlstore.migrate.copy`) moves sessions between any two
stores, for example a SQLite file and Redis; it stays importable from here.
"""

from __future__ import annotations

from typing import Any

from sqlstore.redis.store import RedisStore

__all__ = ["CopyReport", "RedisStore", "copy_store"]


def __getattr__(name: str) -> Any:
    """Resolve ``copy_store`` and ``CopyReport`` on first use (a backend never needs migrate)."""
    if name in ("copy_store", "CopyReport"):
        # The one import of sqlstore.migrate from a backend package: a documented
        # public re-export, resolved lazily so no backend module depends on migrate.
        from sqlstore.migrate import copy as _copy

        return getattr(_copy, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
