"""The Redis backend: ``RedisStore`` (needs the ``redis`` extra).

``copy_store`` (in :mod:`sqlstore.migrate.copy`, re-exported here) moves sessions
between any two stores, for example a SQLite file and Redis.
"""

from __future__ import annotations

from sqlstore.migrate.copy import CopyReport, copy_store
from sqlstore.redis.store import RedisStore

__all__ = ["CopyReport", "RedisStore", "copy_store"]
