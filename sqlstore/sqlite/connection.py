"""Opening connections: the only place that creates files and sets pragmas.

File creation is done by us, not by SQLite, so the database is 0600 and a created
directory 0700 whatever the umask; SQLite then creates ``-wal`` and ``-shm`` with
the database file's mode. A path whose final component is a symlink is refused.
"""

from __future__ import annotations

import errno
import importlib.resources
import os
import random
import stat
import time
from pathlib import Path
from typing import Literal

import apsw

from sqlstore.errors import (
    ForeignDatabase,
    SchemaTooNew,
    StoreBusy,
    StoreCorrupt,
    StoreError,
    StoreIOError,
    StoreMissing,
    StoreReadOnly,
    UnsafePath,
)
from sqlstore.files import make_private_dirs, remove_dirs
from sqlstore.sqlite.options import check_store_options
from sqlstore.sqlite.translate import translated

Durability = Literal["full", "normal"]

APPLICATION_ID = 0x53514C53  # "SQLS"
SCHEMA_VERSION = 3

PAGE_SIZE = 2048
"""Page size of new files; existing files keep theirs (changing it needs a VACUUM).

A durable commit writes every page it changed to the WAL and fsyncs it, so the
bytes per commit, not the row size, set the cost of a small append: an append
changes ~5 pages (event row and its key, log head, inventory row and its
index), so smaller pages make a durable append cheaper; below 2 KiB a large
snapshot save pays for its many more WAL frames. The measurements are in
docs/benchmarks.md ("Bytes per durable commit").
"""
BUSY_TIMEOUT_MS = 5_000
WAL_SWITCH_RETRY_S = BUSY_TIMEOUT_MS / 1000
"""How long opening keeps retrying the switch of a new file to WAL mode while it is busy."""
FILE_MODE = 0o600
SQLITE_HEADER = b"SQLite format 3\x00"


def schema_sql() -> str:
    """Return the DDL: the packaged ``sqlstore/schema.sql``, or the repository's root copy."""
    packaged = importlib.resources.files("sqlstore").joinpath("schema.sql")
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    return (Path(__file__).resolve().parents[2] / "schema.sql").read_text(encoding="utf-8")


def prepare_path(path: str | os.PathLike[str], *, create: bool, exclusive: bool = False) -> str:
    """Check the database path and create the file (0600) and its directory (0700) if asked.

    With ``exclusive`` the file must be created by this call.

    Raises:
        UnsafePath: the final component is a symlink, or the path is a directory.
        StoreMissing: the file does not exist and ``create`` is False.
        FileExistsError: ``exclusive`` and the file exists (or was created meanwhile).
    """
    text = os.fspath(path)
    if not text or text == ":memory:":
        raise UnsafePath(f"not a database file path: {text!r}", hint="Use sqlstore.MemoryStore().")
    check_path_text(text)
    if os.path.islink(text):
        raise UnsafePath(f"{text} is a symbolic link; sqlstore refuses to follow it")
    if os.path.isdir(text):
        raise UnsafePath(f"{text} is a directory, not a database file")
    if os.path.exists(text):
        if exclusive:
            raise FileExistsError(text)
        check_regular_file(text)
        return text
    if not create:
        raise StoreMissing(f"no database at {text}")
    created = make_private_dirs(os.path.dirname(os.path.abspath(text)))
    try:
        fd = os.open(text, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
    except FileExistsError:
        if exclusive:
            raise
        return text  # another process created it first; the schema step sorts it out
    except PermissionError as exc:
        remove_dirs(created)  # a failed open leaves nothing behind
        raise StoreReadOnly(f"cannot create {text}: {exc.strerror}") from exc
    except OSError as exc:  # a name too long, a path through a file, ...
        remove_dirs(created)
        raise path_error(text, exc) from exc
    try:
        os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)
    return text


