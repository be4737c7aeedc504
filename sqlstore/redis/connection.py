"""The connection of a ``RedisStore``: client setup, scripts, and the one error boundary.

redis-py errors are translated to sqlstore errors here and nowhere else
(:meth:`Connection.guard`), always with ``raise ... from``. Errors that mean a
bug in our own commands (a Lua error, a wrong argument count) propagate
untranslated, as apsw's ``SQLError`` does in the SQLite backend.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import redis
import redis.exceptions
from redis.backoff import NoBackoff
from redis.retry import Retry

from sqlstore.errors import (
    StoreClosed,
    StoreCorrupt,
    StoreFull,
    StoreIOError,
    StoreReadOnly,
    StoreUnavailable,
)
from sqlstore.redis import checkpoint_scripts, scripts
from sqlstore.redis.keys import DEFAULT_PREFIX, Keys

CONNECT_TIMEOUT_S = 5.0
"""How long opening a TCP connection to Redis may take before ``StoreUnavailable``."""

MIN_SERVER_VERSION = (7, 0)
"""Oldest Redis the scripts run on (they use ``#!lua`` flags)."""

SOCKET_TIMEOUT_S = 60.0
"""How long one reply may take (follow slices block far shorter than this)."""

HEALTH_CHECK_S = 10
"""A pooled connection idle this long is PINGed before reuse (drops stale ones safely)."""


def split_url(url: str) -> tuple[str, str | None]:
    """Return (url without our own ``prefix`` query parameter, that prefix or None)."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    prefix = None
    kept = []
    for name, value in query:
        if name == "prefix":
            prefix = value
        else:
            kept.append((name, value))
    return urlunsplit(parts._replace(query=urlencode(kept))), prefix


def parse_version(text: str) -> tuple[int, ...]:
    """Return the leading numeric parts of a version string (``"7.0.15"`` → ``(7, 0, 15)``)."""
    parts = []
    for piece in text.split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def redacted(url: str) -> str:
    """Return the URL with any password replaced by ``***`` (for messages)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}{port}"))


