"""``SqlstoreSaver``: a LangGraph ``BaseCheckpointSaver`` on sqlstore's checkpoint port.

Every sync method calls ``store.checkpoints`` (SQLite, memory or Redis); every
async method runs the same call (encoding and decoding included, so the event
loop never waits on them) on a bounded thread pool of its own, through
:class:`sqlstore.aio.runner.Runner` (the executor of ``sqlstore.aio``):
writes are shielded from cancellation. The ``aput`` calls made in one round
of the event loop (concurrent graph runs) are stored by one job: one thread
hop each way and, on SQLite, one transaction and one fsync for all of them
(:mod:`~sqlstore.aio.rounds`). Listings
page by key: each page is one short read (checkpoints with their blobs and
writes, no query per checkpoint) and nothing is held open while the caller
consumes the tuples.
"""

from __future__ import annotations

import builtins
import copy
import dataclasses
import enum
import os
import random
import sys
from collections.abc import AsyncIterator, Collection, Iterator, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

import sqlstore
from sqlstore.aio.rounds import Outcome, RoundBatcher
from sqlstore.aio.runner import AIO_MAX_WORKERS, Runner
from sqlstore.checkpoints import (
    CHECKPOINT_PAGE_ROWS,
    CheckpointKey,
    CheckpointPut,
    CheckpointQuery,
    PruneStrategy,
)
from sqlstore.errors import SessionNotFound
from sqlstore.integrations.langgraph import config as cfg
from sqlstore.integrations.langgraph.serde import JsonSerializer
from sqlstore.ports import CheckpointStore, Closeable, Store, checkpoints_of
from sqlstore.session import Session

FRAMEWORK_LABEL = {"framework": "langgraph"}
"""Labels of the sessions the saver creates for new threads."""

PutCall = tuple[RunnableConfig, Checkpoint, CheckpointMetadata, ChannelVersions]
"""The arguments of one ``aput``."""

SESSION_CACHE_THREADS = 1_024
"""Threads whose would-be session the saver keeps between puts (cleared when full)."""


def open_store(store: Any, options: dict[str, Any]) -> tuple[Store, bool]:
    """Return (sync store, owned): a path/URL is opened (and owned), a store is shared.

    An ``sqlstore.aio`` store is shared through its ``.sync`` store.

    Raises:
        TypeError: ``store`` has no checkpoint port.
    """
    owned = isinstance(store, (str, os.PathLike))
    if owned:
        store = sqlstore.open(os.fspath(store), **options)
    elif options:
        raise TypeError("store options are only accepted with a path or URL")
    store = getattr(store, "sync", store)
    if not isinstance(checkpoints_of(store), CheckpointStore):
        if owned:
            store.close()
        raise TypeError(f"{store!r} has no checkpoint port (store.checkpoints)")
    return store, owned


def allowed_class(pair: tuple[str, ...]) -> type | None:
    """Return the already-imported dataclass, pydantic model or Enum named (module, name)."""
    if len(pair) != 2:
        return None
    module = sys.modules.get(pair[0])
    cls = getattr(module, pair[1], None) if module is not None else None
    if not isinstance(cls, type):
        return None
    if (
        dataclasses.is_dataclass(cls)
        or issubclass(cls, enum.Enum)
        or hasattr(cls, "model_validate")
    ):
        return cls
    return None