def check_path_text(text: str) -> None:
    """Refuse a path SQLite cannot be given: one that is not valid UTF-8.

    Raises:
        UnsafePath: the path holds bytes that are not UTF-8 (nothing is created).
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        shown = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        raise UnsafePath(
            f"{shown} is not a valid UTF-8 path; SQLite file names must be UTF-8",
            hint="Rename the file or directory, or choose another path.",
        ) from None


def check_regular_file(text: str) -> None:
    """Refuse an existing path that is not a regular file (a FIFO would block forever).

    Raises:
        UnsafePath: the path is a FIFO, socket or device.
    """
    try:
        mode = os.stat(text).st_mode
    except OSError as exc:
        raise path_error(text, exc) from exc
    if not stat.S_ISREG(mode):
        raise UnsafePath(
            f"{text} is not a regular file (a FIFO, socket or device), not a database file",
            hint="Pass the path of the database file with --db (or set SQLSTORE_DB).",
        )


def path_error(text: str, exc: OSError) -> StoreError:
    """Translate an OS error about ``text`` to a ``StoreError`` with a hint."""
    reason = exc.strerror or str(exc)
    if exc.errno == errno.ENAMETOOLONG:
        return UnsafePath(
            f"cannot use {text}: {reason}",
            hint="Each path component must be at most 255 bytes; choose a shorter name.",
        )
    if exc.errno in (errno.ENOTDIR, errno.ENOENT, errno.ELOOP):
        return UnsafePath(f"cannot use {text}: {reason}", hint="Check each directory of the path.")
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return StoreReadOnly(f"cannot write {text}: {reason}")
    return StoreIOError(f"cannot use {text}: {reason}")


def _check_header(path: str) -> None:
    with open(path, "rb") as handle:
        head = handle.read(len(SQLITE_HEADER))
    if head and head != SQLITE_HEADER:
        raise StoreCorrupt(
            f"{path} is not a SQLite database (bad file header)",
            hint="Point --db at a sqlstore database, or restore this file from a backup.",
        )


def open_connection(
    path: str, *, durability: Durability, busy_timeout_ms: int, readonly: bool = False
) -> apsw.Connection:
    """Open one connection with every per-connection setting sqlstore relies on.

    Busy timeout, foreign keys, and ``synchronous`` per durability (FULL: a commit
    is fsynced before it returns; NORMAL: WAL commits are fsynced at checkpoints).
    With ``readonly`` the connection is opened ``SQLITE_OPEN_READONLY`` and never
    checkpoints on close, so reading a file (even one with a crashed writer's WAL)
    leaves every byte of it and of its WAL as it was.
    """
    check_store_options(durability, busy_timeout_ms)
    flags = apsw.SQLITE_OPEN_READONLY if readonly else apsw.SQLITE_OPEN_READWRITE
    with translated(path):
        conn = apsw.Connection(path, flags=flags)
        if readonly:
            # The last connection to close checkpoints the WAL into the file and deletes it.
            conn.config(apsw.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1)
        conn.set_busy_handler(BusyWait(busy_timeout_ms))
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute(f"PRAGMA synchronous={'FULL' if durability == 'full' else 'NORMAL'}")
    return conn


BUSY_SLEEP_MIN_S = 0.0005
BUSY_SLEEP_MAX_S = 0.004


class BusyWait:
    """SQLite busy handler: retry a locked write every few milliseconds, up to a timeout.

    It replaces ``sqlite3_busy_timeout``, whose sleeps back off to 100 ms: a
    process that keeps committing then wins the lock again and again while the
    others sleep, and they stall for seconds. Short jittered sleeps (0.5 to 4 ms)
    keep every process's worst wait close to the lock holders' commit time.
    ``time.sleep`` releases the GIL, so other threads run during the wait
    (https://sqlite.org/c3ref/busy_handler.html).
    """

    __slots__ = ("_started", "_timeout_s")

    def __init__(self, timeout_ms: int) -> None:
        self._timeout_s = timeout_ms / 1000
        self._started = 0.0

    def __call__(self, prior_calls: int) -> bool:
        now = time.monotonic()
        if prior_calls == 0:
            self._started = now
        elif now - self._started >= self._timeout_s:
            return False  # SQLITE_BUSY: the caller raises StoreBusy
        ceiling = min(BUSY_SLEEP_MIN_S * 2 ** min(prior_calls, 3), BUSY_SLEEP_MAX_S)
        time.sleep(random.uniform(BUSY_SLEEP_MIN_S, ceiling))
        return True


def _scalar(conn: apsw.Connection, sql: str) -> object:
    row = conn.execute(sql).fetchone()
    return None if row is None else row[0]


def ensure_schema(conn: apsw.Connection, path: str, *, readonly: bool = False) -> None:
    """Create or check the schema; switch the file to WAL and verify it.

    Nothing is written to a file that turns out to be foreign, newer or corrupt.
    With ``readonly`` nothing is written at all: a file that would need creating,
    upgrading or switching to WAL raises ``StoreError`` with a hint instead.

    Raises:
        StoreCorrupt: not a SQLite file, or damaged.
        ForeignDatabase: a SQLite database of another application.
        SchemaTooNew: written by a newer sqlstore.
    """
    try:
        _check_schema(conn, path, readonly)
    except BaseException:
        # Leave a refused file exactly as found: closing the last connection would
        # otherwise checkpoint its WAL into it and delete the WAL, rewriting another
        # application's (or a newer sqlstore's) file. SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE:
        # https://sqlite.org/c3ref/c_dbconfig_defensive.html
        conn.config(apsw.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1)
        raise


def _check_schema(conn: apsw.Connection, path: str, readonly: bool) -> None:
    _check_header(path)
    with translated(path):
        # One read transaction, so the three values come from the same commit: read
        # apart, another process initialising the file in between would make it look
        # like a foreign database (application_id still 0, but tables already there).
        conn.execute("BEGIN")
        try:
            app_id = _scalar(conn, "PRAGMA application_id")
            version = _scalar(conn, "PRAGMA user_version")
            tables = _scalar(conn, "SELECT count(*) FROM sqlite_schema")
        finally:
            conn.execute("COMMIT")
    if app_id != APPLICATION_ID:
        if app_id != 0 or version != 0 or tables != 0:
            raise ForeignDatabase(
                f"{path} is a SQLite database of another application "
                f"(application_id {app_id}, {tables} schema objects)"
            )
        if readonly:
            raise StoreError(
                f"{path} is empty: it holds no sqlstore database yet",
                hint="Create the schema with `sqlstore init`.",
            )
        _initialise(conn, path)
    elif isinstance(version, int) and version > SCHEMA_VERSION:
        raise SchemaTooNew(
            f"{path} has schema version {version}; this sqlstore reads up to {SCHEMA_VERSION}"
        )
    elif isinstance(version, int) and version < SCHEMA_VERSION:
        if readonly:
            raise StoreError(
                f"{path} has schema version {version} and needs an upgrade to {SCHEMA_VERSION}",
                hint="Upgrade it with `sqlstore init` (back it up first with `sqlstore backup`).",
            )
        _upgrade(conn, path, version)
    if not readonly:
        _ensure_wal(conn, path)


def _ensure_wal(conn: apsw.Connection, path: str) -> None:
    # Switching a new file to WAL reads its header and then upgrades to a write lock.
    # SQLite does not call the busy handler for such an upgrade (it could deadlock,
    # https://sqlite.org/c3ref/busy_handler.html), so when several processes create
    # the same file at once, one of them may get SQLITE_BUSY at once: retry.
    deadline = time.monotonic() + WAL_SWITCH_RETRY_S
    while True:
        try:
            with translated(path):
                mode = _scalar(conn, "PRAGMA journal_mode")
                if mode != "wal":
                    mode = _scalar(conn, "PRAGMA journal_mode=WAL")
            break
        except StoreBusy:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.01)
    if mode != "wal":
        raise StoreError(
            f"{path}: could not switch to WAL mode (journal_mode is {mode!r})",
            hint="WAL needs a local file system with shared-memory support (not NFS).",
        )


def _initialise(conn: apsw.Connection, path: str) -> None:
    with translated(path):
        # File-level pragmas go before the first table, outside any transaction.
        conn.execute(f"PRAGMA page_size={PAGE_SIZE}")
        conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
        _ensure_wal(conn, path)
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Another process may have initialised the file while we waited for the lock.
            if _scalar(conn, "PRAGMA application_id") == 0 and (
                _scalar(conn, "SELECT count(*) FROM sqlite_schema") == 0
            ):
                conn.execute(schema_sql())
                conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
                conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            if not conn.getautocommit():
                conn.execute("ROLLBACK")
            raise
    if _scalar(conn, "PRAGMA application_id") != APPLICATION_ID:
        raise ForeignDatabase(f"{path} was turned into another application's database meanwhile")


_UPGRADES: dict[int, str] = {
    # 1 → 2: the owner index covers owned sessions only (appends to ownerless
    # sessions no longer rewrite it); page queries by owner are unchanged.
    1: "DROP INDEX sessions_by_owner; "
    "CREATE INDEX sessions_by_owner ON sessions (owner_key, modified_at_ns, id) "
    "WHERE owner_key IS NOT NULL;",
    # 2 → 3: every second-stage addition, one block per feature (keep every block).
    2: (
        # Viewer (issue 19): counts/filters by state and kind, children by parent id.
        "CREATE INDEX IF NOT EXISTS sessions_by_state_kind ON sessions (state, kind); "
        "CREATE INDEX IF NOT EXISTS sessions_by_parent ON sessions "
        "(json_extract(relationship, '$.parent_session_id')) "
        "WHERE kind IN ('subagent', 'parallel_branch', 'team_member'); "
        # LangGraph checkpointer (issue 17): checkpoints, channel blobs, pending writes.
        "CREATE TABLE IF NOT EXISTS checkpoints (session_id TEXT NOT NULL, ns TEXT NOT NULL, "
        "checkpoint_id TEXT NOT NULL, parent_id TEXT, run_id TEXT, type TEXT NOT NULL, "
        "body BLOB NOT NULL, metadata BLOB NOT NULL, versions TEXT NOT NULL, "
        "PRIMARY KEY (session_id, ns, checkpoint_id)); "
        "CREATE TABLE IF NOT EXISTS checkpoint_blobs (session_id TEXT NOT NULL, ns TEXT NOT NULL, "
        "channel TEXT NOT NULL, version TEXT NOT NULL, type TEXT NOT NULL, "
        "data BLOB NOT NULL, PRIMARY KEY (session_id, ns, version, channel)) WITHOUT ROWID; "
        "CREATE TABLE IF NOT EXISTS checkpoint_writes (session_id TEXT NOT NULL, ns TEXT NOT NULL, "
        "checkpoint_id TEXT NOT NULL, task_id TEXT NOT NULL, idx INTEGER NOT NULL, "
        "channel TEXT NOT NULL, type TEXT NOT NULL, data BLOB NOT NULL, "
        "task_path TEXT NOT NULL, "
        "PRIMARY KEY (session_id, ns, checkpoint_id, task_id, idx)) WITHOUT ROWID; "
        # scoped state (#18, the ADK integration's app: and user: state)
        "CREATE TABLE IF NOT EXISTS scoped_state ("
        " scope TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,"
        " modified_at_ns INTEGER NOT NULL, PRIMARY KEY (scope, key)) WITHOUT ROWID; "
        # Orphan writes (issue 20 item 7): the table, filled with the ids that already
        # hold a log or audit rows without a snapshot, at their last write.
        "CREATE TABLE IF NOT EXISTS orphans (session_id TEXT PRIMARY KEY NOT NULL, "
        "modified_at_ns INTEGER NOT NULL); "
        "INSERT OR IGNORE INTO orphans (session_id, modified_at_ns) "
        "SELECT id, max(at) FROM (SELECT session_id AS id, modified_at_ns AS at FROM event_logs "
        "UNION ALL SELECT session_id, at_ns FROM tool_calls) "
        "WHERE id NOT IN (SELECT id FROM sessions) GROUP BY id; "
        # Deletions in bounded steps (issue 20 item 16).
        "CREATE TABLE IF NOT EXISTS deletions (session_id TEXT PRIMARY KEY NOT NULL, "
        "started_at_ns INTEGER NOT NULL);"
    ),
}
"""Version ladder: ``_UPGRADES[n]`` is the SQL that takes schema n to n + 1."""


def _upgrade(conn: apsw.Connection, path: str, version: int) -> None:
    with translated(path):
        while version < SCHEMA_VERSION:
            step = _UPGRADES.get(version)
            if step is None:
                raise StoreCorrupt(f"{path}: no upgrade path from schema version {version}")
            conn.execute("BEGIN IMMEDIATE")
            try:
                current = _scalar(conn, "PRAGMA user_version")
                if current == version:
                    conn.execute(step)
                    conn.execute(f"PRAGMA user_version={version + 1}")
                conn.execute("COMMIT")
            except BaseException:
                if not conn.getautocommit():
                    conn.execute("ROLLBACK")
                raise
            version += 1
