"""A/B experiments: the store fixes proposed in docs/benchmarks.md, applied by monkeypatching.

Not part of sqlstore. Put this directory first on ``PYTHONPATH`` and switch a fix
on with its environment variable; spawned worker processes inherit both, so the
multi-process benchmarks are patched too::

    BENCH_GC_FIX=1 PYTHONPATH=bench/ab:. .venv/bin/python bench/append_threads.py
    BENCH_FLOCK_FIX=1 PYTHONPATH=bench/ab:. .venv/bin/python bench/append_procs.py
    BENCH_FLOCK_FIX=1 PYTHONPATH=bench/ab:. .venv/bin/python bench/prune.py --sessions 20000

* ``BENCH_GC_FIX``: the group-commit leader commits only until its own write is
  done, then hands leadership to the oldest waiting writer (no starvation).
* ``BENCH_FLOCK_FIX``: every write transaction of every process is wrapped in a
  blocking ``flock`` on a ``<db>-writelock`` file, so a waiting process sleeps in
  the kernel and is woken when the lock is released (instead of SQLite's busy
  handler back-off of up to 100 ms per sleep).
* ``BENCH_APPEND_FIX``: one cached cursor encoder per log generation, and
  ``UPDATE event_logs ... RETURNING`` instead of ``SELECT`` + ``UPDATE``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

if os.environ.get("BENCH_GC_FIX") == "1":
    import sqlstore.sqlite.database as _gc_db
    from sqlstore.errors import StoreClosed

    class _Op:
        __slots__ = ("done", "error", "fn", "result", "wake")

        def __init__(self, fn: Callable[[Any], Any]) -> None:
            self.fn = fn
            self.done = threading.Event()
            self.wake = threading.Event()
            self.result: Any = None
            self.error: BaseException | None = None

    def _write(self: Any, fn: Callable[[Any], Any]) -> Any:
        if self._closed:
            raise StoreClosed(f"{self.path}: the store is closed")
        op = _Op(fn)
        with self._pending_lock:
            self._pending.append(op)
        while not op.done.is_set():
            if self._leader.acquire(blocking=False):
                try:
                    while not op.done.is_set():  # only until our own write is committed
                        with self._pending_lock:
                            batch = self._pending[: _gc_db.MAX_BATCH_OPS]
                            del self._pending[: _gc_db.MAX_BATCH_OPS]
                        try:
                            self._commit(batch)
                        finally:
                            for done in batch:
                                done.done.set()
                                done.wake.set()
                finally:
                    self._leader.release()
                with self._pending_lock:
                    oldest = self._pending[0] if self._pending else None
                if oldest is not None:
                    oldest.wake.set()  # hand leadership over
                break
            op.wake.wait(0.05)
            op.wake.clear()
        if op.error is not None:
            raise op.error
        return op.result

    _gc_db.Database.write = _write  # type: ignore[method-assign]

if os.environ.get("BENCH_FLOCK_FIX") == "1":
    import fcntl

    import sqlstore.sqlite.database as _fl_db

    _plain_commit = _fl_db.Database._commit
    _lock_fds: dict[int, int] = {}

    def _commit(self: Any, batch: Any) -> None:
        fd = _lock_fds.get(id(self))
        if fd is None:
            fd = os.open(self.path + "-writelock", os.O_RDWR | os.O_CREAT, 0o600)
            _lock_fds[id(self)] = fd
        fcntl.flock(fd, fcntl.LOCK_EX)  # releases the GIL while it waits
        try:
            _plain_commit(self, batch)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)

    _fl_db.Database._commit = _commit  # type: ignore[method-assign]

if os.environ.get("BENCH_APPEND_FIX") == "1":
    import functools

    import apsw

    import sqlstore.sqlite.events as _ap_events
    import sqlstore.sqlite.rows as _ap_rows
    from sqlstore.cursor import CursorEncoder, new_generation

    @functools.lru_cache(maxsize=1024)
    def _encoder(session_id: str, generation: str) -> CursorEncoder:
        return CursorEncoder(session_id, generation)

    def _encode_cursor(session_id: str, generation: str, position: int) -> str:
        return _encoder(session_id, generation)(position)

    def _append_record(
        conn: apsw.Connection,
        session_id: str,
        *,
        is_gap: bool,
        event_type: str,
        body: bytes,
        now_ns: int,
    ) -> tuple[str, int]:
        row = conn.execute(
            "UPDATE event_logs SET length = length + 1, modified_at_ns = ? "
            "WHERE session_id = ? RETURNING generation, length",
            (now_ns, session_id),
        ).fetchone()
        if row is None:
            generation, pos = new_generation(), 1
            conn.execute(
                "INSERT INTO event_logs (session_id, generation, length, modified_at_ns) "
                "VALUES (?, ?, 1, ?)",
                (session_id, generation, now_ns),
            )
        else:
            generation, pos = str(row[0]), int(row[1])
        conn.execute(
            "INSERT INTO events (session_id, pos, is_gap, type, at_ns, body) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (session_id, pos, int(is_gap), event_type, now_ns, body),
        )
        return generation, pos

    _ap_events.encode_cursor = _encode_cursor  # type: ignore[attr-defined]
    _ap_rows.append_record = _append_record
