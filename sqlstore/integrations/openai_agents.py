"""OpenAI Agents SDK sessions on sqlstore: ``SqlstoreSession`` (extra ``openai-agents``).

``SqlstoreSession`` implements the SDK's ``agents.memory.Session`` protocol and
behaves like its ``SQLiteSession``, on any sqlstore backend and across
processes. The mapping onto the ports:

* Every item is one event (``openai_agents.item``) of the session's log;
  ``add_items`` is one ``store.apply`` — the items, the tool-call audit rows
  they complete and a small snapshot, in one transaction and one fsync.
* The snapshot makes the conversation a first-class sqlstore session: an idle
  ``main`` session whose title is the first user message, ``counters.turns``
  the user messages, ``counters.tool_calls`` the audited calls, and
  ``extra["openai_agents"]`` the item count and calls still awaiting output.
  It never holds the conversation, so a write costs the same at any length.
* ``pop_item`` appends a pop record (:mod:`sqlstore.integrations.item_stack`);
  ``get_items(limit)`` and ``pop_item`` read the log from its end.
* Every write is conditional on the snapshot version the session last saw
  (``expected_version``). A writer in another process makes it fail with
  ``VersionConflict``; the session then reloads and redoes the write, so
  nothing is lost, reordered or popped twice. In one process, one lock per
  session object serialises its operations (as ``SQLiteSession`` does).
* ``clear_session`` deletes the session (snapshot, log and audit rows).

Each operation runs in one worker thread (``asyncio.to_thread``); a write that
has started finishes even if the awaiting task is cancelled, and the
cancellation is raised once its outcome is known. The ``add_items`` calls made
on one store in the same round of an event loop (many conversations served by
one loop) share one worker job and one commit, each call still its own
conditional unit (:mod:`sqlstore.integrations.openai_batch`).

The one operation that does not take a worker thread is a small read of a local
store (SQLite, memory): ``get_items(limit)`` with a limit of at most
``INLINE_READ_MAX_ITEMS`` runs on the event loop itself. It is an index seek of
that many records (plus one per pop it spans) whose cost is mostly Python under
the GIL — which a worker thread would hold against the loop anyway — while the
thread hop it saves costs more than the read (two thread wake-ups). A SQLite
reader in WAL mode never waits for a writer, and the read never waits for this
session's lock: when another operation of the session is under way, the read
goes to a worker thread like everything else. Redis stores always use a thread.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, TypeVar

try:
    from agents.memory.session_settings import (
        SessionSettings,
        coerce_session_settings,
        resolve_session_limit,
    )
except ModuleNotFoundError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError(
        "sqlstore.integrations.openai_agents needs the OpenAI Agents SDK: "
        "pip install 'sqlstore[openai-agents]'"
    ) from exc

from sqlstore import clock
from sqlstore.changes import Applied, Unit
from sqlstore.errors import (
    CursorExpired,
    InvalidEvent,
    SessionNotFound,
    StoreClosed,
    StoreError,
    VersionConflict,
)
from sqlstore.integrations import item_stack, openai_batch, openai_items
from sqlstore.integrations.openai_items import MARKER_KEY, InvalidItem
from sqlstore.integrations.targets import StoreTarget, resolve_store
from sqlstore.model import JSON, Principal, validate_session_id
from sqlstore.ports import apply_unit, reads_in_process
from sqlstore.session import Session

__all__ = ["ForeignSession", "InvalidItem", "SessionClosed", "SqlstoreSession"]

CONFLICT_RETRIES_MAX = 10_000
"""Attempts of one write against writers in other processes before giving up."""

CONFLICT_BACKOFF_MAX_S = 0.02
"""Longest random pause between two attempts of a conflicting write."""

INLINE_READ_MAX_ITEMS = 100
"""``get_items(limit)`` up to this many items runs on the event loop (local stores only)."""

_T = TypeVar("_T")


class SessionClosed(StoreClosed, RuntimeError):
    """The ``SqlstoreSession`` was closed; it refuses every further operation."""

    default_hint = "Create a new SqlstoreSession for the same id to go on."


class ForeignSession(StoreError):
    """The id names a sqlstore session that was not written by this integration."""

    default_hint = "Pick another session id, or delete the session with `sqlstore rm ID`."


class SqlstoreSession:
    """An OpenAI Agents SDK session kept in a sqlstore store (``agents.memory.Session``).

    Args:
        session_id: the conversation's id; also its sqlstore session id.
        store: a path or ``sqlstore.open`` URL (opened here and closed by
            :meth:`close`), or an existing sync or ``sqlstore.aio`` store (shared,
            never closed here).
        session_settings: the SDK's ``SessionSettings`` (or a dict of them);
            ``limit`` is the default of :meth:`get_items`.
        owner: the session's owner, a ``Principal`` or a subject string; set when
            the session is first stored (``sqlstore ls --owner``).
        labels: free-form ``str → str`` labels set when the session is first stored.

    Raises:
        InvalidSessionId: ``session_id`` is not a valid sqlstore id.
        TypeError: ``store``, ``owner`` or ``labels`` has the wrong type.
        StoreError, ValueError: the store cannot be opened.
    """

    session_settings: SessionSettings | None

    def __init__(
        self,
        session_id: str,
        store: StoreTarget = "sessions.db",
        *,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        owner: Principal | str | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> None:
        validate_session_id(session_id)
        self.session_id = session_id
        self.session_settings = (
            SessionSettings()
            if session_settings is None
            else coerce_session_settings(session_settings)
        )
        self._owner = _principal(owner)
        self._labels = _labels(labels)
        self._store, self._owns_store = resolve_store(store)
        self._inline = reads_in_process(self._store)
        self._batcher = openai_batch.batcher_for(self._store)
        self._lock = threading.Lock()
        self._seen: tuple[Session, int] | None = None
        self._closed = False

    # -- the Session protocol ----------------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """Return the newest ``limit`` items in chronological order (all when None).

        The explicit ``limit`` overrides ``session_settings.limit``; 0 returns
        ``[]`` and a negative limit returns every item (``SQLiteSession``'s rule).
        Reads only the end of the log.
        """
        self._check_open()
        wanted = resolve_session_limit(limit, self.session_settings)
        if wanted == 0:
            return []
        count = None if wanted is None or wanted < 0 else wanted
        # A small tail read of a local store costs less than the thread hop it would
        # take; it runs here unless an operation of this session is under way.
        small = count is not None and count <= INLINE_READ_MAX_ITEMS and self._inline
        if small and self._lock.acquire(blocking=False):
            try:
                self._check_open()
                return self._get_items(count)
            finally:
                self._lock.release()
        return await asyncio.to_thread(self._locked, self._get_items, count)

    async def add_items(self, items: list[Any]) -> None:
        """Append ``items`` in order: one atomic, durable write (nothing for ``[]``).

        Raises:
            InvalidItem: an item is not a JSON object; nothing is stored.
            SessionClosed: the session was closed.
        """
        self._check_open()
        events = openai_items.item_events(items)
        if not events:
            return
        await self._batcher.add(self, items, events)

    async def pop_item(self) -> Any | None:
        """Remove and return the newest item, or None when there is none.

        Each item is popped at most once, across threads and processes.
        """
        self._check_open()
        return await _finish(asyncio.to_thread(self._locked, self._pop_item))

    async def clear_session(self) -> None:
        """Delete every item, the snapshot and the audit rows of this session."""
        self._check_open()
        await _finish(asyncio.to_thread(self._locked, self._clear))

    def close(self) -> None:
        """Refuse further work; close the store if this session opened it. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._owns_store:
                self._store.close()

    # -- the work, in a worker thread under the session's lock ------------------------

    def _locked(self, work: Callable[..., _T], *args: Any) -> _T:
        with self._lock:
            self._check_open()
            return work(*args)

    def _get_items(self, limit: int | None) -> list[Any]:
        for _ in range(CONFLICT_RETRIES_MAX):
            try:
                found = item_stack.newest(self._store.events, self.session_id, limit)
            except CursorExpired:
                continue  # the log was deleted and begun again between two reads
            return [openai_items.item_of_data(data) for _, data in reversed(found)]
        raise _gave_up(self.session_id)

    def _add_items(self, items: list[Any], events: list[Any]) -> None:
        try:
            self._retry(lambda base, version: self._add_once(base, version, items, events))
        except InvalidEvent:
            # Refused whole, nothing stored: find the item that does not encode (its index
            # in the error), or keep exotic values (lone surrogates, NaN) as JSON text.
            careful = openai_items.item_events(items, careful=True)
            self._retry(lambda base, version: self._add_once(base, version, items, careful))

    def _add_once(
        self, base: Session | None, version: int, items: list[Any], events: list[Any]
    ) -> tuple[None, Session, int]:
        unit, snap = self._add_unit(base, version, items, events)
        return None, snap, int(apply_unit(self._store, unit).version)

    def _add_unit(
        self, base: Session | None, version: int, items: list[Any], events: list[Any]
    ) -> tuple[Unit, Session]:
        """Return the unit of work of ``add_items`` on (base, version) and the snapshot after it."""
        fresh = base is None
        if base is None:
            base = Session.new(self.session_id, owner=self._owner, labels=self._labels)
            base.extra[MARKER_KEY] = {"calls": {}}
        pending = openai_items.marker(base).get("calls")
        calls: dict[str, JSON] = dict(pending) if isinstance(pending, dict) else {}
        audit = openai_items.audit_rows(self.session_id, items, calls, clock.now_ns(), clock.now())
        snap = openai_items.after_add(base, items, calls, len(audit))
        # The snapshot is rewritten only when what listing shows changes (title, counts,
        # calls awaiting output); the version check guards the log either way.
        changed = fresh or openai_items.listing_changed(base, snap)
        unit = Unit(
            self.session_id,
            snapshot=snap if changed else None,
            events=events,
            audit=audit,
            expected_version=version,
        )
        return unit, snap

    def _batched_unit(self, items: list[Any], events: list[Any]) -> tuple[Unit, Session]:
        """Return this session's unit for a batch (caller holds the lock; see openai_batch)."""
        self._check_open()
        base, version = self._seen if self._seen is not None else self._load()
        return self._add_unit(base, version, items, events)

    def _batched_outcome(self, snap: Session, outcome: Applied | BaseException) -> bool:
        """Record a batched unit's outcome (caller holds the lock); False: redo it alone."""
        if isinstance(outcome, Applied):
            self._seen = (snap, int(outcome.version))
            return True
        self._seen = None
        return False

    def _pop_item(self) -> Any | None:
        return self._retry(self._pop_once)

    def _pop_once(
        self, base: Session | None, version: int
    ) -> tuple[Any | None, Session | None, int]:
        if base is None:
            return None, None, 0
        newest = item_stack.newest(self._store.events, self.session_id, 2)
        if not newest:
            return None, base, version
        (position, data), rest = newest[0], newest[1:]
        item = openai_items.item_of_data(data)
        snap = openai_items.after_pop(base, item)
        top = rest[0][0] if rest else 0
        applied = self._store.apply(
            self.session_id,
            snapshot=snap if openai_items.listing_changed(base, snap) else None,
            events=[item_stack.pop_record(position, top)],
            expected_version=version,
        )
        return item, snap, int(applied.version)

    def _clear(self) -> None:
        self._store.sessions.delete(self.session_id)
        self._seen = None

    def _retry(
        self, attempt: Callable[[Session | None, int], tuple[_T, Session | None, int]]
    ) -> _T:
        """Run ``attempt(base, version)`` until its conditional write is not refused."""
        for tries in range(CONFLICT_RETRIES_MAX):
            base, version = self._seen if self._seen is not None else self._load()
            try:
                result, snap, new_version = attempt(base, version)
            except (VersionConflict, CursorExpired):
                self._seen = None
                time.sleep(random.uniform(0, min(CONFLICT_BACKOFF_MAX_S, 0.0005 * 2**tries)))
                continue
            self._seen = None if snap is None else (snap, new_version)
            return result
        raise _gave_up(self.session_id)

    def _load(self) -> tuple[Session | None, int]:
        try:
            session, version = self._store.sessions.load_versioned(self.session_id)
        except SessionNotFound:
            return None, 0
        if MARKER_KEY not in session.extra:
            raise ForeignSession(
                f"session {self.session_id!r} exists and is not an OpenAI Agents session"
            )
        return session, int(version)

    def _check_open(self) -> None:
        if self._closed:
            raise SessionClosed("SqlstoreSession is closed")

    def __repr__(self) -> str:
        return f"SqlstoreSession({self.session_id!r}, store={self._store!r})"


async def _finish(work: Coroutine[Any, Any, _T] | asyncio.Future[_T]) -> _T:
    """Await a write to its outcome even when cancelled; then re-raise the cancellation."""
    task = asyncio.ensure_future(work)
    cancelled: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError as exc:
            cancelled = cancelled or exc
    if cancelled is not None:
        if not task.cancelled():
            task.exception()  # retrieved: the caller sees the cancellation, not a loop warning
        raise cancelled from None
    return task.result()


def _gave_up(session_id: str) -> StoreError:
    return StoreError(
        f"gave up on session {session_id!r} after {CONFLICT_RETRIES_MAX} conflicting writes",
        hint="Too many writers change this session at once; retry later.",
    )


def _principal(owner: Principal | str | None) -> Principal | None:
    if owner is None or isinstance(owner, Principal):
        return owner
    if isinstance(owner, str) and owner:
        return Principal(subject=owner)
    raise TypeError(f"owner must be a Principal or a non-empty str, not {owner!r}")


def _labels(labels: Mapping[str, str] | None) -> dict[str, str]:
    if labels is None:
        return {}
    if not isinstance(labels, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in labels.items()
    ):
        raise TypeError("labels must be a mapping of str to str")
    return dict(labels)
