"""The bounded thread pool the saver's coroutines run their store calls on.

sqlstore's stores are synchronous and thread-safe; a coroutine hands the call
to this pool and awaits it, so the event loop never blocks on SQLite or
Redis. Concurrent ``aput`` calls from many tasks then reach the SQLite writer
from several threads at once and are group-committed (one fsync for all that
wait). A write already handed over finishes even if the awaiting task is
cancelled (``asyncio.shield``): its outcome is durable or an error, never
half-done.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

ASYNC_WORKERS = 16
"""Threads that run store calls for coroutines (per saver)."""

P = ParamSpec("P")
T = TypeVar("T")


class Offload:
    """A lazily started thread pool of ``ASYNC_WORKERS`` threads, shut down by :meth:`close`."""

    def __init__(self, workers: int = ASYNC_WORKERS) -> None:
        self._workers = workers
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="sqlstore-lg")
            return self._pool

    async def read(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run a read on the pool and await it (cancelling the await abandons the result)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor(), functools.partial(fn, *args, **kwargs))

    async def write(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run a write on the pool; cancelling the awaiting task does not cancel the write."""
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(self._executor(), functools.partial(fn, *args, **kwargs))
        return await asyncio.shield(future)

    def close(self) -> None:
        """Wait for running calls and stop the threads; idempotent."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
