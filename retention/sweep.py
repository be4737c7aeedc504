"""The sweep: delete what a plan selected, safely, without stalling other writers.

Safety, per entry, in this order:

1. a ``stop`` event that is set ends the sweep before the next entry is taken
   (the deletions done so far stay done; the rest are left for the next sweep);
2. the ids with a live lease are read again (``store.leases.held()``), so a
   lease taken after planning still protects its session (counted ``leased``);
3. ``store.sessions.delete_if_unchanged(entry.meta)`` deletes the session only
   if its inventory row still equals the planned one and it has no live lease,
   checked in the same write transaction as the delete; a session written after
   planning is kept (counted ``changed``).

A store error on one entry is counted ``failed`` and the sweep goes on; after
:data:`MAX_CONSECUTIVE_FAILURES` failures in a row it gives up (the store is
likely unusable) and reports ``interrupted``. A lost sweeper lease (the
``heartbeat`` raises) also ends the sweep, with the error in ``errors``.

**Sharing a SQLite file during a large prune.** One SQLite file has one write
lock for every process. A writer that finds it taken sleeps in its busy handler
(:class:`~sqlstore.sqlite.connection.BusyWait`: 0.5 to 4 ms) and tries again.
A sweep that deleted one entry per transaction back to back took the lock again
microseconds after each commit, so another process's append kept waking up to a
taken lock (its p99 grew by more than an order of magnitude during a large prune;
the figures are in docs/benchmarks.md);
every deletion also paid a commit, and the WAL filled up so fast that the
automatic checkpoint (run by whichever connection commits past 1,000 WAL pages,
often the agent's) kept landing in the agents' appends. So a sweep of a
store with ``housekeeping`` (:class:`~sqlstore.ports.Housekeeping`; of the
shipped backends, :class:`~sqlstore.SQLiteStore`) is paced (:class:`Pacing`;
other stores delete one entry per call, as before):

The tunables and :class:`~retention.pacing.Pacing` are in :mod:`retention.pacing`.

* **Batches on a budget.** Up to ``SWEEP_BATCH_ENTRIES`` (32) entries are taken
  (``stop`` checked and ``heartbeat`` called before each), then deleted with
  ``delete_many_if_unchanged``: each entry checked and deleted exactly as by
  ``delete_if_unchanged``, in one transaction that takes no new entry once it
  has held the write lock for ``SWEEP_HOLD_BUDGET_MS`` (0.25 ms; at least one
  entry; the rest go in the next transaction). Entries already taken are finished
  even when ``stop`` is set or the lease is lost meanwhile: a stop request ends
  the sweep within one batch.
* **Pauses on a duty cycle.** After each transaction the sweep sleeps
  ``max(SWEEP_PAUSE_MIN_MS, work * (1 - d) / d)`` with ``d = SWEEP_DUTY_CYCLE``
  (2.5 ms and 0.25: the pause is at least three times the work), where
  ``work`` is the time it just spent (lease read, transaction, checkpoint). The
  sweep thus works at most a quarter of the time, also on a slow or busy
  machine, and the pause is longer than the next busy-handler sleep of any
  writer that started waiting during the work (the arithmetic is in
  :mod:`retention.pacing`), so that writer tries again while the lock is free
  and gets it: such an append waits for one transaction (under 1 ms), not for
  a run of them (one already waiting on another process may miss a pause).
  The price is prune throughput, bounded by the duty cycle.
* **The sweep checkpoints its own WAL.** Every ``SWEEP_CHECKPOINT_EVERY`` (64)
  deletions it runs a passive checkpoint (which blocks no one,
  :func:`sqlstore.sqlite.maintenance.checkpoint`) and counts it as work, so the
  WAL never grows to the automatic checkpoint threshold and the copying is
  paced like the deletions instead of landing in another process's commit.
* **Deletions are not fsynced one by one.** A store opened with
  ``durability="full"`` deletes through a second handle on the same file opened
  with ``durability="normal"`` (:func:`~retention.pacing.deletion_store`;
  ``Pacing.durable_deletes`` turns this off), so the write lock is not held
  while the disk syncs. This is safe: the WAL is only ever durable as a
  prefix, so a power loss can undo the newest deletions but never leave a
  half-deleted session or reorder commits; an undone deletion brings back a
  session exactly as it was planned, which the next sweep deletes again. Any
  later durable commit or checkpoint on the file makes every deletion before
  it durable too: an agent's append, the sweep's own checkpoints (SQLite syncs
  the WAL before copying it), the WAL checkpoint of :func:`shrink` at the end
  of the sweep, and the history row (``retention_runs``) that
  :func:`~retention.daemon.sweep_round` writes through the caller's durable
  handle. Before it returns the sweep fsyncs the WAL itself (a checkpoint that
  cannot copy everything, say while a reader holds an old snapshot, does not
  sync it), so the deletions a finished sweep reports are on disk — also when
  the caller's own store was opened ``durability="normal"`` (found by the
  power-cut battery, ``tests/reliability/test_powercut.py``).

After a sweep that deleted something, a store with a file (SQLiteStore)
checkpoints its WAL and runs an incremental vacuum so the file shrinks, in
short paced steps too (see :func:`shrink`); ``bytes_before``/``bytes_after``
report the bytes on disk of the database file plus its WAL (0 for MemoryStore).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlstore.errors import PruneUnsupported, StoreError
from sqlstore.ports import Housekeeping, Store, housekeeping_of

from .pacing import Pacing, deletion_store
from .planner import Plan, PlanEntry

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
    """Return the bytes on disk of a store (database file plus WAL; 0 without housekeeping)."""
    housekeeping = housekeeping_of(store)
    return 0 if housekeeping is None else housekeeping.file_size()


def shrink(store: object, pacing: Pacing | None = None) -> bool:
    """Checkpoint the WAL and return free pages to the file system; False without a file.

    Uses the store's :class:`~sqlstore.ports.Housekeeping` (for SQLite,
    ``auto_vacuum=INCREMENTAL``: ``PRAGMA incremental_vacuum`` only moves free
    pages, not the whole file as ``VACUUM`` would). With ``pacing`` (as
    :func:`sweep` does) it moves ``pacing.vacuum_step_pages`` pages per write
    transaction and pauses after each step as after a deletion transaction, so
    other writers get the lock in between.

    Raises:
        StoreError: the maintenance could not run (for example ``StoreBusy``).
    """
    housekeeping = housekeeping_of(store)
    if housekeeping is None:
        return False
    if pacing is None:
        housekeeping.shrink()
    else:
        paced = pacing

        def pause(step_s: float) -> None:
            paced.sleep(paced.pause_after(step_s))

        housekeeping.shrink(step_pages=paced.vacuum_step_pages, between_steps=pause)
    return True


@dataclass(slots=True)
class _Tally:
    """The counters of a sweep in progress."""

    deleted: int = 0
    changed: int = 0
    leased: int = 0
    failed: int = 0
    in_a_row: int = 0
    interrupted: bool = False
    errors: list[str] = field(default_factory=list)

    def fail(self, what: str, exc: StoreError) -> bool:
        """Count a failed entry; return True when the sweep should give up."""
        self.failed += 1
        self.in_a_row += 1
        if len(self.errors) < MAX_REPORTED_ERRORS:
            self.errors.append(f"{what}: {exc}")
        if self.in_a_row >= MAX_CONSECUTIVE_FAILURES:
            self.interrupted = True
            self.errors.append(f"gave up after {self.in_a_row} failed deletions in a row")
            return True
        return False


def _start_entry(
    tally: _Tally, stop: threading.Event | None, heartbeat: Callable[[], None] | None
) -> bool:
    """Check ``stop`` and call ``heartbeat`` before an entry; False ends the sweep."""
    if stop is not None and stop.is_set():
        tally.interrupted = True
        return False
    if heartbeat is not None:
        try:
            heartbeat()
        except StoreError as exc:
            # The daemon's lease was lost: another sweeper may be at work now.
            tally.interrupted = True
            tally.errors.append(f"stopped: {exc}")
            return False
    return True


def _delete_one(store: Store, entry: PlanEntry, tally: _Tally) -> bool:
    """Delete one entry in a transaction of its own; return False when the sweep gives up."""
    try:
        if entry.meta.id in store.leases.held():
            tally.leased += 1
        elif store.sessions.delete_if_unchanged(entry.meta):
            tally.deleted += 1
        else:
            tally.changed += 1
        tally.in_a_row = 0
    except StoreError as exc:
        return not tally.fail(entry.meta.id, exc)
    return True


def _sweep_each(
    store: Store,
    plan: Plan,
    tally: _Tally,
    stop: threading.Event | None,
    heartbeat: Callable[[], None] | None,
) -> None:
    """One transaction per entry, no pauses (stores without a file lock to share)."""
    for entry in plan.entries:
        if not _start_entry(tally, stop, heartbeat) or not _delete_one(store, entry, tally):
            return


def _checkpoint(housekeeping: Housekeeping, tally: _Tally) -> None:
    """Copy the WAL into the file without blocking anyone; a failure is reported once."""
    try:
        housekeeping.checkpoint()
    except StoreError as exc:
        message = f"checkpoint during the sweep failed: {exc}"
        if message not in tally.errors and len(tally.errors) < MAX_REPORTED_ERRORS:
            tally.errors.append(message)


def _sweep_paced(
    store: Store,
    housekeeping: Housekeeping,
    plan: Plan,
    tally: _Tally,
    stop: threading.Event | None,
    heartbeat: Callable[[], None] | None,
    pacing: Pacing,
) -> None:
    """Sweep through :func:`deletion_store`, make the deletions durable, then close it."""
    deleter = deletion_store(housekeeping, pacing)
    try:
        _sweep_batches(store, deleter or housekeeping, plan, tally, stop, heartbeat, pacing)
    finally:
        if tally.deleted:
            # Also when the store's own handle deleted (a SQLite store opened
            # "normal"): its commits are not synced either, and the deletions
            # the sweep reports must survive a power loss too.
            try:
                (deleter or housekeeping).sync()  # every reported deletion is on disk
            except StoreError as exc:
                tally.errors.append(str(exc))
        if deleter is not None:
            deleter.close()


def _sweep_batches(
    store: Store,
    deleter: Housekeeping,
    plan: Plan,
    tally: _Tally,
    stop: threading.Event | None,
    heartbeat: Callable[[], None] | None,
    pacing: Pacing,
) -> None:
    """Batched, budgeted deletion transactions with pauses and checkpoints (module doc)."""
    entries = plan.entries
    upcoming = 0  # index of the next entry not yet in a batch
    since_checkpoint = 0
    while upcoming < len(entries) and not tally.interrupted:
        batch: list[PlanEntry] = []
        while upcoming < len(entries) and len(batch) < pacing.batch_entries:
            if not _start_entry(tally, stop, heartbeat):
                break
            batch.append(entries[upcoming])
            upcoming += 1
        while batch:
            began = pacing.timer()
            try:
                held = store.leases.held()
                todo = [entry for entry in batch if entry.meta.id not in held]
                outcomes = deleter.delete_many_if_unchanged(
                    [entry.meta for entry in todo],
                    budget_s=pacing.hold_budget_s,
                    timer=pacing.timer,
                )
            except StoreError:
                # Find out which entry fails (or whether all do) one by one.
                for entry in batch:
                    if not _delete_one(store, entry, tally):
                        return
                break
            done = sum(outcomes)
            tally.leased += len(batch) - len(todo)
            tally.deleted += done
            tally.changed += len(outcomes) - done
            tally.in_a_row = 0
            batch = todo[len(outcomes) :]
            since_checkpoint += done
            if batch or (upcoming < len(entries) and not tally.interrupted):
                if pacing.checkpoint_every and since_checkpoint >= pacing.checkpoint_every:
                    _checkpoint(deleter, tally)
                    since_checkpoint = 0
                pacing.sleep(pacing.pause_after(pacing.timer() - began))


def sweep(
    store: Store,
    plan: Plan,
    *,
    stop: threading.Event | None = None,
    heartbeat: Callable[[], None] | None = None,
    pacing: Pacing | None = None,
) -> Report:
    """Delete the plan's entries that are still unchanged and unleased; see the module doc.

    Args:
        store: the store the plan was made from.
        plan: the plan to carry out.
        stop: when set, the sweep ends before the next entry is taken into a
            batch (the entries already taken still complete).
        heartbeat: called before each entry is taken (the sweeper renews its
            lease there); a ``StoreError`` from it (a lost lease) ends the sweep at
            once, reported as ``interrupted`` with the error; other exceptions
            propagate.
        pacing: how a SQLite sweep shares the lock and the disk (default
            :class:`Pacing`); ignored by stores without a file.

    Raises:
        PruneUnsupported: the store's backend cannot delete conditionally (its
            ``sessions`` has no ``delete_if_unchanged``); nothing was deleted.
        StoreError: the file size could not be read before the sweep started.
    """
    if not callable(getattr(store.sessions, "delete_if_unchanged", None)):
        raise PruneUnsupported(
            f"{type(store).__name__} cannot delete sessions safely "
            "(its sessions have no delete_if_unchanged)",
            hint="Retention needs a backend that passes ConditionalPruneSuite "
            "(sqlstore.conformance); SQLite, Redis and memory stores do.",
        )
    started = time.perf_counter()
    bytes_before = store_file_size(store)
    tally = _Tally()
    paced: Pacing | None = None
    housekeeping = housekeeping_of(store)
    if housekeeping is not None:
        paced = pacing or Pacing()
        _sweep_paced(store, housekeeping, plan, tally, stop, heartbeat, paced)
    else:
        _sweep_each(store, plan, tally, stop, heartbeat)
    errors = tally.errors
    if tally.deleted:
        try:
            shrink(store, paced)
        except StoreError as exc:
            errors.append(f"maintenance after the sweep failed: {exc}")
    try:
        bytes_after = store_file_size(store)
    except StoreError as exc:
        errors.append(f"could not read the file size: {exc}")
        bytes_after = 0
    return Report(
        deleted=tally.deleted,
        changed=tally.changed,
        failed=tally.failed,
        bytes_before=bytes_before,
        bytes_after=bytes_after,
        seconds=time.perf_counter() - started,
        leased=tally.leased,
        planned=len(plan.entries),
        interrupted=tally.interrupted,
        errors=tuple(errors),
    )
