"""How a sweep shares a file's write lock and the disk with other writers (SQLite).

The reasons and the durability argument are in the :mod:`retention.sweep` module
doc and in docs/retention.md ("Large prunes next to running agents"); this
module holds the tunables, :class:`Pacing`, and the handle deletions go through.

Why the pause rule works. A writer that finds the lock taken sleeps in its busy
handler (:class:`~sqlstore.sqlite.connection.BusyWait`) and tries again: its
first sleep is 0.5 ms, the n-th at most ``min(0.5 ms * 2**n, 4 ms)``, and each
at least 0.5 ms, so a writer that has waited ``w`` has made at most ``w / 0.5 ms``
tries and sleeps at most ``min(0.5 ms * 2**(w / 0.5 ms), 4 ms)`` before its next
one. The writer started waiting while the sweep worked, so ``w`` is at most the
sweep's ``work``. A pause of ``max(2.5 ms, 3 * work)`` is longer than that sleep
for every ``work`` (2 ms at most until 1.5 ms of work, then 4 ms against a pause
of 4.5 ms or more), so the writer's next try falls inside the pause and gets the
lock. That holds for a writer that started waiting on the sweep; one that was
already waiting on another process may sleep up to 4 ms and miss a 2.5 ms
pause, so "one transaction at most" is the rule for the common case, not a bound.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from sqlstore.ports import Housekeeping

SWEEP_HOLD_BUDGET_MS = 0.25
"""A deletion transaction takes no new entry once it has held the write lock this long."""

SWEEP_PAUSE_MIN_MS = 2.5
"""Shortest pause after a deletion transaction (see the module doc for why it suffices)."""

SWEEP_DUTY_CYCLE = 0.25
"""Largest share of the time the sweep works (holds the write lock or checkpoints)."""

SWEEP_BATCH_ENTRIES = 32
"""Entries taken (``stop`` checked, ``heartbeat`` called) before deleting them."""

SWEEP_CHECKPOINT_EVERY = 64
"""Deletions between two passive WAL checkpoints run by the sweep itself."""

SWEEP_VACUUM_STEP_PAGES = 64
"""Free pages the incremental vacuum after a sweep moves per write transaction."""


@dataclass(frozen=True, slots=True)
class Pacing:
    """How a sweep of a SQLite file shares the write lock and the disk (see the module doc).

    ``sleep`` and ``timer`` are injectable so tests can watch the mechanism
    without waiting; every other field has the default of the module constant
    named after it.
    """

    hold_budget_s: float = SWEEP_HOLD_BUDGET_MS / 1000
    pause_min_s: float = SWEEP_PAUSE_MIN_MS / 1000
    duty_cycle: float = SWEEP_DUTY_CYCLE
    batch_entries: int = SWEEP_BATCH_ENTRIES
    checkpoint_every: int = SWEEP_CHECKPOINT_EVERY
    vacuum_step_pages: int = SWEEP_VACUUM_STEP_PAGES
    durable_deletes: bool = False
    sleep: Callable[[float], None] = time.sleep
    timer: Callable[[], float] = time.monotonic

    def __post_init__(self) -> None:
        if not 0 < self.duty_cycle <= 1:
            raise ValueError("duty_cycle must be in (0, 1]")
        if self.batch_entries < 1 or self.vacuum_step_pages < 1:
            raise ValueError("batch_entries and vacuum_step_pages must be at least 1")
        if self.hold_budget_s < 0 or self.pause_min_s < 0 or self.checkpoint_every < 0:
            raise ValueError("hold_budget_s, pause_min_s and checkpoint_every must be >= 0")

    def pause_after(self, worked_s: float) -> float:
        """Return the pause after ``worked_s`` s of work: work takes ``duty_cycle`` of the time."""
        return max(self.pause_min_s, worked_s * (1 - self.duty_cycle) / self.duty_cycle)


def deletion_store(housekeeping: Housekeeping, pacing: Pacing) -> Housekeeping | None:
    """Open the handle a paced sweep deletes through; None means the store's own.

    Unless ``pacing.durable_deletes``, a store whose commits wait for the disk
    (SQLite with ``durability="full"``) gives a second handle on the same data
    whose commits do not (:meth:`~sqlstore.ports.Housekeeping.unsynced`; see the
    module doc of :mod:`retention.sweep`). The caller syncs and closes it.
    """
    if pacing.durable_deletes:
        return None
    return housekeeping.unsynced()
