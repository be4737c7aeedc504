"""Async iterators over the sync stores' record streams (``read``, ``read_after``, ``iter_meta``).

Each :class:`AsyncRecords` drives one sync iterator in a thread of its own
(named ``sqlstore-aio-reader``; a following read parks there, not in the
store's worker pool, so followers can never use up the workers that writes
need). The thread hands records to the event loop through a window of
``READ_WINDOW`` records, so a slow consumer holds the producer back instead of
buffering the whole log.

Ending: when the records run out, when ``aclose()`` is awaited, when the task
consuming it is cancelled, or when the iterator is garbage-collected, a stop
flag is set that the sync follower checks between its short waits (SQLite:
every few ms; memory: 50 ms; Redis: one ``XREAD`` slice); the thread then
closes the sync iterator (releasing its connection) and exits. ``aclose()``
returns only after the thread has exited, so no thread is left waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Generic, TypeVar

T = TypeVar("T")

READ_WINDOW = 256
"""Records a reader thread may hand over before the consumer takes them."""

_ROOM_RECHECK_S = 0.05
"""How often a producer held back by a full window re-checks the stop flag."""


class _Stop(threading.Event):
    """Set by the async side to end the read; also set when the caller's own ``stop`` is."""

    def __init__(self, user: threading.Event | None) -> None:
        super().__init__()
        self._user = user

    def is_set(self) -> bool:
        return super().is_set() or (self._user is not None and self._user.is_set())


class AsyncRecords(Generic[T]):
    """An async iterator over a sync iterator run in its own thread (see the module doc)."""

    def __init__(
        self, open_iter: Callable[[threading.Event], Iterator[T]], stop: threading.Event | None
    ) -> None:
        self._open_iter = open_iter
        self._stop = _Stop(stop)
        self._room = threading.Semaphore(READ_WINDOW)
        self._queue: asyncio.Queue[tuple[str, object]] | None = None
        self._opened: asyncio.Future[None] | None = None
        self._exited: Future[None] = Future()
        self._thread: threading.Thread | None = None
        self._finished = False

    def __aiter__(self) -> AsyncRecords[T]:
        return self

    async def opened(self) -> None:
        """Start the read and wait until the sync iterator exists (its argument errors raised)."""
        if self._finished and self._thread is None:
            return  # closed before it started: there is nothing to open
        self._start()
        assert self._opened is not None
        await self._opened

    async def __anext__(self) -> T:
        if self._finished:
            raise StopAsyncIteration
        self._start()
        assert self._queue is not None
        try:
            kind, value = await self._queue.get()
        except asyncio.CancelledError:
            self._stop.set()
            self._finished = True
            raise
        if kind == "item":
            self._room.release()
            return value  # type: ignore[return-value]
        self._finished = True
        await self._thread_exit()
        if kind == "error":
            assert isinstance(value, BaseException)
            raise value
        raise StopAsyncIteration

    async def aclose(self) -> None:
        """End the read and wait until its thread has closed the sync iterator and exited."""
        self._stop.set()
        self._finished = True
        self._room.release()  # wakes a producer held back by a full window at once
        if self._thread is not None:
            await self._thread_exit()

    async def _thread_exit(self) -> None:
        # Shielded: a cancelled wait must not cancel the future the thread will still set.
        await asyncio.shield(asyncio.wrap_future(self._exited))
        if self._thread is not None:
            # ``exited`` is the thread's last act: only its return is left to wait for.
            self._thread.join()

    def __del__(self) -> None:
        # A forgotten iterator must not keep a follower parked for ever.
        self._stop.set()

    def _start(self) -> None:
        if self._thread is not None:
            return
        loop = asyncio.get_running_loop()
        self._queue = asyncio.Queue()
        self._opened = loop.create_future()
        self._thread = threading.Thread(
            target=_produce,
            args=(self._open_iter, self._stop, self._room, loop, self._queue, self._opened),
            kwargs={"exited": self._exited},
            name="sqlstore-aio-reader",
            daemon=True,
        )
        self._thread.start()


def _produce(
    open_iter: Callable[[threading.Event], Iterator[T]],
    stop: threading.Event,
    room: threading.Semaphore,
    loop: asyncio.AbstractEventLoop,
    queue: asyncio.Queue[tuple[str, object]],
    opened: asyncio.Future[None],
    *,
    exited: Future[None],
) -> None:
    """Thread body: open the sync iterator, hand its items over, close it, report the end.

    A function, not a method: the thread holds no reference to the AsyncRecords,
    so a forgotten iterator can be collected (and its ``__del__`` stops the read).
    """

    def post(kind: str, value: object) -> None:
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody is left to receive it
            loop.call_soon_threadsafe(queue.put_nowait, (kind, value))

    def settle(error: BaseException | None) -> None:
        def set_it() -> None:
            if opened.done():
                return
            if error is None:
                opened.set_result(None)
            else:
                opened.set_exception(error)
                opened.exception()  # retrieved here too: __anext__ reports it from the queue

        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(set_it)

    try:
        try:
            items = open_iter(stop)
        except BaseException as exc:  # handed to the consumer, which raises it
            settle(exc)
            post("error", exc)
            return
        settle(None)
        try:
            for item in items:
                while not room.acquire(timeout=_ROOM_RECHECK_S) and not stop.is_set():
                    pass
                if stop.is_set():
                    break
                post("item", item)
            post("end", None)  # also after a stop: a consumer may still be waiting
        except BaseException as exc:  # handed to the consumer, which raises it
            post("error", exc)
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()
    finally:
        exited.set_result(None)  # nobody can cancel it: every wait on it is shielded
