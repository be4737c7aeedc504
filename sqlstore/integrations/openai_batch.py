"""Concurrent ``add_items`` calls of one event-loop round share one worker job and one commit.

A server runs many conversations in one event loop: 8 tasks each awaiting
``add_items`` on its own session would otherwise cost two thread hops per call
and one member per call in the store's group commit, with the worker threads
contending for the GIL. ``AddBatcher`` queues every ``add_items`` made on a
store before the loop runs its next round of callbacks and hands them to one
worker-thread job (:class:`sqlstore.aio.rounds.RoundBatcher`: one hop there,
one back), which builds each call's unit
under its session's lock and writes them all with
:func:`sqlstore.ports.apply_each` (on SQLite one transaction and one fsync,
each unit still its own: one that fails is rolled back alone).

Each call keeps the semantics of an ``add_items`` alone: its unit is
conditional on the version its session last saw; a unit refused for a
conflict, an expired read or an item that does not encode is redone by the
session's own retrying path, after the batch, in call order. A call whose
session is busy (another of its operations holds the lock, or it appears twice
in the round) also runs on its own after the batch, so a session's calls are
written in the order they were made. Each caller gets its own result or error.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sqlstore.aio.rounds import Outcome, RoundBatcher
from sqlstore.aio.runner import AIO_MAX_WORKERS, Runner
from sqlstore.changes import Unit
from sqlstore.errors import CursorExpired, InvalidEvent, StoreClosed, VersionConflict
from sqlstore.ports import Store, apply_each
from sqlstore.session import Session

if TYPE_CHECKING:
    from sqlstore.integrations.openai_agents import SqlstoreSession

Call = tuple["SqlstoreSession", list[Any], list[Any]]
"""One queued ``add_items``: the session, its items and their events."""

REDO_ALONE = (VersionConflict, CursorExpired, InvalidEvent)
"""Outcomes of a batched unit that the session's own retrying path redoes."""

_BATCHERS: weakref.WeakKeyDictionary[Any, AddBatcher] = weakref.WeakKeyDictionary()

_POOL = Runner(AIO_MAX_WORKERS)
"""The worker threads of every batch job (shared by the stores of this process)."""


def _reference(store: Store) -> Callable[[], Store | None]:
    try:
        return weakref.ref(store)
    except TypeError:  # no weak references: the batcher is the store's own
        return lambda: store


def batcher_for(store: Store) -> AddBatcher:
    """Return the batcher shared by every ``SqlstoreSession`` on ``store``."""
    try:
        found = _BATCHERS.get(store)
        if found is None:
            found = _BATCHERS[store] = AddBatcher(store)
        return found
    except TypeError:  # a store that takes no weak reference: a batcher of its own
        return AddBatcher(store)


class AddBatcher:
    """Writes each event-loop round of ``add_items`` calls on one store as one job."""

    def __init__(self, store: Store) -> None:
        # Weak: the batchers map holds its stores weakly, and a strong reference from
        # the value would keep every store (and its connections) alive.
        self._store = _reference(store)
        self._rounds: RoundBatcher[Call] = RoundBatcher(_POOL, self._run)

    async def add(self, session: SqlstoreSession, items: list[Any], events: list[Any]) -> None:
        """Write one call with the others of this round; return once it is durable.

        Shielded: a cancelled caller's write still finishes, and the cancellation
        is raised once its outcome is known.
        """
        await self._rounds.call((session, items, events))

    def _run(self, calls: list[Call]) -> list[Outcome]:
        """Write ``calls`` (in a worker thread); return each call's (None, error or None)."""
        results: list[BaseException | None] = [None] * len(calls)
        held: list[SqlstoreSession] = []
        batched: list[tuple[int, Unit, Session]] = []
        alone: list[int] = []
        try:
            for index, (session, items, events) in enumerate(calls):
                if session in held or not session._lock.acquire(blocking=False):
                    alone.append(index)
                    continue
                held.append(session)
                try:
                    unit, snap = session._batched_unit(items, events)
                except Exception as exc:  # closed, foreign, unreadable: this call's error
                    results[index] = exc
                    continue
                batched.append((index, unit, snap))
            store = self._store()
            if store is None:  # pragma: no cover - the sessions hold the store
                raise StoreClosed("the store of these sessions is gone")
            outcomes = apply_each(store, [unit for _, unit, _ in batched]) if batched else []
            for (index, _, snap), outcome in zip(batched, outcomes, strict=True):
                if calls[index][0]._batched_outcome(snap, outcome):
                    continue
                if isinstance(outcome, REDO_ALONE):
                    alone.append(index)
                else:
                    assert isinstance(outcome, BaseException)
                    results[index] = outcome
        finally:
            for session in held:
                session._lock.release()
        for index in sorted(alone):
            session, items, events = calls[index]
            try:
                session._locked(session._add_items, items, events)
            except Exception as exc:
                results[index] = exc
        return [(None, error) for error in results]
