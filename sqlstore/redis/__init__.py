"""The Redis backend: ``RedisStore`` and ``copy_store`` (needs the ``redis`` extra)."""

from __future__ import annotations

from sqlstore.redis.copy import CopyReport, copy_store
from sqlstore.redis.store import RedisStore

__all__ = ["CopyReport", "RedisStore", "copy_store"]
