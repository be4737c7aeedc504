"""What a large retention sweep needs from a ``SQLiteStore`` (``store.housekeeping``).

One SQLite file has one write lock for every process, so a sweep of a
``SQLiteStore`` is paced (see :mod:`retention.sweep`); this module gives it the
file-level pieces it paces: the bytes on disk, a passive WAL checkpoint, the
incremental vacuum, batched conditional deletes, and an unsynced second handle
(with ``durability="normal"``) plus the WAL fsync that makes its deletions
durable. It implements :class:`sqlstore.ports.Housekeeping`.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from sqlstore.errors import StoreError
from sqlstore.inventory import SessionMeta
from sqlstore.sqlite.maintenance import checkpoint, file_sizes, vacuum

if TYPE_CHECKING:
    from sqlstore.sqlite.store import SQLiteStore


class SQLiteHousekeeping:
    """Housekeeping of one ``SQLiteStore`` handle (see :class:`sqlstore.ports.Housekeeping`).

    Args:
        store: the handle it works through.
        owned: True for a handle opened by :meth:`unsynced`, which :meth:`close`
            closes; the store's own housekeeping never closes its store.
    """

    def __init__(self, store: SQLiteStore, *, owned: bool = False) -> None:
        self._store = store
        self._owned = owned

    @property
    def store(self) -> SQLiteStore:
        """The handle this housekeeping works through."""
        return self._store

    def file_size(self) -> int:
        """Return the bytes on disk of the database file plus its WAL."""
        main, wal = file_sizes(self._store.path)
        return main + wal

    def checkpoint(self) -> None:
        """Run a passive WAL checkpoint (blocks no one)."""
        checkpoint(self._store)

    def shrink(
        self, *, step_pages: int | None = None, between_steps: Callable[[float], None] | None = None
    ) -> None:
        """Checkpoint the WAL and run an incremental vacuum (``step_pages`` per transaction).

        Raises:
            StoreError: the maintenance could not run (for example ``StoreBusy``).
        """
        if step_pages is None:
            vacuum(self._store, incremental=True)
        else:
            vacuum(
                self._store, incremental=True, step_pages=step_pages, between_steps=between_steps
            )

    def delete_many_if_unchanged(
        self,
        expected: Sequence[SessionMeta],
        *,
        budget_s: float | None,
        timer: Callable[[], float],
    ) -> builtins.list[bool]:
        """Conditional deletes in one transaction on a budget (``SQLiteSessions`` does them)."""
        return self._store.sessions.delete_many_if_unchanged(
            expected, budget_s=budget_s, timer=timer
        )

    def unsynced(self) -> SQLiteHousekeeping | None:
        """Open the file again with ``durability="normal"``; None if this handle is not ``full``.

        The second handle keeps this one's busy timeout. None too when this
        handle is closed or the file cannot be opened again (deleting through
        this handle still works).
        """
        db = self._store.db
        if db.durability != "full" or db.closed:
            return None
        try:
            # The handle's own class: this module never imports the store module.
            other = type(self._store)(
                self._store.path,
                durability="normal",
                create=False,
                busy_timeout_ms=db.busy_timeout_ms,
            )
        except StoreError:
            return None
        return SQLiteHousekeeping(other, owned=True)

    def sync(self) -> None:
        """fsync the WAL, so every commit of any handle on this file is on disk.

        fsync applies to the file, whichever descriptor it comes through; a WAL
        that a checkpoint already reset needs nothing (checkpoints sync what
        they copy), and a missing WAL needs nothing either.

        Raises:
            StoreError: the WAL could not be opened or synced.
        """
        try:
            fd = os.open(self._store.path + "-wal", os.O_RDONLY)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise StoreError(
                f"could not open the WAL to make the deletions durable: {exc}"
            ) from exc
        try:
            os.fsync(fd)
        except OSError as exc:
            raise StoreError(
                f"could not make the deletions durable (fsync of the WAL): {exc}"
            ) from exc
        finally:
            os.close(fd)

    def close(self) -> None:
        """Close the handle opened by :meth:`unsynced`; nothing for the store's own."""
        if self._owned:
            self._store.close()
