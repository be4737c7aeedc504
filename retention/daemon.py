"""The retention daemon: a foreground loop that sweeps a store on an interval.

One sweep at start, then one every ``every`` (± ``jitter``, a fraction of the
interval, so daemons started together drift apart). ``every`` of zero sweeps
once and returns. The loop ends when ``stop`` is set: a sweep in progress stops
before its next deletion, so the current transaction always completes. The CLI
sets ``stop`` from SIGTERM and SIGINT (:func:`install_stop_handlers`).

Only one sweeper works on a store at a time: each round takes the lease
:data:`DAEMON_LEASE_NAME` (renewed during the sweep, released after it); the
one-shot commands take the same lease. A daemon that finds the lease held skips
the round and logs so. Every sweep is
recorded in the retention history and logged as one line; a failed sweep is
logged and recorded too, and the loop goes on.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import FrameType
from typing import Literal

from sqlstore import clock
from sqlstore.errors import LeaseHeld, StoreError
from sqlstore.inventory import Lease
from sqlstore.ports import Store

from .history import record_run, run_record
from .planner import Plan, plan
from .policy import Policy
from .sweep import Report, sweep

DAEMON_LEASE_NAME = "sqlstore:retention-daemon"
"""The lease a daemon holds while it sweeps (one sweeper per store)."""

DAEMON_LEASE_TTL = timedelta(minutes=5)
"""Lease lifetime; renewed every third of it while a sweep runs."""

DEFAULT_JITTER = 0.1
"""Default spread of the interval: ± 10 %."""

Outcome = Literal["swept", "skipped", "failed"]
Log = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class RoundResult:
    """What one daemon round did: swept (with its report), skipped (lease held), or failed."""

    outcome: Outcome
    report: Report | None = None
    error: str = ""


def daemon_owner() -> str:
    """Return a lease owner name unique to this process: ``host:pid:random``."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def format_report(report: Report, policy: Policy) -> str:
    """Return the one log line of a sweep."""
    return (
        f"retention sweep: planned={report.planned} deleted={report.deleted} "
        f"changed={report.changed} leased={report.leased} failed={report.failed} "
        f"bytes={report.bytes_before}->{report.bytes_after} seconds={report.seconds:.3f} "
        f"policy={policy.policy_hash[:12]}" + (" interrupted" if report.interrupted else "")
    )


class _Renewer:
    """Renews a lease once a third of its TTL has passed (monotonic time)."""

    def __init__(self, store: Store, lease: Lease, ttl: timedelta) -> None:
        self.store = store
        self.lease = lease
        self.ttl = ttl
        self.last = time.monotonic()

    def __call__(self) -> None:
        if time.monotonic() - self.last >= self.ttl.total_seconds() / 3:
            self.lease = self.store.leases.renew(self.lease, self.ttl)
            self.last = time.monotonic()


def sweep_round(
    store: Store,
    policy: Policy,
    *,
    owner: str,
    stop: threading.Event | None = None,
    log: Log | None = None,
    lease_ttl: timedelta = DAEMON_LEASE_TTL,
    planned: Plan | None = None,
) -> RoundResult:
    """Run one sweep under the sweeper lease: take it, plan, sweep, record, log, release.

    The daemon, ``sqlstore retention run`` and ``sqlstore prune`` all sweep
    through here, so at most one of them sweeps a store at a time. ``planned``
    sweeps a plan made (and shown) earlier instead of planning again; the sweep
    is safe against anything that changed since.

    Returns:
        ``skipped`` when another sweeper holds the lease, else ``swept`` with the report.

    Raises:
        Exception: whatever planning, sweeping or recording raised; the failure is
            recorded in the history (when the store still can) and the lease released.
    """
    emit: Log = log if log is not None else _silent
    started = clock.now()
    try:
        lease = store.leases.acquire(DAEMON_LEASE_NAME, owner, lease_ttl)
    except LeaseHeld as exc:
        emit(f"retention sweep skipped: another sweeper holds this store ({exc})")
        return RoundResult("skipped")
    renewer = _Renewer(store, lease, lease_ttl)
    try:
        try:
            the_plan = planned if planned is not None else plan(store, policy)
            report = sweep(store, the_plan, stop=stop, heartbeat=renewer)
        except Exception as exc:
            _record_failure(store, policy, started, exc, emit)
            raise
        record_run(store, run_record(policy.policy_hash, started, report))
        emit(format_report(report, policy))
        return RoundResult("swept", report)
    finally:
        try:
            store.leases.release(renewer.lease)
        except StoreError as exc:
            emit(f"retention: could not release the sweeper lease ({exc}); it expires by itself")


