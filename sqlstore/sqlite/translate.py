"""The one place where apsw exceptions become sqlstore errors.

Programming errors in our own SQL (``apsw.SQLError``, ``apsw.BindingsError``) are
not translated: they are bugs and must surface as they are.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import apsw

from sqlstore.errors import (
    StoreBusy,
    StoreClosed,
    StoreCorrupt,
    StoreError,
    StoreFull,
    StoreIOError,
    StoreReadOnly,
)

UNTRANSLATED = (apsw.SQLError, apsw.BindingsError, apsw.ThreadingViolationError)
"""apsw errors that are programming errors, raised as they are (not store errors)."""

_CODE_TEXT: dict[type[apsw.Error], str] = {
    apsw.FullError: "database or disk is full",
    apsw.IOError: "disk I/O error",
}
"""SQLite's own wording, for errors whose message was lost."""


def translate(exc: apsw.Error, path: str) -> StoreError:
    """Return the sqlstore error that describes ``exc`` for the database at ``path``.

    The driver error is attached as ``__cause__`` here, so an error that is stored
    and raised later (the group-commit writer hands it to every waiting caller)
    still carries it, as ``raise ... from`` would.
    """
    error = _describe(exc, path)
    error.__cause__ = exc
    return error


def _describe(exc: apsw.Error, path: str) -> StoreError:
    detail = str(exc).split(":", 1)[-1].strip() or type(exc).__name__
    if detail == "not an error":
        # SQLite's text for SQLITE_OK, read from a connection that did not fail
        # (the backup API reports on the source): the class says what happened.
        detail = _CODE_TEXT.get(type(exc), type(exc).__name__)
    if isinstance(exc, apsw.ConnectionClosedError):
        # A write queued while another thread ran close() reaches the closed connection.
        return StoreClosed(f"{path}: the store is closed")
    if isinstance(exc, apsw.BusyError | apsw.LockedError):
        return StoreBusy(f"{path}: the database is locked by another writer ({detail})")
    if isinstance(exc, apsw.NotADBError):
        return StoreCorrupt(f"{path} is not a SQLite database, or its header is damaged")
    if isinstance(exc, apsw.CorruptError):
        return StoreCorrupt(f"{path} is corrupt ({detail})")
    if isinstance(exc, apsw.FullError):
        return StoreFull(f"{path}: the disk is full; the write failed ({detail})")
    if isinstance(exc, apsw.ReadOnlyError):
        return StoreReadOnly(f"{path} cannot be written ({detail})")
    if isinstance(exc, apsw.CantOpenError | apsw.PermissionsError | apsw.AuthError):
        directory = os.path.dirname(os.path.abspath(path))
        if not os.access(path, os.W_OK) or not os.access(directory, os.W_OK):
            return StoreReadOnly(f"{path} cannot be opened for writing ({detail})")
        return StoreIOError(f"{path} cannot be opened ({detail})")
    if isinstance(exc, apsw.IOError):
        return StoreIOError(f"{path}: I/O error; the write failed ({detail})")
    return StoreError(f"{path}: SQLite error: {detail}")


@contextmanager
def translated(path: str) -> Iterator[None]:
    """Translate apsw errors raised inside the block (``raise ... from``)."""
    try:
        yield
    except UNTRANSLATED:
        raise
    except apsw.Error as exc:
        raise translate(exc, path) from exc
