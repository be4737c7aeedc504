"""Graph checkpoints of a ``MemoryStore`` (``store.checkpoints``, see :mod:`sqlstore.checkpoints`).

The tables are dictionaries inside the store's shared state, guarded by its
one lock; everything is kept as the encoded bytes the caller gave, so stored
and returned values are isolated exactly as in a real backend.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sqlstore import clock, snapshot
from sqlstore.checkpoint_documents import FromPieces
from sqlstore.checkpoints import (
    CHECKPOINT_PAGE_ROWS,
    ChannelBlob,
    CheckpointEntry,
    CheckpointKey,
    CheckpointPage,
    CheckpointQuery,
    CheckpointRecord,
    InvalidCheckpoint,
    PendingWrite,
    PruneStrategy,
    ThreadSummary,
    check_names,
    check_page_limit,
    check_record,
    check_writes,
    metadata_matches,
    query_admits,
    referenced_blobs,
    write_order,
)
from sqlstore.model import validate_session_id
from sqlstore.session import Session

if TYPE_CHECKING:
    from sqlstore.memory.state import MemoryState

BlobKey = tuple[str, str, str, str]
"""(thread, ns, channel, version)."""
WriteKey = tuple[str, str, str]
"""(thread, ns, checkpoint_id)."""


@dataclass(slots=True)
class CheckpointTables:
    """Every checkpoint, blob and write of one MemoryStore."""

    checkpoints: dict[WriteKey, CheckpointRecord] = field(default_factory=dict)
    blobs: dict[BlobKey, ChannelBlob] = field(default_factory=dict)
    writes: dict[WriteKey, dict[tuple[str, int], PendingWrite]] = field(default_factory=dict)

    def drop(self, thread_id: str) -> None:
        """Delete all data of a thread."""
        for key in [k for k in self.checkpoints if k[0] == thread_id]:
            del self.checkpoints[key]
        for wkey in [k for k in self.writes if k[0] == thread_id]:
            del self.writes[wkey]
        for bkey in [k for k in self.blobs if k[0] == thread_id]:
            del self.blobs[bkey]

    def entry(self, r: CheckpointRecord) -> CheckpointEntry:
        """Return a record with its blobs and writes."""
        found = {
            ch: b
            for ch, ver in r.versions.items()
            if (b := self.blobs.get((r.thread_id, r.ns, ch, ver))) is not None
        }
        mine = self.writes.get((r.thread_id, r.ns, r.checkpoint_id), {})
        return CheckpointEntry(r, found, sorted(mine.values(), key=write_order))

    def delete(self, keys: Sequence[WriteKey]) -> None:
        """Delete checkpoints with their writes, then the blobs nobody refers to any more."""
        for key in keys:
            self.checkpoints.pop(key, None)
            self.writes.pop(key, None)
        for thread_id, ns in {(k[0], k[1]) for k in keys}:
            kept = referenced_blobs(
                r for k, r in self.checkpoints.items() if (k[0], k[1]) == (thread_id, ns)
            )
            for bk in [k for k in self.blobs if (k[0], k[1]) == (thread_id, ns)]:
                if (bk[2], bk[3]) not in kept:
                    del self.blobs[bk]


class MemoryCheckpoints(FromPieces):
    """The checkpoint port of a ``MemoryStore``."""

    def __init__(self, state: MemoryState, create: Callable[[Session, bytes, int], object]) -> None:
        self._s = state
        self._create = create

    @property
    def _t(self) -> CheckpointTables:
        return self._s.checkpoint_tables

    def _ensure_session(self, thread_id: str, session: Session | None, now_ns: int) -> None:
        if thread_id in self._s.sessions:
            self._s.touch(thread_id, now_ns)
        elif session is not None:
            self._create(session, snapshot.encode(session), now_ns)

    def put(
        self,
        record: CheckpointRecord,
        blobs: Sequence[ChannelBlob],
        *,
        session: Session | None = None,
    ) -> None:
        """Store a checkpoint and its new blobs; create the session if it has none."""
        check_record(record, blobs)
        now_ns = clock.now_ns()
        with self._s.lock:
            self._s.check_open()
            self._ensure_session(record.thread_id, session, now_ns)
            r = record
            self._t.checkpoints[(r.thread_id, r.ns, r.checkpoint_id)] = r
            for b in blobs:
                self._t.blobs[(r.thread_id, r.ns, b.channel, b.version)] = b

    def put_writes(
        self,
        thread_id: str,
        ns: str,
        checkpoint_id: str,
        writes: Sequence[PendingWrite],
        *,
        replace: bool = False,
    ) -> None:
        """Store pending writes; an existing (task_id, idx) is kept unless ``replace``."""
        validate_session_id(thread_id)
        check_names(ns, checkpoint_id)
        check_writes(writes)
        if not writes:
            return
        now_ns = clock.now_ns()
        with self._s.lock:
            self._s.check_open()
            self._s.touch(thread_id, now_ns)
            table = self._t.writes.setdefault((thread_id, ns, checkpoint_id), {})
            for w in writes:
                if replace or (w.task_id, w.idx) not in table:
                    table[(w.task_id, w.idx)] = w

    def get(
        self, thread_id: str, ns: str, checkpoint_id: str | None = None
    ) -> CheckpointEntry | None:
        """Return one checkpoint (the newest of the namespace without an id), or None."""
        validate_session_id(thread_id)
        check_names(ns, checkpoint_id)
        with self._s.lock:
            self._s.check_open()
            if checkpoint_id is None:
                ids = [k[2] for k in self._t.checkpoints if k[:2] == (thread_id, ns)]
                if not ids:
                    return None
                checkpoint_id = max(ids)
            found = self._t.checkpoints.get((thread_id, ns, checkpoint_id))
            return None if found is None else self._t.entry(found)

    def page(
        self,
        query: CheckpointQuery,
        *,
        after: CheckpointKey | None = None,
        limit: int = CHECKPOINT_PAGE_ROWS,
    ) -> CheckpointPage:
        """Read up to ``limit`` rows after ``after`` in descending key order."""
        check_page_limit(limit)
        with self._s.lock:
            self._s.check_open()
            keys = sorted(
                (
                    (r.checkpoint_id, r.thread_id, r.ns)
                    for r in self._t.checkpoints.values()
                    if query_admits(query, (r.checkpoint_id, r.thread_id, r.ns))
                    and (after is None or (r.checkpoint_id, r.thread_id, r.ns) < after)
                ),
                reverse=True,
            )[:limit]
            found = [self._t.checkpoints[(k[1], k[2], k[0])] for k in keys]
            entries = [
                self._t.entry(r) for r in found if metadata_matches(r.metadata, query.filter)
            ]
        return CheckpointPage(entries, keys[-1] if len(keys) == limit else None)

    def delete_for_runs(self, run_ids: Sequence[str]) -> int:
        """Delete the checkpoints whose metadata ``run_id`` is listed, with their writes."""
        wanted = {str(r) for r in run_ids}
        if not wanted:
            return 0
        now_ns = clock.now_ns()
        with self._s.lock:
            self._s.check_open()
            keys = [k for k, r in self._t.checkpoints.items() if r.run_id in wanted]
            self._t.delete(keys)
            for thread_id in {k[0] for k in keys}:
                self._s.touch(thread_id, now_ns)
            return len(keys)

    def copy_thread(self, source: str, target: str, *, session: Session | None = None) -> int:
        """Copy every checkpoint, blob and write of ``source`` to ``target``."""
        validate_session_id(source)
        validate_session_id(target)
        if source == target:
            raise InvalidCheckpoint("copy_thread needs two different thread ids")
        now_ns = clock.now_ns()
        with self._s.lock:
            self._s.check_open()
            t = self._t
            records = [r for k, r in t.checkpoints.items() if k[0] == source]
            if not records:
                return 0
            for r in records:
                moved = CheckpointRecord(
                    target, r.ns, r.checkpoint_id, r.parent_id, r.type, r.body, r.metadata,
                    dict(r.versions),
                )  # fmt: skip
                t.checkpoints[(target, r.ns, r.checkpoint_id)] = moved
            for bk, b in [(k, b) for k, b in t.blobs.items() if k[0] == source]:
                t.blobs[(target, bk[1], bk[2], bk[3])] = b
            for wk, ws in [(k, w) for k, w in t.writes.items() if k[0] == source]:
                t.writes.setdefault((target, wk[1], wk[2]), {}).update(ws)
            self._ensure_session(target, session, now_ns)
            return len(records)

    def prune(self, thread_ids: Sequence[str], *, strategy: PruneStrategy = "keep_latest") -> int:
        """Keep each namespace's newest checkpoint, or delete all; return the count removed."""
        if strategy not in ("keep_latest", "delete"):
            raise ValueError(f"unknown prune strategy {strategy!r}; use 'keep_latest' or 'delete'")
        ids = set(thread_ids)
        for thread_id in ids:
            validate_session_id(thread_id)
        now_ns = clock.now_ns()
        with self._s.lock:
            self._s.check_open()
            removed = 0
            for thread_id in ids:
                mine = [k for k in self._t.checkpoints if k[0] == thread_id]
                if strategy == "delete":
                    stale = mine
                else:
                    newest: dict[str, str] = {}
                    for _, ns, cid in mine:
                        newest[ns] = max(newest.get(ns, cid), cid)
                    stale = [k for k in mine if k[2] != newest[k[1]]]
                if strategy == "delete":
                    self._t.drop(thread_id)
                else:
                    self._t.delete(stale)
                if stale:
                    self._s.touch(thread_id, now_ns)
                removed += len(stale)
            return removed

    def import_thread(self, thread_id: str, entries: Sequence[CheckpointEntry]) -> None:
        """Replace a thread's checkpoint data with ``entries``; the session is not touched."""
        validate_session_id(thread_id)
        for e in entries:
            check_record(e.record, e.blobs.values())
            check_writes(e.writes)
        with self._s.lock:
            self._s.check_open()
            t = self._t
            t.drop(thread_id)
            for e in entries:
                r = e.record
                moved = CheckpointRecord(
                    thread_id, r.ns, r.checkpoint_id, r.parent_id, r.type, r.body, r.metadata,
                    dict(r.versions),
                )  # fmt: skip
                t.checkpoints[(thread_id, r.ns, r.checkpoint_id)] = moved
                for b in e.blobs.values():
                    t.blobs[(thread_id, r.ns, b.channel, b.version)] = b
                table = t.writes.setdefault((thread_id, r.ns, r.checkpoint_id), {})
                for w in e.writes:
                    table[(w.task_id, w.idx)] = w

    def summary(self, thread_id: str) -> ThreadSummary:
        """Return counts and bytes of a thread's checkpoint data."""
        validate_session_id(thread_id)
        with self._s.lock:
            self._s.check_open()
            t = self._t
            records = [r for k, r in t.checkpoints.items() if k[0] == thread_id]
            blobs = [b for k, b in t.blobs.items() if k[0] == thread_id]
            writes = [w for k, ws in t.writes.items() if k[0] == thread_id for w in ws.values()]
        size = sum(len(r.body) + len(r.metadata) for r in records)
        size += sum(len(b.data) for b in blobs) + sum(len(w.data) for w in writes)
        return ThreadSummary(
            len(records), len({r.ns for r in records}), len(blobs), len(writes), size
        )

    def thread_ids(self) -> builtins.list[str]:
        """Return every thread id that has checkpoints, sorted."""
        with self._s.lock:
            self._s.check_open()
            return sorted({k[0] for k in self._t.checkpoints})
