"""A sync face over ``sqlstore.aio``, so the conformance suites can run through the facade.

:class:`BlockingStore` runs an event loop in a thread of its own and drives an
:class:`~sqlstore.aio.AsyncStore` from sync code: every method call becomes
one coroutine run on that loop, and every async iterator becomes a sync
generator (whose ``close`` — an early ``break`` — awaits the iterator's
``aclose``). It adds no behaviour: what a suite sees is what an asyncio caller
of the facade sees. A test helper, not an API: asyncio code uses
:mod:`sqlstore.aio` directly.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable, Coroutine, Iterator
from types import TracebackType
from typing import Any, Self

import sqlstore.aio
from sqlstore.aio import AsyncRecords, AsyncStore
from sqlstore.ports import Store


class LoopThread:
    """An event loop running in a daemon thread, with a blocking ``call``."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="conformance-aio-loop", daemon=True
        )
        self._thread.start()

    def call(self, coro: Coroutine[Any, Any, Any]) -> Any:
        """Run ``coro`` on the loop and return its result (or raise its error)."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def stop(self) -> None:
        """Stop the loop, join its thread and close it."""
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()


class _Part:
    """One part of the facade (``sessions``, ``events``, ...) with sync methods."""

    def __init__(self, part: object, loop: LoopThread) -> None:
        self._part = part
        self._loop = loop

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self._part, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            if inspect.iscoroutinefunction(method):
                return self._loop.call(method(*args, **kwargs))
            result = method(*args, **kwargs)
            if isinstance(result, AsyncRecords):
                self._loop.call(result.opened())  # argument errors raised now, as in sync code
                return _blocking(self._loop, result)
            return result

        return call


def _blocking(loop: LoopThread, records: AsyncRecords[Any]) -> Iterator[Any]:
    try:
        while True:
            try:
                item = loop.call(records.__anext__())
            except StopAsyncIteration:
                return
            yield item
    finally:
        loop.call(records.aclose())


class BlockingStore:
    """A store whose every call goes through an ``AsyncStore`` on a private loop thread."""

    def __init__(
        self,
        make: Callable[[], Coroutine[Any, Any, AsyncStore]],
        *,
        also_close: Store | None = None,
    ) -> None:
        self._also_close = also_close
        self._loop = LoopThread()
        try:
            self.facade: AsyncStore = self._loop.call(make())
        except BaseException:
            self._loop.stop()
            raise
        self.sessions = _Part(self.facade.sessions, self._loop)
        self.events = _Part(self.facade.events, self._loop)
        self.audit = _Part(self.facade.audit, self._loop)
        self.leases = _Part(self.facade.leases, self._loop)
        self._closed = False

    def apply(self, session_id: str, **kwargs: Any) -> Any:
        """``store.apply`` through the facade."""
        return self._loop.call(self.facade.apply(session_id, **kwargs))

    def close(self) -> None:
        """Close the facade (and the sync store it opened), then stop the loop; idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            self._loop.call(self.facade.aclose())
        finally:
            self._loop.stop()
            if self._also_close is not None:
                self._also_close.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def open_blocking(target: str) -> BlockingStore:
    """Open ``target`` with ``sqlstore.aio.open`` behind a :class:`BlockingStore`.

    Usable as a :class:`~sqlstore.conformance.base.ProcessTarget` opener, so a
    suite's second process goes through the facade too.
    """

    async def make() -> AsyncStore:
        return await sqlstore.aio.open(target)

    return BlockingStore(make)


def wrap_blocking(store: Store) -> BlockingStore:
    """Put an ``AsyncStore`` from ``sqlstore.aio.wrap`` over ``store`` behind a BlockingStore.

    Closing the result closes ``store`` as well (the suites close what they made).
    """

    async def make() -> AsyncStore:
        return sqlstore.aio.wrap(store)

    return BlockingStore(make, also_close=store)