def _silent(_line: str) -> None:
    return None


def run_daemon(
    store: Store | Callable[[], Store],
    policy: Policy,
    every: timedelta,
    *,
    stop: threading.Event,
    jitter: float = DEFAULT_JITTER,
    log: Log | None = None,
    owner: str | None = None,
    lease_ttl: timedelta = DAEMON_LEASE_TTL,
    rng: random.Random | None = None,
) -> int:
    """Sweep ``store`` now and then every ``every`` until ``stop`` is set; return the rounds run.

    Args:
        store: an open store, or a factory opening one per round (closed after it,
            so a round that broke its connection does not break the next).
        policy: what to delete.
        every: the interval; zero (or less) sweeps once and returns.
        stop: set it (e.g. from a signal handler) to end the loop after the
            current deletion.
        jitter: the interval varies by ± this fraction (0 <= jitter < 1).
        log: where the one line per round goes (default: nowhere).
        owner: the lease owner name (default: :func:`daemon_owner`).
        lease_ttl: lifetime of the daemon lease.
        rng: random source of the jitter (tests pass a seeded one).

    Raises:
        ValueError: ``jitter`` is outside [0, 1).
    """
    if not 0 <= jitter < 1:
        raise ValueError("jitter must be in [0, 1)")
    emit: Log = log if log is not None else _silent
    me = owner if owner is not None else daemon_owner()
    source = rng if rng is not None else random.Random()
    rounds = 0
    while not stop.is_set():
        rounds += 1
        _one_round(store, policy, owner=me, stop=stop, log=emit, lease_ttl=lease_ttl)
        seconds = every.total_seconds()
        if seconds <= 0:
            break
        stop.wait(seconds * (1 + source.uniform(-jitter, jitter)))
    return rounds


def _one_round(
    store: Store | Callable[[], Store],
    policy: Policy,
    *,
    owner: str,
    stop: threading.Event,
    log: Log,
    lease_ttl: timedelta,
) -> RoundResult:
    opened: AbstractContextManager[Store]
    try:
        opened = nullcontext(store) if isinstance(store, Store) else store()
        with opened as current:
            return sweep_round(
                current, policy, owner=owner, stop=stop, log=log, lease_ttl=lease_ttl
            )
    # A daemon must outlive one bad round (a locked file, a full disk, a bug in a
    # rarely-hit path): sweep_round recorded the failure, we log it, and the next
    # round starts on time. SPEC §7 asks for exactly this; STYLE allows it here only.
    except Exception as exc:
        log(f"retention sweep failed: {type(exc).__name__}: {exc}")
        return RoundResult("failed", error=f"{type(exc).__name__}: {exc}")


def _record_failure(
    store: Store, policy: Policy, started: datetime, exc: Exception, log: Log
) -> None:
    try:
        error = f"{type(exc).__name__}: {exc}"
        record_run(store, run_record(policy.policy_hash, started, None, error=error))
    except StoreError as record_exc:
        log(f"retention: could not record the failed sweep ({record_exc})")


def install_stop_handlers(stop: threading.Event) -> Callable[[], None]:
    """Make SIGTERM and SIGINT set ``stop``; return a function that restores the old handlers.

    Must be called from the main thread (a Python rule for signal handlers).
    """

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT)}

    def restore() -> None:
        for sig, old in previous.items():
            signal.signal(sig, old)

    return restore
