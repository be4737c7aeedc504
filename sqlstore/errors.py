"""The error tree of sqlstore.

Every error a user can meet derives from :class:`StoreError` and may carry a
one-line ``hint`` (the command or change that usually fixes it). Backend driver
errors (apsw) are translated to these classes in exactly one place
(:mod:`sqlstore.sqlite.translate`), always with ``raise ... from``.
"""

from __future__ import annotations

from datetime import datetime


class StoreError(Exception):
    """Root of every error sqlstore raises on purpose."""

    default_hint: str = ""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = self.default_hint if hint is None else hint

    def __str__(self) -> str:
        return self.message


class SessionNotFound(StoreError, LookupError):
    """No snapshot is stored under the requested session id."""

    default_hint = "List the stored sessions with `sqlstore ls`."

    def __init__(self, session_id: str, *, hint: str | None = None) -> None:
        super().__init__(f"session not found: {session_id!r}", hint=hint)
        self.session_id = session_id


class SessionAlreadyExists(StoreError):
    """`create` found a snapshot already stored under the id; nothing was changed."""

    def __init__(self, session_id: str, *, hint: str | None = None) -> None:
        super().__init__(f"session already exists: {session_id!r}", hint=hint)
        self.session_id = session_id


class VersionConflict(StoreError):
    """A conditional write found another stored version (or no session); nothing was changed.

    ``stored_version`` is the version stored when the write was refused, ``None``
    when the session has no snapshot; ``expected_version`` is what the caller passed.
    """

    default_hint = (
        "Another writer changed the session first: reload it with "
        "`sessions.load_versioned(id)`, redo the change, and retry with the version it returns."
    )

    def __init__(
        self,
        session_id: str,
        *,
        expected_version: int,
        stored_version: int | None,
        hint: str | None = None,
    ) -> None:
        if expected_version == 0:
            wanted = "expected no stored session"
        else:
            wanted = f"expected version {expected_version}"
        found = "none is stored" if stored_version is None else f"found version {stored_version}"
        message = f"version conflict on session {session_id!r}: {wanted}, {found}"
        super().__init__(message, hint=hint)
        self.session_id = session_id
        self.expected_version = expected_version
        self.stored_version = stored_version


class PruneUnsupported(StoreError):
    """The backend cannot delete sessions safely (``retention.sweep`` raises it up front)."""


class CursorMalformed(StoreError, ValueError):
    """An event-log cursor is not valid for this session's log."""

    default_hint = "Start again from the beginning with an empty cursor (`--after ''`)."


class CursorExpired(StoreError):
    """An event-log cursor belongs to an earlier generation of the log."""

    default_hint = (
        "The log was deleted and recreated; re-read it from the start with an empty cursor."
    )


class MetadataCursorRestart(StoreError):
    """A session-pager cursor belongs to another scope or a changed inventory."""

    default_hint = "Restart paging without a cursor."


class LeaseHeld(StoreError):
    """Another owner holds an unexpired lease on the session.

    When raised by ``acquire``, ``holder`` is the owner that holds the lease and
    ``expires_at`` when it lapses unless renewed (both None otherwise).
    """

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        holder: str | None = None,
        expires_at: datetime | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.holder = holder
        self.expires_at = expires_at


class IllegalTransition(StoreError):
    """A session method was called in a state that does not allow it."""


class InvalidSessionId(StoreError, ValueError):
    """A session id is empty, too long, or not valid text."""

    default_hint = "Session ids are non-empty UTF-8 text without NUL, at most 4096 bytes."


class InvalidSessionMetadata(StoreError, ValueError):
    """A session's kind and relationship do not agree."""


class InvalidEvent(StoreError, ValueError):
    """An event or audit record cannot be stored (not JSON-serialisable, or too large)."""


class SnapshotError(StoreError, ValueError):
    """A snapshot could not be encoded or failed validation while decoding."""


class ReconstructError(StoreError):
    """An event log cannot be folded into a valid session (for example bad tool pairing)."""


class StoreBusy(StoreError):
    """A write could not take the database lock within the busy timeout."""

    default_hint = (
        "Another process holds the write lock; retry, or open the store with a larger "
        "busy_timeout_ms. `sqlstore check` shows the file's state."
    )


class StoreFull(StoreError):
    """The disk (or a file-size limit) is full; the write failed (stored data is intact)."""

    default_hint = "Free disk space, then retry; `sqlstore prune` deletes stale sessions."


class StoreIOError(StoreError):
    """The operating system reported an I/O error; the write failed."""

    default_hint = "Check the disk and the file system, then run `sqlstore check`."


class StoreReadOnly(StoreError):
    """The database file or its directory cannot be written."""

    default_hint = (
        "Make the file and its directory writable by this user (the -wal and -shm files "
        "are created beside it)."
    )


class StoreUnavailable(StoreError):
    """The store's server (Redis) could not be reached or refused the connection."""

    default_hint = (
        "Check that the server is running and reachable at the URL given "
        "(`redis-cli -u URL ping`), and that the credentials are right."
    )


class StoreClosed(StoreError):
    """The store was used after `close()`."""


class StoreForked(StoreClosed):
    """A store, or a file, was carried across ``fork()`` into the child process.

    SQLite connections must not cross a fork (https://sqlite.org/howtocorrupt.html#fork):
    in the child, a store opened before the fork is closed for every use, and a
    file that was open at the fork cannot be opened again, because SQLite's
    per-process lock records for it were copied from the parent.
    """

    default_hint = (
        "Open stores only in the process that uses them: start workers with "
        "multiprocessing's 'spawn' or 'forkserver' method and open the store in each "
        "worker, or fork before the store is opened."
    )


class StoreMissing(StoreError):
    """The database file does not exist and the operation does not create one."""

    default_hint = "Create it with `sqlstore init`, or point --db (or SQLSTORE_DB) at the file."


class InvalidOption(StoreError, ValueError):
    """A store option (a keyword or a ``?name=value`` of a store URL) is unknown or invalid."""


class UnsafePath(StoreError):
    """The database path is refused (for example its final component is a symlink)."""

    default_hint = "Pass the real path of the database file with --db."


class SchemaTooNew(StoreError):
    """The file was written by a newer sqlstore with a schema this version cannot read."""

    default_hint = "Upgrade sqlstore (`pip install -U sqlstore`) before opening this file."


class ForeignDatabase(StoreError):
    """The file is a SQLite database but not a sqlstore one."""

    default_hint = "Point --db at a sqlstore file, or at a new path to create one."


class StoreCorrupt(StoreError):
    """The file is damaged or is not a SQLite database at all."""

    default_hint = (
        "Restore the file from a backup (`sqlstore backup` makes one); "
        "`sqlstore check` reports what is wrong."
    )


class MigrationError(StoreError):
    """An import or export could not run (bad source, bad options)."""
