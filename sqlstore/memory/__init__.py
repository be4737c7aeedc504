"""The in-process backend: ``MemoryStore`` (same package shape as ``sqlite/`` and ``redis/``)."""

from __future__ import annotations

from sqlstore.clock import MAX_LEASE_TTL, ttl_ns
from sqlstore.inventory import meta_for, rows_match
from sqlstore.memory.store import MemoryStore

# meta_for, rows_match and ttl_ns lived here before they moved to the domain
# modules that own them; they stay importable from here.
__all__ = ["MAX_LEASE_TTL", "MemoryStore", "meta_for", "rows_match", "ttl_ns"]
