"""The sweep: delete what a plan selected, safely, in small transactions.

Safety, per entry, in this order:

1. a ``stop`` event that is set ends the sweep before the next entry (the
   deletions done so far stay done; the rest are left for the next sweep);
2. the ids with a live lease are read again (``store.leases.held()``), so a
   lease taken after planning still protects its session (counted ``leased``);
3. ``store.sessions.delete_if_unchanged(entry.meta)`` deletes the session only
   if its inventory row still equals the planned one, in one short write
   transaction of its own; a session written after planning is kept (counted
   ``changed``). Between two entries the write lock is free, so concurrent
   appends keep flowing during a large prune.

A store error on one entry is counted ``failed`` and the sweep goes on; after
:data:`MAX_CONSECUTIVE_FAILURES` failures in a row it gives up (the store is
likely unusable) and reports ``interrupted``. A lost sweeper lease (the
``heartbeat`` raises) also ends the sweep, with the error in ``errors``.

After a sweep that deleted something, a store with a file (SQLiteStore)
checkpoints its WAL and runs an incremental vacuum so the file shrinks (see
:func:`shrink`); ``bytes_before``/``bytes_after`` report the bytes on disk of
the database file plus its WAL (0 for MemoryStore).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from retention.planner import Plan
from sqlstore.errors import StoreError
from sqlstore.ports import Store

MAX_CONSECUTIVE_FAILURES = 20
"""Failed deletions in a row after which a sweep gives up."""

MAX_REPORTED_ERRORS = 20
"""How many error messages a report keeps (the count is always exact)."""


@dataclass(frozen=True, slots=True)
class Report:
    """What a sweep did.

    ``deleted`` were removed; ``changed`` were written after planning and kept;
    ``leased`` got a lease after planning and were kept; ``failed`` raised a
    store error; ``interrupted`` is True when a stop request or repeated
    failures ended the sweep before the last entry.
    """

    deleted: int = 0
    changed: int = 0
    failed: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    seconds: float = 0.0
    leased: int = 0
    planned: int = 0
    interrupted: bool = False
    errors: tuple[str, ...] = field(default_factory=tuple)

    @property
    def skipped(self) -> int:
        """Entries kept on purpose: changed after planning or leased since."""
        return self.changed + self.leased

    @property
    def ok(self) -> bool:
        """True when nothing failed."""
        return self.failed == 0 and not self.errors

    def to_json(self) -> dict[str, Any]:
        """Return the report as JSON-compatible data."""
        return {
            "planned": self.planned,
            "deleted": self.deleted,
            "changed": self.changed,
            "leased": self.leased,
            "failed": self.failed,
            "interrupted": self.interrupted,
            "bytes_before": self.bytes_before,
            "bytes_after": self.bytes_after,
            "seconds": round(self.seconds, 3),
            "errors": list(self.errors),
        }


def store_file_size(store: object) -> int:
    """Return the bytes on disk of a store's database file plus its WAL (0 without a file)."""
    from sqlstore.sqlite import SQLiteStore

    if isinstance(store, SQLiteStore):
        from sqlstore.sqlite.maintenance import file_sizes

        main, wal = file_sizes(store.path)
        return main + wal
    return 0


def shrink(store: object) -> bool:
    """Checkpoint the WAL and return free pages to the file system; False without a file.

    Uses ``auto_vacuum=INCREMENTAL`` (``PRAGMA incremental_vacuum``), which only
    moves free pages, not the whole file as ``VACUUM`` would.

    Raises:
        StoreError: the maintenance could not run (for example ``StoreBusy``).
    """
    from sqlstore.sqlite import SQLiteStore

    if isinstance(store, SQLiteStore):
        from sqlstore.sqlite.maintenance import vacuum

        vacuum(store, incremental=True)
        return True
    return False


def sweep(
    store: Store,
    plan: Plan,
    *,
    stop: threading.Event | None = None,
    heartbeat: Callable[[], None] | None = None,
) -> Report:
    """Delete the plan's entries that are still unchanged and unleased; see the module doc.

    Args:
        store: the store the plan was made from.
        plan: the plan to carry out.
        stop: when set, the sweep ends before the next entry.
        heartbeat: called before each entry (the sweeper renews its lease there);
            a ``StoreError`` from it (a lost lease) ends the sweep, reported as
            ``interrupted`` with the error; other exceptions propagate.

    Raises:
        StoreError: the file size could not be read before the sweep started.
    """
    started = time.perf_counter()
    bytes_before = store_file_size(store)
    deleted = changed = leased = failed = 0
    in_a_row = 0
    interrupted = False
    errors: list[str] = []
    for entry in plan.entries:
        if stop is not None and stop.is_set():
            interrupted = True
            break
        if heartbeat is not None:
            try:
                heartbeat()
            except StoreError as exc:
                # The daemon's lease was lost: another sweeper may be at work now.
                interrupted = True
                errors.append(f"stopped: {exc}")
                break
        try:
            if entry.meta.id in store.leases.held():
                leased += 1
            elif store.sessions.delete_if_unchanged(entry.meta):
                deleted += 1
            else:
                changed += 1
            in_a_row = 0
        except StoreError as exc:
            failed += 1
            in_a_row += 1
            if len(errors) < MAX_REPORTED_ERRORS:
                errors.append(f"{entry.meta.id}: {exc}")
            if in_a_row >= MAX_CONSECUTIVE_FAILURES:
                interrupted = True
                errors.append(f"gave up after {in_a_row} failed deletions in a row")
                break
    if deleted:
        try:
            shrink(store)
        except StoreError as exc:
            errors.append(f"maintenance after the sweep failed: {exc}")
    try:
        bytes_after = store_file_size(store)
    except StoreError as exc:
        errors.append(f"could not read the file size: {exc}")
        bytes_after = 0
    return Report(
        deleted=deleted,
        changed=changed,
        failed=failed,
        bytes_before=bytes_before,
        bytes_after=bytes_after,
        seconds=time.perf_counter() - started,
        leased=leased,
        planned=len(plan.entries),
        interrupted=interrupted,
        errors=tuple(errors),
    )
