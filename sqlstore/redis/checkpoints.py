"""Graph checkpoints in Redis (``RedisStore.checkpoints``, see :mod:`sqlstore.checkpoints`).

Key layout and scripts: :mod:`sqlstore.redis.checkpoint_scripts`. Each write
of one thread is one atomic script that also moves the session's
``modified_at`` (and publishes its snapshot on the first put). A page is one
read-only script returning the rows with their blobs and writes. Operations
over several threads (``delete_for_runs``, ``prune``) run one script per
thread: each thread changes atomically, not the set.
"""

from __future__ import annotations

import base64
import builtins
import json
from collections.abc import Sequence
from typing import Any

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
    write_order,
)
from sqlstore.model import validate_session_id
from sqlstore.redis import keys
from sqlstore.redis.connection import Connection
from sqlstore.session import Session

SEP = "\x00"


def _member(checkpoint_id: str, ns: str) -> str:
    return f"{checkpoint_id}{SEP}{ns}"


def _field(ns: str, checkpoint_id: str) -> str:
    return f"{ns}{SEP}{checkpoint_id}"


def _bound(thread_id: str, query: CheckpointQuery, after: CheckpointKey | None) -> str:
    """Return the ZREVRANGEBYLEX upper bound of one thread's index for the query."""
    bounds: list[str] = []
    if query.before is not None:
        bounds.append("(" + query.before)
    if after is not None:
        cid, thread, ns = after
        if thread_id < thread:
            bounds.append("(" + cid + "\x01")  # every namespace of checkpoint `cid`
        elif thread_id == thread:
            bounds.append("(" + _member(cid, ns))
        else:
            bounds.append("(" + cid)
    if not bounds:
        return "+"
    return min(bounds, key=lambda b: b[1:])


def _record_json(r: CheckpointRecord) -> str:
    doc = {
        "p": r.parent_id,
        "t": r.type,
        "b": base64.b64encode(r.body).decode("ascii"),
        "m": r.metadata.decode("utf-8"),
        "v": dict(r.versions),
        "r": r.run_id,
    }
    return json.dumps(doc, ensure_ascii=False)


def _blob_pair(ns: str, b: ChannelBlob) -> list[Any]:
    return [f"{ns}{SEP}{b.channel}{SEP}{b.version}", b.type.encode() + b"\0" + b.data]


def _write_pair(w: PendingWrite) -> list[Any]:
    value = {"c": w.channel, "t": w.type, "p": w.task_path}
    value["d"] = base64.b64encode(w.data).decode("ascii")
    return [f"{w.task_id}{SEP}{w.idx}", json.dumps(value, ensure_ascii=False)]


