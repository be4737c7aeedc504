"""sqlstore: a durable, SQLite-backed session store for AI-agent runs.

One SQLite file (WAL mode, through apsw) holds, per session, the snapshot of the
whole session aggregate, an append-only event log read by resumable cursors, and
a tool-call audit trail. ``MemoryStore`` offers the same contracts in memory.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from sqlstore.audit import ToolCallRecord
from sqlstore.changes import Applied
from sqlstore.events import Event, LogRecord
from sqlstore.fold import SessionSeed, fold
from sqlstore.inventory import Lease, Page, SessionMeta, StoredSession
from sqlstore.memory import MemoryStore
from sqlstore.model import (
    Ask,
    Counters,
    Kind,
    Limits,
    Message,
    Part,
    Principal,
    Relationship,
    State,
    ToolCall,
    ToolResult,
    Usage,
)
from sqlstore.session import Session
from sqlstore.sqlite import SQLiteStore
from sqlstore.sqlite.options import SQLITE_URL_PREFIX, merge_options, parse_sqlite_url

if TYPE_CHECKING:  # the Redis backend is optional (extra `redis`); imported lazily by open()
    from sqlstore.redis import RedisStore

__version__ = "0.1.0"

__all__ = [
    "Applied",
    "Ask",
    "Counters",
    "Event",
    "Kind",
    "Lease",
    "Limits",
    "LogRecord",
    "MemoryStore",
    "Message",
    "Page",
    "Part",
    "Principal",
    "Relationship",
    "SQLiteStore",
    "Session",
    "SessionMeta",
    "SessionSeed",
    "State",
    "StoredSession",
    "ToolCall",
    "ToolCallRecord",
    "ToolResult",
    "Usage",
    "__version__",
    "fold",
    "open",
]


def open(target: str | os.PathLike[str], **options: Any) -> MemoryStore | SQLiteStore | RedisStore:
    """Open a store by URL: ``memory:``, ``sqlite:///rel.db``, ``sqlite:////abs.db``, a path,
    or ``redis://host:port/db`` (``RedisStore``; needs the ``redis`` extra).

    Options go to the backend's constructor (for SQLite: ``durability``,
    ``busy_timeout_ms``); a ``sqlite:///`` URL may carry them too
    (``sqlite:///x.db?durability=normal&busy_timeout_ms=200``, see
    :mod:`sqlstore.sqlite.options`).

    Raises:
        TypeError: ``target`` is neither a str nor a path object.
        ValueError: the URL scheme is not supported.
        InvalidOption: an unknown, repeated or invalid option (nothing is created).
    """
    if isinstance(target, os.PathLike):
        target = os.fspath(target)
    if not isinstance(target, str):
        raise TypeError(f"store target must be a URL or path str, not {type(target).__name__}")
    if target in ("memory:", "memory://"):
        if options:
            raise ValueError(f"MemoryStore takes no options, got {sorted(options)}")
        return MemoryStore()
    if target.startswith(("redis://", "rediss://")):
        # Redis support (sqlstore.redis) is imported lazily: `redis` is an optional extra.
        try:
            from sqlstore.redis import RedisStore
        except ModuleNotFoundError as exc:
            if exc.name != "redis":
                raise
            raise ValueError(
                "redis:// URLs need the redis client: pip install 'sqlstore[redis]'"
            ) from exc
        return RedisStore(target, **options)
    if target.startswith(SQLITE_URL_PREFIX):
        path, from_url = parse_sqlite_url(target)
        return SQLiteStore(path, **merge_options(from_url, options))
    if target.startswith("sqlite://"):
        raise ValueError("sqlite URLs are sqlite:///relative.db or sqlite:////absolute/path.db")
    if "://" in target:
        scheme = target.split("://", 1)[0]
        raise ValueError(
            f"unsupported store URL scheme {scheme!r}; use sqlite:///, memory: or redis://"
        )
    return SQLiteStore(target, **options)