class SqlstoreSaver(BaseCheckpointSaver[str], Closeable):
    """Checkpoints of LangGraph threads in a sqlstore store; each thread is a session.

    Args:
        store: a path or URL (``sessions.db``, ``sqlite:///x.db``, ``memory:``,
            ``redis://...``), opened here and closed by :meth:`close`; or an
            existing sync or ``sqlstore.aio`` store, shared and never closed.
        serde: the serializer of checkpoints, channel values and writes.
            Default: :class:`JsonSerializer` (JSON only; allow your own types
            with ``JsonSerializer(allow=[...])``). Metadata is always JSON.
        **options: backend options when ``store`` is a path or URL.

    Thread ids are session ids (``str(thread_id)``). A put is one durable
    transaction; the first put of a thread creates its session (title: the
    start of the first user message) and every put and write moves its
    ``modified_at``. ``delete_thread`` deletes the session with everything in
    it. Channel values are stored once per (channel, version), only for the
    channels a put names in ``new_versions``.

    Raises:
        TypeError: ``store`` has no checkpoint port.
    """

    def __init__(
        self, store: Any, *, serde: SerializerProtocol | None = None, **options: Any
    ) -> None:
        super().__init__(serde=serde or JsonSerializer())
        self.store, self._owned = open_store(store, options)
        self.checkpoints: CheckpointStore = self.store.checkpoints  # type: ignore[attr-defined]
        self._runner = Runner(AIO_MAX_WORKERS)
        self._puts: RoundBatcher[PutCall] = RoundBatcher(self._runner, self._put_batch)
        self._new_sessions: dict[str, Session] = {}

    @classmethod
    def from_conn_string(cls, target: str | os.PathLike[str], **options: Any) -> OwnedSaver:
        """Open ``target`` for a ``with`` (or ``async with``) block and close it after.

        ``with SqlstoreSaver.from_conn_string("sessions.db") as saver: ...``
        """
        return OwnedSaver(cls, target, options)

    afrom_conn_string = from_conn_string

    # -- lifecycle ---------------------------------------------------------------

    def close(self) -> None:
        """Stop the async worker threads and close the store if this saver opened it.

        From async code prefer :meth:`aclose` (or ``async with``), which first
        waits for writes still running, also those whose caller was cancelled.
        """
        if not self._runner.closed:
            self._runner.shutdown()
        if self._owned:
            self.store.close()

    async def aclose(self) -> None:
        """Wait for running writes, stop the worker threads, close an owned store; idempotent."""
        if not self._runner.closed:
            await self._runner.drain()
        self.close()

    # -- sync --------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Return the checkpoint the config names (the newest without an id), or None."""
        thread_id = cfg.thread_of(config)
        entry = self.checkpoints.get(
            thread_id, cfg.ns_of(config) or "", cfg.checkpoint_id_of(config)
        )
        return None if entry is None else cfg.to_tuple(self.serde, entry)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Yield matching checkpoints, newest first (by id), a page at a time.

        ``config`` None lists every thread; without ``checkpoint_ns`` every
        namespace. ``filter`` matches metadata keys by equality.
        """
        query = self._query(config, filter, before)
        after: CheckpointKey | None = None
        left = limit
        while left is None or left > 0:
            tuples, after = self._page(query, after, left)
            yield from tuples
            if left is not None:
                left -= len(tuples)
            if after is None:
                return

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint durably and return the config naming it.

        Raises:
            InvalidConfig: no thread id in the config.
            UnsupportedValue: a value the serializer refuses; nothing is stored.
        """
        record, blobs, values = cfg.to_record(
            self.serde, config, checkpoint, metadata, new_versions
        )
        self.checkpoints.put(record, blobs, session=self._session_for(record.thread_id, values))
        return cfg.stored_config(record.thread_id, record.ns, record.checkpoint_id)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's writes on top of the config's checkpoint (idempotent per index).

        Raises:
            InvalidConfig: no thread id or checkpoint id in the config.
            UnsupportedValue: a value the serializer refuses; nothing is stored.
        """
        thread_id = cfg.thread_of(config)
        checkpoint_id = cfg.checkpoint_id_of(config)
        if checkpoint_id is None:
            raise cfg.InvalidConfig("put_writes needs a config with a checkpoint_id")
        rows, replace = cfg.to_writes(self.serde, writes, task_id, task_path)
        self.checkpoints.put_writes(
            thread_id, cfg.ns_of(config) or "", checkpoint_id, rows, replace=replace
        )

    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread's session with every checkpoint, write, event and audit row."""
        self.store.sessions.delete(str(thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (with their writes) created by the given runs."""
        self.checkpoints.delete_for_runs([str(r) for r in run_ids])

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint and write of one thread to another (one transaction)."""
        source, target = str(source_thread_id), str(target_thread_id)
        try:
            title = self.store.sessions.meta(source).title
        except SessionNotFound:
            title = cfg.DEFAULT_TITLE
        session = Session.new(target, title=title, labels=FRAMEWORK_LABEL)
        self.checkpoints.copy_thread(source, target, session=session)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Keep each namespace's newest checkpoint (``keep_latest``) or remove all (``delete``).

        ``delete`` leaves the threads' sessions (now without checkpoints); use
        :meth:`delete_thread` to remove a thread entirely.
        """
        chosen: PruneStrategy = "delete" if strategy == "delete" else "keep_latest"
        if strategy not in ("keep_latest", "delete"):
            raise ValueError(f"unknown prune strategy {strategy!r}; use 'keep_latest' or 'delete'")
        self.checkpoints.prune([str(t) for t in thread_ids], strategy=chosen)

    def get_next_version(self, current: str | None, channel: None) -> str:
        """Return the next channel version: a 32-digit counter and a random tie-breaker.

        Versions sort as text in the order they were made, and two branches
        from one checkpoint get distinct versions.
        """
        if current is None:
            number = 0
        elif isinstance(current, int):
            number = current
        else:
            number = int(str(current).split(".")[0])
        return f"{number + 1:032}.{random.random():016}"

    def with_allowlist(self, extra_allowlist: Collection[tuple[str, ...]]) -> SqlstoreSaver:
        """Return a saver whose JSON serializer also allows the graph's own state types.

        LangGraph passes the (module, name) pairs of the types its compiled
        graph's state schema uses. Each is taken from a module the program has
        already imported (nothing is imported here) and allowed when it is a
        dataclass, a pydantic model or an Enum. The clone shares this saver's
        store and worker threads. A custom ``serde`` is left as it is.
        """
        if not isinstance(self.serde, JsonSerializer):
            return self
        found = [cls for pair in extra_allowlist if (cls := allowed_class(pair)) is not None]
        if not found:
            return self
        clone = copy.copy(self)
        clone.serde = self.serde.with_allowed(*found)
        clone._puts = RoundBatcher(clone._runner, clone._put_batch)  # encodes with its serde
        return clone

    # -- async -------------------------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async :meth:`get_tuple`."""
        return await self._runner.read(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Async :meth:`list`: each page is read (and decoded) on the pool, then yielded."""
        query = self._query(config, filter, before)
        after: CheckpointKey | None = None
        left = limit
        while left is None or left > 0:
            tuples, after = await self._runner.read(self._page, query, after, left)
            for tup in tuples:
                yield tup
            if left is not None:
                left -= len(tuples)
            if after is None:
                return

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Async :meth:`put` (the write completes even if the caller is cancelled).

        The ``aput`` calls of one loop's round are stored by one worker-thread
        job and one commit (see :mod:`~sqlstore.aio.rounds`).
        """
        result: RunnableConfig = await self._puts.call((config, checkpoint, metadata, new_versions))
        return result

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Async :meth:`put_writes`."""
        await self._runner.write(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        """Async :meth:`delete_thread`."""
        await self._runner.write(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Async :meth:`delete_for_runs`."""
        await self._runner.write(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Async :meth:`copy_thread`."""
        await self._runner.write(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Async :meth:`prune`."""
        await self._runner.write(self.prune, thread_ids, strategy=strategy)

    # -- helpers -----------------------------------------------------------------

    def _put_batch(self, calls: builtins.list[PutCall]) -> builtins.list[Outcome]:
        """Encode and store a batch of ``aput`` calls; each call's (config, error)."""
        outcomes: builtins.list[Outcome] = []
        items: builtins.list[CheckpointPut] = []
        for call in calls:
            try:
                record, blobs, values = cfg.to_record(self.serde, *call)
            except Exception as exc:
                outcomes.append((None, exc))
                continue
            items.append((record, blobs, self._session_for(record.thread_id, values)))
            stored = cfg.stored_config(record.thread_id, record.ns, record.checkpoint_id)
            outcomes.append((stored, None))
        stored_errors = iter(self.checkpoints.put_many(items) if items else [])
        done: builtins.list[Outcome] = []
        for stored, error in outcomes:
            failure = error if error is not None else next(stored_errors)
            done.append((None, failure) if failure is not None else (stored, None))
        return done

    def _session_for(self, thread_id: str, values: dict[str, Any]) -> Session:
        """Return the session a put creates if the thread has none (built once per thread).

        The store only uses it when the session is missing, so the saver keeps
        the one it built for a thread's first put instead of building one per put.
        """
        found = self._new_sessions.get(thread_id)
        if found is None:
            if len(self._new_sessions) >= SESSION_CACHE_THREADS:
                self._new_sessions.clear()
            found = Session.new(thread_id, title=cfg.title_from(values), labels=FRAMEWORK_LABEL)
            self._new_sessions[thread_id] = found
        return found

    def _query(
        self,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
    ) -> CheckpointQuery:
        thread_id = None if config is None else cfg.thread_of(config)
        return CheckpointQuery(
            thread_id=thread_id,
            ns=cfg.ns_of(config, None),
            checkpoint_id=cfg.checkpoint_id_of(config),
            before=None if before is None else cfg.checkpoint_id_of(before),
            filter=filter,
        )

    def _page(
        self, query: CheckpointQuery, after: CheckpointKey | None, left: int | None
    ) -> tuple[builtins.list[CheckpointTuple], CheckpointKey | None]:
        """Read one page and decode it; stop early at ``left`` tuples.

        With the JSON serializer a page is read as one JSON text per
        checkpoint (``CheckpointStore.documents``), each parsed once; a
        checkpoint whose text is missing or malformed is read whole.
        """
        rows = (
            CHECKPOINT_PAGE_ROWS
            if left is None or query.filter
            else min(left, CHECKPOINT_PAGE_ROWS)
        )
        serde = self.serde
        if type(serde) is not JsonSerializer:
            page = self.checkpoints.page(query, after=after, limit=rows)
            entries = page.entries if left is None else page.entries[:left]
            cut = left is not None and len(page.entries) > left
            return [cfg.to_tuple(serde, e) for e in entries], None if cut else page.next
        docs = self.checkpoints.documents(query, after=after, limit=rows)
        found = docs.documents if left is None else docs.documents[:left]
        tuples = []
        for doc in found:
            tup = cfg.document_tuple(serde, doc)
            if tup is None:  # not all JSON, or not the shape it should be: read it whole
                entry = self.checkpoints.get(doc.thread_id, doc.ns, doc.checkpoint_id)
                if entry is None:
                    continue  # deleted since the page was read
                tup = cfg.to_tuple(serde, entry)
            tuples.append(tup)
        cut = left is not None and len(docs.documents) > left
        return tuples, None if cut else docs.next


class OwnedSaver:
    """What ``from_conn_string`` returns: a saver opened on entry and closed on exit."""

    def __init__(
        self, cls: type[SqlstoreSaver], target: str | os.PathLike[str], options: dict[str, Any]
    ) -> None:
        self._cls = cls
        self._target = target
        self._options = options
        self._saver: SqlstoreSaver | None = None

    def __enter__(self) -> SqlstoreSaver:
        self._saver = self._cls(self._target, **self._options)
        return self._saver

    def __exit__(self, *exc: object) -> None:
        if self._saver is not None:
            self._saver.close()
            self._saver = None

    async def __aenter__(self) -> SqlstoreSaver:
        return self.__enter__()

    async def __aexit__(self, *exc: object) -> None:
        if self._saver is not None:
            await self._saver.aclose()
            self._saver = None