class RedisCheckpoints(FromPieces):
    """The checkpoint port of a ``RedisStore``."""

    def __init__(self, conn: Connection) -> None:
        self._c = conn

    def _session_args(self, thread_id: str, session: Session | None) -> list[Any]:
        now_ns = clock.now_ns()
        common = [
            str(now_ns),
            keys.page_prefix(now_ns),
            keys.age_prefix(now_ns),
            keys.hex_id(thread_id),
            self._c.prefix,
        ]
        if session is None:
            return [*common, "0", "", "", "", ""]
        blob = snapshot.encode(session)
        return [
            *common,
            "1",
            blob,
            keys.meta_json(session, blob),
            keys.session_compared(session),
            keys.owner_scope(session),
        ]

    def _session_keys(self, thread_id: str) -> list[str]:
        k = self._c.keys
        return [k.session(thread_id), k.page_index, k.age_index, k.write_seq]

    def put(
        self,
        record: CheckpointRecord,
        blobs: Sequence[ChannelBlob],
        *,
        session: Session | None = None,
    ) -> None:
        """Store a checkpoint and its new blobs in one script; create the session if missing."""
        check_record(record, blobs)
        r, k = record, self._c.keys
        pairs: list[Any] = []
        for b in blobs:
            pairs += _blob_pair(r.ns, b)
        with self._c.guard():
            self._c.cp_put(
                keys=[
                    k.cp(r.thread_id),
                    k.cp_index(r.thread_id),
                    k.cp_blobs(r.thread_id),
                    k.cp_threads,
                    *self._session_keys(r.thread_id),
                    k.inventory_generation,
                ],
                args=[
                    *self._session_args(r.thread_id, session),
                    r.thread_id,
                    _field(r.ns, r.checkpoint_id),
                    _member(r.checkpoint_id, r.ns),
                    _record_json(r),
                    len(blobs),
                    *pairs,
                ],
            )

    def put_writes(
        self,
        thread_id: str,
        ns: str,
        checkpoint_id: str,
        writes: Sequence[PendingWrite],
        *,
        replace: bool = False,
    ) -> None:
        """Store pending writes in one script; an existing (task_id, idx) stays unless replacing."""
        validate_session_id(thread_id)
        check_names(ns, checkpoint_id)
        check_writes(writes)
        if not writes:
            return
        k = self._c.keys
        pairs: list[Any] = []
        for w in writes:
            pairs += _write_pair(w)
        session_args = self._session_args(thread_id, None)[:5]
        with self._c.guard():
            self._c.cp_writes(
                keys=[
                    k.cp_writes_prefix(thread_id) + _field(ns, checkpoint_id),
                    k.cp_wkeys(thread_id),
                    *self._session_keys(thread_id)[:3],
                    k.write_seq,
                ],
                args=["1" if replace else "0", *session_args, len(writes), *pairs],
            )

    def _read(self, thread_id: str, bound: str, limit: int) -> list[tuple[CheckpointKey, Any]]:
        """Run the page script on one thread: [(key, raw row)] newest first."""
        k = self._c.keys
        with self._c.guard():
            rows = self._c.cp_page(
                keys=[k.cp_index(thread_id), k.cp(thread_id), k.cp_blobs(thread_id)],
                args=[bound, limit, k.cp_writes_prefix(thread_id)],
            )
        out = []
        for row in rows:
            cid, _, ns = bytes(row[0]).decode("utf-8").partition(SEP)
            out.append(((cid, thread_id, ns), row))
        return out

    @staticmethod
    def _entry(key: CheckpointKey, row: Any) -> CheckpointEntry | None:
        cid, thread_id, ns = key
        if row[1] is None:
            return None
        doc = json.loads(row[1])
        record = CheckpointRecord(
            thread_id, ns, cid, doc["p"], doc["t"], base64.b64decode(doc["b"]),
            doc["m"].encode("utf-8"), doc["v"],
        )  # fmt: skip
        blobs = {}
        flat = row[3]
        for i in range(0, len(flat), 2):
            channel = bytes(flat[i]).decode("utf-8")
            type_, _, data = bytes(flat[i + 1]).partition(b"\0")
            blobs[channel] = ChannelBlob(channel, doc["v"][channel], type_.decode(), data)
        writes = []
        flat = row[2]
        for i in range(0, len(flat), 2):
            task_id, _, idx = bytes(flat[i]).decode("utf-8").rpartition(SEP)
            w = json.loads(flat[i + 1])
            data = base64.b64decode(w["d"])
            writes.append(PendingWrite(task_id, int(idx), w["c"], w["t"], data, w["p"]))
        return CheckpointEntry(record, blobs, sorted(writes, key=write_order))

    def get(
        self, thread_id: str, ns: str, checkpoint_id: str | None = None
    ) -> CheckpointEntry | None:
        """Return one checkpoint (the newest of the namespace without an id), or None."""
        validate_session_id(thread_id)
        check_names(ns, checkpoint_id)
        if checkpoint_id is not None:
            found = self._read(thread_id, "[" + _member(checkpoint_id, ns), 1)
            if found and found[0][0] == (checkpoint_id, thread_id, ns):
                return self._entry(*found[0])
            return None
        page = CheckpointQuery(thread_id=thread_id, ns=ns)
        after: CheckpointKey | None = None
        while True:
            got = self.page(page, after=after, limit=CHECKPOINT_PAGE_ROWS)
            if got.entries:
                return got.entries[0]
            if got.next is None:
                return None
            after = got.next

    def page(
        self,
        query: CheckpointQuery,
        *,
        after: CheckpointKey | None = None,
        limit: int = CHECKPOINT_PAGE_ROWS,
    ) -> CheckpointPage:
        """Read up to ``limit`` rows after ``after`` in descending key order."""
        check_page_limit(limit)
        threads = [query.thread_id] if query.thread_id is not None else self.thread_ids()
        rows: list[tuple[CheckpointKey, Any]] = []
        for thread_id in threads:
            rows += self._read(thread_id, _bound(thread_id, query, after), limit)
        rows.sort(key=lambda r: r[0], reverse=True)
        rows = rows[:limit]
        entries = []
        for key, row in rows:
            if not query_admits(query, key):
                continue
            entry = self._entry(key, row)
            if entry is not None and metadata_matches(entry.record.metadata, query.filter):
                entries.append(entry)
        return CheckpointPage(entries, rows[-1][0] if len(rows) == limit else None)

    def _remove(self, thread_id: str, mode: str, members: Sequence[str] = ()) -> int:
        k = self._c.keys
        with self._c.guard():
            removed = self._c.cp_remove(
                keys=[
                    k.cp(thread_id),
                    k.cp_index(thread_id),
                    k.cp_blobs(thread_id),
                    k.cp_wkeys(thread_id),
                    k.cp_threads,
                    *self._session_keys(thread_id)[:3],
                    k.write_seq,
                ],
                args=[
                    thread_id,
                    k.cp_writes_prefix(thread_id),
                    *self._session_args(thread_id, None)[:5],
                    mode,
                    *members,
                ],
            )
        return int(removed)

    def delete_for_runs(self, run_ids: Sequence[str]) -> int:
        """Delete the checkpoints whose metadata ``run_id`` is listed (one script per thread)."""
        wanted = {str(r) for r in run_ids}
        if not wanted:
            return 0
        removed = 0
        for thread_id in self.thread_ids():
            with self._c.guard():
                records = self._c.client.hgetall(self._c.keys.cp(thread_id))
            members = []
            for field, raw in records.items():
                if json.loads(raw).get("r") in wanted:
                    ns, _, cid = bytes(field).decode("utf-8").partition(SEP)
                    members.append(_member(cid, ns))
            if members:
                removed += self._remove(thread_id, "some", members)
        return removed

    def copy_thread(self, source: str, target: str, *, session: Session | None = None) -> int:
        """Copy every checkpoint, blob and write of ``source`` to ``target`` (one script)."""
        validate_session_id(source)
        validate_session_id(target)
        if source == target:
            raise InvalidCheckpoint("copy_thread needs two different thread ids")
        k = self._c.keys
        with self._c.guard():
            copied = self._c.cp_copy(
                keys=[
                    k.cp(source),
                    k.cp_index(source),
                    k.cp_blobs(source),
                    k.cp_wkeys(source),
                    k.cp(target),
                    k.cp_index(target),
                    k.cp_blobs(target),
                    k.cp_wkeys(target),
                    k.cp_threads,
                    k.session(target),
                    k.page_index,
                    k.age_index,
                    k.write_seq,
                    k.inventory_generation,
                ],
                args=[
                    *self._session_args(target, session),
                    target,
                    k.cp_writes_prefix(source),
                    k.cp_writes_prefix(target),
                ],
            )
        return int(copied)

    def prune(self, thread_ids: Sequence[str], *, strategy: PruneStrategy = "keep_latest") -> int:
        """Keep each namespace's newest checkpoint, or delete all (one script per thread)."""
        if strategy not in ("keep_latest", "delete"):
            raise ValueError(f"unknown prune strategy {strategy!r}; use 'keep_latest' or 'delete'")
        ids = sorted(set(thread_ids))
        for thread_id in ids:
            validate_session_id(thread_id)
        mode = "all" if strategy == "delete" else "keep_latest"
        return sum(self._remove(thread_id, mode) for thread_id in ids)

    def import_thread(self, thread_id: str, entries: Sequence[CheckpointEntry]) -> None:
        """Replace a thread's checkpoint data with ``entries`` (one script; session untouched)."""
        validate_session_id(thread_id)
        records: list[Any] = []
        blobs: list[Any] = []
        writes: list[Any] = []
        for e in entries:
            r = e.record
            check_record(r, e.blobs.values())
            check_writes(e.writes)
            records += [_field(r.ns, r.checkpoint_id), _member(r.checkpoint_id, r.ns)]
            records.append(_record_json(r))
            for b in e.blobs.values():
                blobs += _blob_pair(r.ns, b)
            for w in e.writes:
                writes += [_field(r.ns, r.checkpoint_id), *_write_pair(w)]
        k = self._c.keys
        with self._c.guard():
            self._c.cp_import(
                keys=[
                    k.cp(thread_id),
                    k.cp_index(thread_id),
                    k.cp_blobs(thread_id),
                    k.cp_wkeys(thread_id),
                    k.cp_threads,
                ],
                args=[
                    thread_id,
                    k.cp_writes_prefix(thread_id),
                    len(records) // 3,
                    *records,
                    len(blobs) // 2,
                    *blobs,
                    len(writes) // 3,
                    *writes,
                ],
            )

    def summary(self, thread_id: str) -> ThreadSummary:
        """Return counts and bytes of a thread's checkpoint data (one read-only script)."""
        validate_session_id(thread_id)
        k = self._c.keys
        with self._c.guard():
            got = self._c.cp_summary(
                keys=[k.cp(thread_id), k.cp_blobs(thread_id), k.cp_wkeys(thread_id)]
            )
        return ThreadSummary(*(int(v) for v in got))

    def thread_ids(self) -> builtins.list[str]:
        """Return every thread id that has checkpoints, sorted."""
        with self._c.guard():
            members = self._c.client.smembers(self._c.keys.cp_threads)
        return sorted(bytes(m).decode("utf-8") for m in members)
