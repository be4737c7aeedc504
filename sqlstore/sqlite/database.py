"""Connections of one SQLiteStore: a group-committing writer, a reader pool, wake-ups.

**Writes.** Every write is a function ``fn(conn) -> T`` submitted to
:meth:`Database.write`. Submitted functions that wait at the same time are run
by one thread (the *leader*) inside one ``BEGIN IMMEDIATE`` transaction and
committed with one fsync (group commit); each caller returns only after the
commit that holds its work, or gets that commit's error. When one function of
a batch fails (for example a ``create`` that collides), the batch is rolled
back and each of its functions runs again in a transaction of its own, so the
failure stays with its own call. A caller's writes are applied in call order.

A write that finds nobody queued (and no batch just committed) commits alone
without the queue. Under contention, the leader of the next batch first waits
— no longer than the previous batch's transaction took, and at most
``GATHER_MAX_S`` — until as many writes are queued as that batch held: its
writers were woken together by its commit and most come straight back.
Without that wait the writers split into two alternating half-size batches,
and the ones running Python would take the GIL from the leader at every
SQLite call of its transaction (the 8-thread figures, with and without the
wait, are in docs/benchmarks.md). A writer that comes back later than a commit
takes is not waited for, and a wait that ends short turns gathering off for a while
(see ``_gather``), so a slow writer does not slow a fast one to its pace.

``BEGIN IMMEDIATE`` is issued with ``conn.execute`` — it releases the GIL while
SQLite's busy handler waits for another process's lock, whereas apsw's
``with conn:`` would hold it and freeze every thread of the host.

**Reads** borrow a pooled connection for one short statement or transaction and
give it back before anything is yielded to the caller (a read transaction held
across a ``yield`` would pin the WAL).

**Fork.** SQLite connections must not be used across ``fork()``
(https://sqlite.org/howtocorrupt.html#fork). In a forked child, a store opened
before the fork raises :class:`~sqlstore.errors.StoreForked` (a ``StoreClosed``)
on every use, and every connection alive at the fork is parked in a module
list, so the child never uses or closes one (not even through garbage
collection): their SQLite state belongs to the parent. The child cannot open a
new store on a file that was open at the fork either: SQLite keeps its lock
bookkeeping per process and per file, the child inherits the parent's copy, and
a new connection would share it and believe it holds locks it does not (the
parent could then checkpoint and delete the WAL under it, losing the child's
acknowledged writes). Files that were not open at the fork are fine.

**Wake-ups.** After each commit the writer bumps a process-wide notifier for the
file, so followers in this process wake at once; followers also poll
``PRAGMA data_version`` on their own connection to see commits of other
processes (https://sqlite.org/pragma.html#pragma_data_version).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

import apsw

from sqlstore.errors import StoreClosed, StoreForked, StoreReadOnly
from sqlstore.sqlite.connection import Durability, ensure_schema, open_connection, prepare_path
from sqlstore.sqlite.options import check_store_options
from sqlstore.sqlite.translate import UNTRANSLATED, translate, translated

T = TypeVar("T")

MAX_BATCH_OPS = 256
"""Most write functions folded into one transaction."""

GATHER_MAX_S = 0.001
"""Longest a leader waits for the writers of the previous batch to queue again (the
wait is also bounded by the duration of that batch's transaction)."""

GATHER_BACKOFF_MAX = 64
"""Most queued batches committed without gathering after waits that ended short."""

LEADER_RECHECK_S = 0.05
"""Safety net only: a waiting writer re-tries leadership this often (hand-off is direct)."""

MAX_IDLE_READERS = 8
"""Reader connections kept open for reuse."""

FOLLOW_POLL_MIN_S = 0.001
FOLLOW_POLL_MAX_S = 0.010
"""A parked follower checks ``data_version`` for other processes' commits after 1 ms,
then backs off to every 10 ms while nothing changes (each check is one cheap pragma)."""


class _Work(Generic[T]):
    """One write function and its outcome."""

    __slots__ = ("error", "fn", "result")

    def __init__(self, fn: Callable[[apsw.Connection], T]) -> None:
        self.fn = fn
        self.result: T | None = None
        self.error: BaseException | None = None

    def outcome(self) -> T:
        """Return the result, or raise the error the write ended with."""
        if self.error is not None:
            raise self.error
        return self.result  # type: ignore[return-value]


class _Op(_Work[T]):
    """A queued write: waits for a leader to commit it, or to be told to lead."""

    __slots__ = ("finished", "wake")

    def __init__(self, fn: Callable[[apsw.Connection], T]) -> None:
        super().__init__(fn)
        self.finished = False
        self.wake = threading.Event()  # set when finished, or when it is this op's turn to lead


class _OneFailed(Exception):
    """One function of :meth:`Database.write_each` raised (its batch is written one by one)."""


class Notifier:
    """A process-wide change counter for one database file, with a condition to wait on.

    ``bump`` takes the condition's lock only when a follower is parked: a waiter
    registers in ``waiters`` *before* it compares ``count``, and ``bump`` changes
    ``count`` *before* it reads ``waiters``, so either the waiter sees the new
    count or ``bump`` sees the waiter (under the GIL these steps are ordered).
    Two stores on the same file may bump at the same moment and lose one
    increment; that is harmless, as a follower only needs to see ``count`` change
    after a commit, and each bump comes after its own commit.
    """

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.count = 0
        self.waiters = 0

    def bump(self) -> None:
        """Record a commit and wake every parked follower."""
        self.count += 1
        if self.waiters:
            with self.cond:
                self.cond.notify_all()

    def wait_for_change(self, seen: int, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for ``count`` to differ from ``seen``; True if it does."""
        with self.cond:
            self.waiters += 1
            try:
                if self.count == seen:
                    self.cond.wait(timeout_s)
            finally:
                self.waiters -= 1
            return self.count != seen


_forks = 0
"""Forks this process descends from (counted in each child); a Database remembers
the count it was opened under, so one compare per call detects use after fork."""

_LIVE: weakref.WeakKeyDictionary[apsw.Connection, tuple[int, int]] = weakref.WeakKeyDictionary()
"""Every open connection of a Database of this process, with its file's (dev, inode)."""

_INHERITED: list[apsw.Connection] = []
"""Connections alive at a fork, held by the child so they are never closed there."""

_INHERITED_FILES: frozenset[tuple[int, int]] = frozenset()
"""Files (dev, inode) that had open connections when this process was forked."""

_NOTIFIERS: dict[tuple[int, int], Notifier] = {}
_NOTIFIERS_LOCK = threading.Lock()


def _after_fork_in_child() -> None:
    global _forks, _INHERITED_FILES, _NOTIFIERS, _NOTIFIERS_LOCK
    _forks += 1
    inherited = list(_LIVE.items())
    _LIVE.clear()
    _INHERITED.extend(conn for conn, _ in inherited)
    _INHERITED_FILES = _INHERITED_FILES | {key for _, key in inherited}
    # A parent thread may have held the lock at the fork; the parent's notifiers
    # are of no use here (their stores are refused).
    _NOTIFIERS = {}
    _NOTIFIERS_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _file_key(path: str) -> tuple[int, int]:
    st = os.stat(path)
    return (st.st_dev, st.st_ino)


def _open(path: str, **options: Any) -> apsw.Connection:
    """Open a connection and register it as live (see ``_after_fork_in_child``)."""
    conn = open_connection(path, **options)
    _LIVE[conn] = _file_key(path)
    return conn


def _close(conn: apsw.Connection) -> None:
    _LIVE.pop(conn, None)
    conn.close()


def notifier_for(path: str) -> Notifier:
    """Return the notifier shared by every store in this process that opened ``path``."""
    key = _file_key(path)
    with _NOTIFIERS_LOCK:
        found = _NOTIFIERS.get(key)
        if found is None:
            found = _NOTIFIERS[key] = Notifier()
        return found


class Database:
    """The connections and transaction discipline behind one ``SQLiteStore``."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        durability: Durability,
        busy_timeout_ms: int,
        create: bool,
        readonly: bool = False,
    ) -> None:
        check_store_options(durability, busy_timeout_ms)  # before anything is created
        self.path = prepare_path(path, create=create and not readonly)
        self._opened_at_fork = _forks
        self._opened_by = os.getpid()
        if _INHERITED_FILES and _file_key(self.path) in _INHERITED_FILES:
            raise StoreForked(
                f"{self.path} was open in process {os.getppid()} when it forked this "
                f"process ({os.getpid()}); SQLite's locks for that file are not usable here"
            )
        self.readonly = readonly
        self.durability = durability
        self.busy_timeout_ms = busy_timeout_ms
        self._writer = _open(
            self.path, durability=durability, busy_timeout_ms=busy_timeout_ms, readonly=readonly
        )
        try:
            ensure_schema(self._writer, self.path, readonly=readonly)
        except BaseException:
            _close(self._writer)
            raise
        self.notifier = notifier_for(self.path)
        self._leader = threading.Lock()
        self._pending_lock = threading.Lock()
        self._pending: list[_Op[Any]] = []
        self._readers: list[apsw.Connection] = []
        self._readers_lock = threading.Lock()
        self._closed = False
        self._last_batch = 0
        self._last_batch_end = 0.0
        self._last_batch_took = 0.0
        self._gather_skip = 0
        self._gather_backoff = 1
        self._gather_target = 0
        self._gathered = threading.Event()

    # -- writes ------------------------------------------------------------------

    def write(self, fn: Callable[[apsw.Connection], T]) -> T:
        """Run ``fn(conn)`` inside a write transaction and return its result after commit.

        Raises:
            StoreBusy: the write lock could not be taken within the busy timeout.
            StoreError: the commit failed (disk full, I/O error, ...); nothing was written.
            Exception: whatever ``fn`` raised; its work was rolled back.
        """
        self.check_open()
        if self.readonly:
            raise StoreReadOnly(
                f"{self.path} was opened read-only",
                hint="Open it without readonly=True to write.",
            )
        if not self._pending and not self._batching() and self._leader.acquire(blocking=False):
            # Fast path: nobody is queued, so this call commits alone without the
            # queue's bookkeeping; writers arriving meanwhile queue up and the
            # hand-off below wakes the oldest of them to lead their batch.
            try:
                if not self._pending:
                    if self._closed:
                        raise self._closed_error()
                    work = _Work(fn)
                    self._transaction([work], isolate=True)
                    return work.outcome()
            finally:
                self._leader.release()
                self._hand_off()
        op: _Op[T] = _Op(fn)
        with self._pending_lock:
            self._pending.append(op)
            queued = len(self._pending)
        if self._gather_target and queued >= self._gather_target:
            self._gathered.set()
        while not op.finished:
            if self._leader.acquire(blocking=False):
                try:
                    self._commit_next_batch()
                finally:
                    self._leader.release()
                self._hand_off()
            if not op.finished:
                op.wake.wait(LEADER_RECHECK_S)
                op.wake.clear()
        return op.outcome()

    def write_each(
        self,
        fns: Sequence[Callable[[apsw.Connection], T]],
        *,
        together: Callable[[apsw.Connection], list[T]] | None = None,
    ) -> list[tuple[T | None, BaseException | None]]:
        """Run several write functions as one member of a group commit; (result, error) each.

        All of them run in one transaction when none fails (``together``, when
        given, does the work of all of them at once, more cheaply, and returns
        their results). When one raises, that transaction is rolled back and
        each function is written on its own, so the failure stays with its
        function (as within a group commit). A failure to begin or commit
        (busy, disk full, ...) is every function's outcome; nothing is retried then.
        """
        outcomes: list[tuple[T | None, BaseException | None]] = []

        def run(conn: apsw.Connection) -> None:
            outcomes.clear()
            if together is not None:
                try:
                    outcomes.extend((result, None) for result in together(conn))
                except BaseException as exc:
                    raise _OneFailed from exc
                return
            for fn in fns:
                try:
                    outcomes.append((fn(conn), None))
                except BaseException as exc:
                    raise _OneFailed from exc

        try:
            self.write(run)
        except _OneFailed:
            outcomes.clear()
            for fn in fns:
                try:
                    outcomes.append((self.write(fn), None))
                except Exception as exc:
                    outcomes.append((None, exc))
        except Exception as exc:
            return [(None, exc) for _ in fns]
        return outcomes

    def check_open(self) -> None:
        """Raise ``StoreClosed`` after :meth:`close`, ``StoreForked`` in a forked child."""
        if self._opened_at_fork != _forks:
            raise StoreForked(
                f"{self.path}: this store was opened by process {self._opened_by} and "
                f"cannot be used in process {os.getpid()}, forked from it"
            )
        if self._closed:
            raise self._closed_error()

    def _closed_error(self) -> StoreClosed:
        return StoreClosed(f"{self.path}: the store is closed")

    def _commit_next_batch(self) -> None:
        """Commit the oldest queued ops (up to ``MAX_BATCH_OPS``) in one transaction."""
        if self._pending:
            self._gather()
        with self._pending_lock:
            batch = self._pending[:MAX_BATCH_OPS]
            del self._pending[:MAX_BATCH_OPS]
        if not batch:
            return
        try:
            if self._closed:
                for op in batch:
                    op.error = self._closed_error()
                return
            started = time.monotonic()
            whole = self._commit(batch)
            self._last_batch_end = time.monotonic()
            self._last_batch_took = self._last_batch_end - started
            # A batch re-run op by op (one of them failed) is no pattern to wait for.
            self._last_batch = len(batch) if whole else 0
            if self._gather_skip:
                self._gather_skip -= 1
        finally:
            for op in batch:
                op.finished = True
                op.wake.set()

    def _batching(self) -> bool:
        """True right after a commit of several queued writes (writers are contending)."""
        return (
            self._last_batch > 1
            and not self._gather_skip
            and time.monotonic() - self._last_batch_end < GATHER_MAX_S
        )

    def _gather(self) -> None:
        """Wait until as many ops are queued as the last batch had, or a commit's time.

        The writers of the last batch were all woken by its commit and most come
        straight back with their next write; starting the transaction before they
        have queued would split them over two commits, and each of them would take
        the GIL from the leader at every SQLite call of its transaction. The wait
        is bounded by what it can save: the duration of the last batch's
        transaction (at most ``GATHER_MAX_S``). A writer that comes back later
        than that (it sleeps, or builds a big snapshot between writes) is not
        waited for beyond it; and a wait that ends short turns gathering off for
        the next 1, 2, 4 ... 64 queued batches (reset by a wait that fills), so
        such a writer costs a fast one a wasted wait only now and then.
        """
        if not self._batching():
            return
        target = min(self._last_batch, MAX_BATCH_OPS)
        if len(self._pending) >= target:
            return
        self._gathered.clear()
        self._gather_target = target
        try:
            if len(self._pending) < target:
                self._gathered.wait(min(GATHER_MAX_S, self._last_batch_took))
        finally:
            self._gather_target = 0
        if len(self._pending) >= target:
            self._gather_backoff = 1
        else:
            self._gather_skip = self._gather_backoff
            self._gather_backoff = min(2 * self._gather_backoff, GATHER_BACKOFF_MAX)

    def _hand_off(self) -> None:
        """Wake the oldest queued writer to lead the next batch.

        A leader commits one batch — the one holding its own op — and then hands
        over, so no caller keeps committing for others while its own call waits
        to return. Waking after the release also closes the gap in which a thread
        queued its op while the lock was held and failed to become leader.
        """
        with self._pending_lock:
            oldest = self._pending[0] if self._pending else None
        if oldest is not None:
            oldest.wake.set()

    def _commit(self, batch: Sequence[_Work[Any]]) -> bool:
        """Run a batch in one transaction; if one op fails, run each op on its own.

        The optimistic path runs every op back to back (no savepoint per op: most
        writes cannot fail once their input is encoded). When an op raises, the
        whole transaction is rolled back and every op of the batch is run again
        in a transaction of its own, so the failure stays with its op. Returns
        whether the batch (of more than one op) committed as one transaction.
        """
        if len(batch) > 1 and self._transaction(batch, isolate=False):
            return True
        for op in batch:
            op.result, op.error = None, None
            self._transaction([op], isolate=True)
        return False

    def _transaction(self, ops: Sequence[_Work[Any]], *, isolate: bool) -> bool:
        """Run ``ops`` in one transaction; return False if an op failed (all rolled back).

        With ``isolate`` (one op) the op's own failure is recorded on it. Without,
        an op failure leaves the ops untouched for the caller to run one by one.
        A failure to begin or commit is recorded on every op either way.
        """
        conn = self._writer
        try:
            conn.execute("BEGIN IMMEDIATE")
        except apsw.Error as exc:
            error = translate(exc, self.path)
            for op in ops:
                op.error = error
            return True
        try:
            for op in ops:
                try:
                    op.result = op.fn(conn)
                except BaseException as exc:
                    conn.execute("ROLLBACK")
                    if isolate:
                        op.error = self._as_store_error(exc)
                        return True
                    return False
            conn.execute("COMMIT")
        except apsw.Error as exc:
            error = translate(exc, self.path)
            if not conn.getautocommit():
                # The transaction may already be gone: SQLite rolls back on some errors.
                with contextlib.suppress(apsw.Error):
                    conn.execute("ROLLBACK")
            for op in ops:
                op.result = None
                op.error = error
            return True
        self.notifier.bump()
        return True

    def _as_store_error(self, exc: BaseException) -> BaseException:
        if isinstance(exc, apsw.Error) and not isinstance(exc, apsw.SQLError | apsw.BindingsError):
            return translate(exc, self.path)
        return exc

    # -- reads -------------------------------------------------------------------

    @contextmanager
    def reader(self) -> Iterator[apsw.Connection]:
        """Borrow a reader connection for one short read; apsw errors are translated."""
        conn = self._take_reader()
        try:
            with translated(self.path):
                yield conn
        finally:
            self._give_reader(conn)

    def read_statement(self, sql: str, bindings: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        """Return every row of one statement on a pooled connection.

        One statement is its own read transaction (one consistent snapshot), so
        no ``BEGIN``/``COMMIT`` is issued: the cheapest read there is, for hot
        bounded reads such as a log's tail.
        """
        conn = self._take_reader()
        try:
            return conn.execute(sql, bindings).fetchall()
        except UNTRANSLATED:
            raise
        except apsw.Error as exc:
            raise translate(exc, self.path) from exc
        finally:
            self._give_reader(conn)

    def read(self, fn: Callable[[apsw.Connection], T]) -> T:
        """Run ``fn(conn)`` in one read transaction on a pooled connection."""
        with self.reader() as conn:
            conn.execute("BEGIN")
            try:
                return fn(conn)
            finally:
                conn.execute("COMMIT")

    def _take_reader(self) -> apsw.Connection:
        self.check_open()
        with self._readers_lock:
            if self._readers:
                return self._readers.pop()
        return _open(
            self.path,
            durability=self.durability,
            busy_timeout_ms=self.busy_timeout_ms,
            readonly=self.readonly,
        )

    def _give_reader(self, conn: apsw.Connection) -> None:
        if self._opened_at_fork != _forks:
            return  # inherited: parked at the fork, never touched here
        if not conn.getautocommit():
            try:
                conn.execute("ROLLBACK")
            except apsw.Error:
                _close(conn)
                return
        with self._readers_lock:
            if not self._closed and len(self._readers) < MAX_IDLE_READERS:
                self._readers.append(conn)
                return
        _close(conn)

    def follower(self) -> Follower:
        """Return a dedicated connection wrapper for one following read."""
        return Follower(self, self._take_reader())

    # -- lifecycle ---------------------------------------------------------------

    def close(self) -> None:
        """Close every connection; idempotent. Followers in this process are woken.

        In a forked child the store is only marked closed: its connections were
        parked at the fork (they belong to the parent's SQLite state).
        """
        if self._closed:
            return
        if self._opened_at_fork != _forks:
            # No lock taken: one held by a parent thread at the fork is never released here.
            self._closed = True
            return
        with self._leader:
            self._closed = True
            with self._readers_lock:
                readers, self._readers = self._readers, []
            for conn in readers:
                _close(conn)
            _close(self._writer)
        self.notifier.bump()

    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        return self._closed


class Follower:
    """A reader connection held for the life of one follow, with change detection."""

    def __init__(self, db: Database, conn: apsw.Connection) -> None:
        self.db = db
        self.conn = conn
        self._released = False

    def change_token(self) -> tuple[int, int]:
        """Return (in-process commit count, this connection's data_version)."""
        self.db.check_open()
        with translated(self.db.path):
            row = self.conn.execute("PRAGMA data_version").fetchone()
        assert row is not None
        return (self.db.notifier.count, int(row[0]))

    def wait(self, token: object, stop: threading.Event | None, timeout_s: float) -> None:
        """Block until a commit is seen (this process or another), ``stop`` is set, or timeout."""
        deadline = time.monotonic() + timeout_s
        notifier = self.db.notifier
        assert isinstance(token, tuple)
        interval = FOLLOW_POLL_MIN_S
        while True:
            if stop is not None and stop.is_set():
                return
            if self.db.closed:
                raise StoreClosed(f"{self.db.path}: the store was closed while following")
            if notifier.wait_for_change(token[0], interval):
                return
            interval = min(interval * 2, FOLLOW_POLL_MAX_S)
            if self.change_token()[1] != token[1]:
                return
            if time.monotonic() >= deadline:
                return

    def release(self) -> None:
        """Give the connection back to the pool; idempotent."""
        if not self._released:
            self._released = True
            self.db._give_reader(self.conn)
