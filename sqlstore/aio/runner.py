"""The executor behind ``sqlstore.aio``: sync store calls on a bounded pool of its own.

Every coroutine of an :class:`~sqlstore.aio.AsyncStore` runs the sync method in
a ``ThreadPoolExecutor`` owned by that store (``AIO_MAX_WORKERS`` threads named
``sqlstore-aio``), never in the event loop's default executor, so a slow fsync
or a busy lock blocks a worker thread, never the loop, and the store's threads
cannot starve (or be starved by) whatever else the application runs there.

**Writes are shielded from cancellation.** Cancelling a task awaiting a write
does not stop the write: it still completes or fails as one unit in its worker
thread (the store's rule is that an unknown outcome is never retried, so a
write must not be abandoned half-known either). The cancelled caller gets
``CancelledError`` without the outcome, but only once the write has ended, so
the state it reads back then is final (cancelling, ``asyncio.timeout`` and
``wait_for`` included, therefore waits for a write blocked by another process's
lock, at most the busy timeout). A write that fails after its caller was
cancelled is logged on the ``sqlstore.aio`` logger (nobody awaits its error),
and :meth:`AsyncStore.aclose` waits for every running write before the sync
store is closed. Reads are not shielded: a cancelled read's result is
dropped when its thread finishes.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import threading
import weakref
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, ParamSpec, TypeVar

from sqlstore.aio.records import AsyncRecords
from sqlstore.errors import StoreClosed

AIO_MAX_WORKERS = 16
"""Worker threads of one async store: the most sync calls it runs at once. Concurrent
appends of these threads share group commits, so more workers than writers helps little."""

P = ParamSpec("P")
T = TypeVar("T")

log = logging.getLogger("sqlstore.aio")


def check_workers(max_workers: int) -> None:
    """Raise ``ValueError`` unless ``max_workers`` is an int >= 1."""
    if isinstance(max_workers, bool) or not isinstance(max_workers, int) or max_workers < 1:
        raise ValueError(f"max_workers must be an int >= 1, got {max_workers!r}")


class Runner:
    """Runs sync calls of one store on its own bounded thread pool."""

    def __init__(self, max_workers: int = AIO_MAX_WORKERS) -> None:
        check_workers(max_workers)
        self.max_workers = max_workers
        self._executor = ThreadPoolExecutor(max_workers, thread_name_prefix="sqlstore-aio")
        self._writes: set[Future[Any]] = set()
        self._streams: weakref.WeakSet[AsyncRecords[Any]] = weakref.WeakSet()
        self.closed = False

    def check_open(self) -> None:
        """Raise ``StoreClosed`` after :meth:`shutdown` began."""
        if self.closed:
            raise StoreClosed("the async store is closed")

    async def read(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Run ``fn(*args, **kwargs)`` in the pool and return its result (cancellable wait)."""
        self.check_open()
        return await self.run(fn, *args, **kwargs)

    async def run(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Run a call in the pool without the open check (used while closing)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(fn, *args, **kwargs))

    async def write(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Run a write in the pool, shielded: cancelling the caller never cancels the write.

        The write is submitted to the pool directly (not through
        ``run_in_executor``, whose future cancels a queued job when its awaiter
        is cancelled) and its outcome is handed to a loop future nobody else
        can cancel through: the same two thread hops as a read, no more.
        """
        loop = asyncio.get_running_loop()
        job = self.submit(fn, *args, **kwargs)
        waiter: asyncio.Future[T] = loop.create_future()
        name = getattr(fn, "__name__", "write")

        def finished(done: Future[T]) -> None:  # runs in the worker thread
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody is waiting
                loop.call_soon_threadsafe(_hand_over, done, waiter, name)

        job.add_done_callback(finished)
        try:
            return await waiter
        except asyncio.CancelledError:
            # The caller learns of its cancellation only once the write has ended, so
            # the state it reads back next is the write's outcome, not a moment of it.
            await _settled(job)
            raise

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        """Start a write in the pool and return its job (:meth:`drain` waits for it)."""
        self.check_open()
        job = self._executor.submit(functools.partial(fn, *args, **kwargs))
        self._writes.add(job)
        job.add_done_callback(self._writes.discard)
        return job

    def stream(
        self, open_iter: Callable[[threading.Event], Iterator[T]], stop: threading.Event | None
    ) -> AsyncRecords[T]:
        """Return an async iterator over ``open_iter(stop_flag)``, ended by ``close_streams``."""
        self.check_open()
        records = AsyncRecords(open_iter, stop)
        self._streams.add(records)
        return records

    async def close_streams(self) -> None:
        """End every stream still open and wait until their reader threads have exited."""
        for records in list(self._streams):
            await records.aclose()

    async def drain(self) -> None:
        """Wait until every write started so far has finished (whatever its outcome)."""
        while self._writes:
            pending = [asyncio.shield(asyncio.wrap_future(job)) for job in list(self._writes)]
            await asyncio.gather(*pending, return_exceptions=True)

    def shutdown(self) -> None:
        """Let the worker threads exit once idle; later calls raise ``StoreClosed``."""
        self.closed = True
        self._executor.shutdown(wait=False)


async def _settled(job: Future[Any]) -> None:
    """Wait until a write job has finished, through any further cancellation of the caller."""
    done = asyncio.wrap_future(job)
    while not done.done():
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await asyncio.shield(done)  # the job's own error is logged by _hand_over
    if not done.cancelled():
        done.exception()  # retrieved: nobody else awaits this wrapper


def _hand_over(done: Future[T], waiter: asyncio.Future[T], name: str) -> None:
    """Give a finished write's outcome to its caller, or log a failure nobody awaits."""
    error = done.exception()
    if waiter.cancelled():
        if error is not None:
            log.warning("a write (%s) whose caller was cancelled failed: %r", name, error)
        return
    if error is not None:
        waiter.set_exception(error)
    else:
        waiter.set_result(done.result())
