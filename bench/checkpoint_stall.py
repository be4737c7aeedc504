"""Sweep and incremental vacuum beside an open reader, while an agent appends.

Run: ``python bench/checkpoint_stall.py [--sessions N] [--events E] [--quick]``.

The template is the one of ``bench/prune.py``: ``--sessions`` idle ``main``
sessions of ``--events`` ~200-byte events, half last written 60 days ago. Each
repetition copies it, starts an appender process (one durable ``append_event``
every ``--pace-ms``, each call timed, errors counted) and a reader process that
opens a read transaction and keeps it open (as a long listing, a ``backup`` or
the viewer does), waits ``--calm`` seconds, then in this process prunes the old
half (``retention.plan`` + ``retention.sweep``) and runs ``vacuum(incremental=True)``.

Two variants run in the same repetition, on fresh copies:

* **ours**: exactly that (the closing checkpoints give up after 20 ms when a
  reader is in the way, ``sqlstore.sqlite.maintenance.truncate_wal``);
* **unbounded TRUNCATE**: the same, then one ``PRAGMA wal_checkpoint(TRUNCATE)``
  with the store's normal busy handler (5 s) — the closing checkpoint of the
  code before issue 20 item 8, which held the write lock waiting for the reader.

Reported: the appender's worst call during the maintenance in each variant,
their ratio, and the ``StoreBusy`` errors the appender saw (goal: none).
"""

from __future__ import annotations

import multiprocessing as mp
import time
from datetime import timedelta
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event as MpEvent
from pathlib import Path
from typing import Any

import apsw
from harness import Result, Row, emit, make_parser, median, ms, not_measured, sizes, work_dir
from prune import appender, fill, fresh_copy

from sqlstore import SQLiteStore

MEASURE = "sweep + incremental vacuum beside an open reader: appender's worst call"
GOAL = "no StoreBusy"


def reader(path: str, ready: Queue[str], stop: MpEvent) -> None:
    """Open a read transaction and hold it until ``stop``."""
    conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
    conn.execute("BEGIN")
    conn.execute("SELECT count(*) FROM sessions").fetchall()
    ready.put("reading")
    stop.wait(3600)
    conn.execute("COMMIT")
    conn.close()


def maintain(path: Path, unbounded: bool) -> float:
    """Prune the old half and vacuum incrementally (then, if asked, TRUNCATE unbounded)."""
    import retention
    from sqlstore.sqlite.maintenance import vacuum

    started = time.monotonic()
    with SQLiteStore(path) as store:
        policy = retention.Policy(
            main=retention.Rule(max_age=timedelta(days=30)), acknowledge_main_deletion=True
        )
        retention.sweep(store, retention.plan(store, policy))
        vacuum(store, incremental=True)
        if unbounded:
            with store.db.reader() as conn:
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    return time.monotonic() - started


def one_variant(
    template: Path, directory: Path, pace_s: float, calm_s: float, unbounded: bool
) -> dict[str, Any]:
    """Copy the template, run appender + reader + maintenance, return the appender's figures."""
    path = fresh_copy(template, directory / "stall.db")
    ctx = mp.get_context("spawn")
    ready: Queue[str] = ctx.Queue()
    out: Queue[Any] = ctx.Queue()
    stop_writer = ctx.Event()
    stop_reader = ctx.Event()
    writer = ctx.Process(target=appender, args=(str(path), pace_s, ready, stop_writer, out))
    writer.start()
    ready.get(timeout=120)
    time.sleep(calm_s / 2)
    held = ctx.Process(target=reader, args=(str(path), ready, stop_reader))
    held.start()
    ready.get(timeout=120)
    time.sleep(calm_s / 2)
    began = time.monotonic()
    seconds = maintain(path, unbounded)
    ended = time.monotonic()
    stop_reader.set()
    held.join()
    stop_writer.set()
    appended = out.get(timeout=120)
    writer.join()
    during = [lat for at, lat in appended["samples"] if began <= at <= ended]
    return {
        "maintenance_s": seconds,
        "during_max_s": max(during, default=0.0),
        "during_calls": len(during),
        "errors": appended["errors"],
    }


def main() -> None:
    """Measure, print and (with --json) write the result."""
    parser = make_parser(__doc__ or "")
    parser.add_argument("--sessions", type=int, default=None, help="sessions in the store")
    parser.add_argument("--events", type=int, default=None, help="events per session")
    parser.add_argument("--pace-ms", type=float, default=None, help="appender pause (ms)")
    parser.add_argument("--calm", type=float, default=None, help="seconds before maintenance")
    args = parser.parse_args()
    size = sizes(
        args,
        full={"sessions": 1_000, "events": 10, "pace_ms": 5.0, "calm": 1.0},
        quick={"sessions": 40, "events": 2, "pace_ms": 5.0, "calm": 0.3},
    )
    result = Result("checkpoint_stall", "sweep + vacuum beside an open reader", size)
    try:
        from sqlstore.sqlite.maintenance import truncate_wal  # noqa: F401  (the fix)
    except ImportError:
        result.rows.append(not_measured(MEASURE, GOAL, "truncate_wal is missing"))
        emit(result, args)
        return
    ours: list[dict[str, Any]] = []
    old: list[dict[str, Any]] = []
    with work_dir(args, "stall") as directory:
        template = directory / "template.db"
        fill(template, size["sessions"], size["events"])
        for _ in range(size["reps"]):
            pace, calm = size["pace_ms"] / 1000, size["calm"]
            ours.append(one_variant(template, directory, pace, calm, unbounded=False))
            old.append(one_variant(template, directory, pace, calm, unbounded=True))
    worst = median([r["during_max_s"] for r in ours])
    worst_old = median([r["during_max_s"] for r in old])
    errors = sum(r["errors"] for r in ours)
    errors_old = sum(r["errors"] for r in old)
    result.rows.append(
        Row(
            MEASURE,
            f"{ms(worst)}, {errors} errors",
            f"{ms(worst_old)}, {errors_old} errors with an unbounded closing TRUNCATE",
            f"{worst / worst_old:.3f}x" if worst_old else "—",
            GOAL,
            errors == 0,
            note=(
                f"maintenance {median([r['maintenance_s'] for r in ours]):.1f} s "
                f"(unbounded: {median([r['maintenance_s'] for r in old]):.1f} s); "
                f"{size['sessions'] // 2:,} sessions pruned per variant"
            ),
        )
    )
    result.details = {"ours": ours, "unbounded": old}
    emit(result, args)


if __name__ == "__main__":
    main()