class Connection:
    """A redis-py client plus the registered scripts and the closed flag of one store."""

    def __init__(self, client: Any, *, prefix: str, owns_client: bool, where: str) -> None:
        if not prefix:
            raise ValueError("prefix must not be empty")
        self.client: Any = client
        self.keys = Keys(prefix)
        self.prefix = prefix
        self.where = where
        self._owns_client = owns_client
        self._closed = threading.Event()
        self.put = client.register_script(scripts.PUT)
        self.delete = client.register_script(scripts.DELETE)
        self.append = client.register_script(scripts.APPEND)
        self.audit = client.register_script(scripts.AUDIT)
        self.range = client.register_script(scripts.RANGE)
        self.log_read = client.register_script(scripts.LOG_READ)
        self.import_session = client.register_script(scripts.IMPORT)
        self.retention_run = client.register_script(scripts.RETENTION_RUN)
        self.lease_acquire = client.register_script(scripts.LEASE_ACQUIRE)
        self.lease_renew = client.register_script(scripts.LEASE_RENEW)
        self.lease_release = client.register_script(scripts.LEASE_RELEASE)
        self.apply = client.register_script(scripts.APPLY)
        self.log_tail = client.register_script(scripts.LOG_TAIL)
        self.cp_put = client.register_script(checkpoint_scripts.PUT)
        self.cp_writes = client.register_script(checkpoint_scripts.WRITES)
        self.cp_page = client.register_script(checkpoint_scripts.PAGE)
        self.cp_remove = client.register_script(checkpoint_scripts.REMOVE)
        self.cp_copy = client.register_script(checkpoint_scripts.COPY)
        self.cp_summary = client.register_script(checkpoint_scripts.SUMMARY)
        self.cp_import = client.register_script(checkpoint_scripts.IMPORT)

    @classmethod
    def from_url(cls, url: str, *, prefix: str | None = None) -> Connection:
        """Connect to ``redis://``, ``rediss://`` or ``unix://`` URL and check it answers.

        A ``prefix`` query parameter in the URL sets the key prefix unless
        ``prefix`` is given.

        Raises:
            StoreUnavailable: the server cannot be reached or rejects the login.
            ValueError: the URL is not a Redis URL.
        """
        plain, url_prefix = split_url(url)
        chosen = prefix if prefix is not None else (url_prefix or DEFAULT_PREFIX)
        # No automatic retries: redis-py would resend a command whose reply was lost, and
        # an append sent twice is stored twice (writes are at most once; SPEC §3.2).
        client = redis.Redis.from_url(
            plain,
            socket_connect_timeout=CONNECT_TIMEOUT_S,
            socket_timeout=SOCKET_TIMEOUT_S,
            health_check_interval=HEALTH_CHECK_S,
            retry=Retry(NoBackoff(), 0),
        )
        conn = cls(client, prefix=chosen, owns_client=True, where=redacted(plain))
        try:
            conn.check_server()
        except BaseException:
            conn.close()
            raise
        return conn

    @classmethod
    def from_client(cls, client: Any, *, prefix: str) -> Connection:
        """Wrap a caller's ``redis.Redis`` client (not closed by ``close()``)."""
        if not isinstance(client, redis.Redis):
            raise TypeError(f"expected a redis.Redis client or a URL, got {type(client).__name__}")
        kwargs = client.connection_pool.connection_kwargs
        where = f"{kwargs.get('host', kwargs.get('path', '?'))}:{kwargs.get('port', '')}"
        conn = cls(client, prefix=prefix, owns_client=False, where=where)
        conn.check_server()
        return conn

    def check_server(self) -> None:
        """Check that the server answers and is recent enough.

        Raises:
            StoreUnavailable: it cannot be reached, or is older than Redis 7.0.
        """
        with self.guard():
            info = self.client.info("server")
        version = str(info.get("redis_version", "0"))
        if parse_version(version) < MIN_SERVER_VERSION:
            raise StoreUnavailable(
                f"Redis at {self.where} is version {version}; sqlstore needs 7.0 or later",
                hint="Upgrade the Redis server (Debian 12 ships 7.0).",
            )

    @property
    def closed(self) -> bool:
        """True once ``close()`` ran."""
        return self._closed.is_set()

    def close(self) -> None:
        """Mark closed and, if the client is ours, close it; idempotent."""
        if self._closed.is_set():
            return
        self._closed.set()
        if self._owns_client:
            self.client.close()

    def check_open(self) -> None:
        """Raise ``StoreClosed`` after ``close()``."""
        if self._closed.is_set():
            raise StoreClosed("the store is closed")

    @contextmanager
    def guard(self) -> Iterator[None]:
        """Check the store is open and translate redis-py errors raised inside."""
        self.check_open()
        try:
            yield
        except redis.exceptions.AuthenticationError as exc:
            raise StoreUnavailable(
                f"Redis at {self.where} rejected the login: {exc}",
                hint="Put the right user and password in the URL (redis://user:pass@host:port/db).",
            ) from exc
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
            if self._closed.is_set():
                raise StoreClosed("the store is closed") from exc
            raise StoreUnavailable(f"Redis at {self.where} is unavailable: {exc}") from exc
        except redis.exceptions.ReadOnlyError as exc:
            raise StoreReadOnly(
                f"Redis at {self.where} is read-only: {exc}",
                hint="Point the URL at the primary, not at a replica.",
            ) from exc
        except redis.exceptions.ResponseError as exc:
            text = str(exc)
            if isinstance(exc, redis.exceptions.OutOfMemoryError) or text.startswith("OOM"):
                raise StoreFull(
                    f"Redis at {self.where} is out of memory: {text}",
                    hint="Raise maxmemory (and use a noeviction policy), or prune stale sessions "
                    "with `sqlstore prune`.",
                ) from exc
            if text.startswith("MISCONF"):
                raise StoreIOError(
                    f"Redis at {self.where} cannot persist to disk and refuses writes: {text}",
                    hint="Fix the server's persistence (its log says why: disk full, `dir` not "
                    "writable), e.g. check `redis-cli CONFIG GET dir` and `redis-cli INFO "
                    "persistence`; writes resume once a save succeeds.",
                ) from exc
            if "WRONGTYPE" in text:
                raise StoreCorrupt(
                    f"a key under prefix {self.prefix!r} at {self.where} has an unexpected type: "
                    f"{text}",
                    hint="Another program writes under this prefix; use a prefix of its own.",
                ) from exc
            if text.startswith(("NOAUTH", "WRONGPASS", "NOPERM")):
                raise StoreUnavailable(
                    f"Redis at {self.where} refused the command: {text}",
                    hint="Put a user and password with the needed ACL rights in the URL.",
                ) from exc
            raise
