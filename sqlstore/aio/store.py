"""``AsyncStore``, ``open`` and ``wrap``: any sync store behind coroutines."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Generator, Mapping, Sequence
from types import TracebackType
from typing import Any

import sqlstore
from sqlstore.aio.parts import AsyncAudit, AsyncEvents, AsyncLeases, AsyncSessions
from sqlstore.aio.runner import AIO_MAX_WORKERS, Runner, check_workers
from sqlstore.audit import ToolCallRecord
from sqlstore.changes import Applied
from sqlstore.events import Event
from sqlstore.model import JSON
from sqlstore.ports import Store
from sqlstore.session import Session


class AsyncStore:
    """A sync store driven from asyncio: ``sessions``, ``events``, ``audit``, ``leases``, ``apply``.

    The methods are the sync ones as coroutines, with the same names, arguments
    and errors (``read``, ``read_after`` and ``iter_meta`` return async
    iterators). ``sync`` is the underlying store, for code that is not async.
    Every call runs on this store's own pool of ``max_workers`` threads; writes
    are shielded from cancellation (see :mod:`sqlstore.aio.runner`).

    Use it as ``async with`` (or call :meth:`aclose`): closing ends open streams,
    waits for writes still running (also those whose caller was cancelled),
    stops the pool, and closes the sync store if this object opened it.
    """

    def __init__(
        self, sync: Store, *, owns_store: bool, max_workers: int = AIO_MAX_WORKERS
    ) -> None:
        self.sync = sync
        self._owns_store = owns_store
        self._runner = Runner(max_workers)
        self._closing: asyncio.Future[None] | None = None
        self.sessions = AsyncSessions(sync.sessions, self._runner)
        self.events = AsyncEvents(sync.events, self._runner)
        self.audit = AsyncAudit(sync.audit, self._runner)
        self.leases = AsyncLeases(sync.leases, self._runner)

    @property
    def max_workers(self) -> int:
        """How many sync calls this store runs at once."""
        return self._runner.max_workers

    async def apply(
        self,
        session_id: str,
        *,
        snapshot: Session | None = None,
        events: Sequence[Event] = (),
        audit: Sequence[ToolCallRecord] = (),
        expected_version: int | None = None,
        scopes: Mapping[str, Mapping[str, JSON]] | None = None,
    ) -> Applied:
        """Write snapshot, events, audit rows and scope deltas as one unit (shielded write).

        See the sync store's ``apply``: all or nothing, conditional with
        ``expected_version``; ``VersionConflict`` when the version does not match.
        """
        return await self._runner.write(
            self.sync.apply,
            session_id,
            snapshot=snapshot,
            events=events,
            audit=audit,
            expected_version=expected_version,
            scopes=scopes,
        )

    async def aclose(self) -> None:
        """End streams, wait for running writes, stop the pool, close an owned store; idempotent.

        Closing runs as a task of its own: cancelling a caller of ``aclose`` does
        not stop it half-way, and every later ``aclose`` waits for that same task.
        """
        if self._closing is None:
            self._runner.closed = True
            self._closing = asyncio.ensure_future(self._close())
        await asyncio.shield(self._closing)

    async def _close(self) -> None:
        await self._runner.close_streams()
        await self._runner.drain()
        try:
            if self._owns_store:
                await self._runner.run(self.sync.close)
        finally:
            self._runner.shutdown()

    async def __aenter__(self) -> AsyncStore:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"AsyncStore({self.sync!r})"


class _Opening:
    """What :func:`open` returns: ``async with`` it, or ``await`` it for the store."""

    def __init__(
        self, target: str | os.PathLike[str], options: dict[str, Any], max_workers: int
    ) -> None:
        self._target = target
        self._options = options
        self._max_workers = max_workers
        self._store: AsyncStore | None = None

    async def _open(self) -> AsyncStore:
        # Opening may create the file and its schema (disk I/O): done on the store's own pool.
        runner = Runner(1)
        try:
            sync = await runner.run(sqlstore.open, self._target, **self._options)
        finally:
            runner.shutdown()
        return AsyncStore(sync, owns_store=True, max_workers=self._max_workers)

    def __await__(self) -> Generator[Any, None, AsyncStore]:
        return self._open().__await__()

    async def __aenter__(self) -> AsyncStore:
        self._store = await self._open()
        return self._store

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._store is not None:
            await self._store.aclose()


def open(
    target: str | os.PathLike[str], *, max_workers: int = AIO_MAX_WORKERS, **options: Any
) -> _Opening:
    """Open a store by target, as :func:`sqlstore.open` does, for use from asyncio.

    ``async with sqlstore.aio.open("app.db") as store:`` (closed on exit), or
    ``store = await sqlstore.aio.open(...)`` (then ``await store.aclose()``).
    Accepts the same targets and options as :func:`sqlstore.open`; the sync
    store is opened in a worker thread, never on the event loop.

    Raises:
        TypeError: ``target`` is neither a str nor a path object (as ``sqlstore.open``).
        ValueError: unsupported target (as ``sqlstore.open``), or ``max_workers`` < 1.
        StoreError: the store cannot be opened (as ``sqlstore.open``).
    """
    check_workers(max_workers)
    return _Opening(target, options, max_workers)


def wrap(store: Store, *, max_workers: int = AIO_MAX_WORKERS) -> AsyncStore:
    """Return an ``AsyncStore`` over an open sync store it shares and does not close.

    ``aclose()`` of the result ends its streams and its pool; the sync store
    stays open for its owner.
    """
    return AsyncStore(store, owns_store=False, max_workers=max_workers)
