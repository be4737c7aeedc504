"""sqlstore from asyncio: the same stores, their methods as coroutines.

    async with sqlstore.aio.open("agent.db") as store:
        await store.sessions.save(session)
        cursors = await store.events.append_events(session.id, events)
        async for record in store.events.read_after(session.id, follow=True):
            ...

* :func:`open` takes the targets and options of :func:`sqlstore.open`;
  :func:`wrap` puts an ``AsyncStore`` over a sync store that stays open.
* :class:`AsyncStore` has ``sessions``, ``events``, ``audit`` and ``leases``
  with the sync methods as coroutines (same names, arguments and errors),
  ``apply``, and ``sync`` (the sync store).
* Calls run on the store's own bounded thread pool (``max_workers``, default
  :data:`AIO_MAX_WORKERS`), never on the loop's default executor, so a slow
  fsync never blocks the event loop.
* **Writes are shielded from cancellation**: a cancelled caller's write still
  completes or fails as one unit; the caller gets ``CancelledError`` once it
  has ended, and must read the state back rather than retry (see
  :mod:`sqlstore.aio.runner`).
* ``read``, ``read_after`` (also with ``follow=True``) and ``iter_meta`` are
  async iterators; cancelling the consuming task or ``aclose()`` ends them
  cleanly, with no thread left waiting (see :mod:`sqlstore.aio.records`).
"""

from __future__ import annotations

from sqlstore.aio.parts import AsyncAudit, AsyncEvents, AsyncLeases, AsyncSessions
from sqlstore.aio.records import AsyncRecords
from sqlstore.aio.runner import AIO_MAX_WORKERS
from sqlstore.aio.store import AsyncStore, open, wrap

__all__ = [
    "AIO_MAX_WORKERS",
    "AsyncAudit",
    "AsyncEvents",
    "AsyncLeases",
    "AsyncRecords",
    "AsyncSessions",
    "AsyncStore",
    "open",
    "wrap",
]
