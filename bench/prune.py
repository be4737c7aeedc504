"""Pruning half of a large store while an agent keeps appending in another process.

Run: ``python bench/prune.py [--sessions N] [--events E] [--quick]``.

Setup (once): a template file with ``--sessions`` idle ``main`` sessions of
``--events`` ~200-byte events each; half were last modified 60 days ago, half
now. It is filled through the store's own row functions, many sessions per
transaction, and copied afresh for every repetition.

Each repetition: an appender process (its own ``SQLiteStore``, as an agent
would have) appends one event every ``--pace-ms`` to a live session and times
every call. After ``--calm`` seconds with nothing else running (the baseline
window), a prune process runs ``retention.plan`` with a 30-day ``main`` rule and
``retention.sweep`` (the work of ``sqlstore prune --older-than 30d``). Reported:
the appender's p99 during the prune ÷ its p99 in the calm window, the prune's
sessions/s (deleted ÷ plan+sweep seconds) and the prune process's peak RSS.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import resource
import shutil
import time
from datetime import timedelta
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event as MpEvent
from pathlib import Path
from typing import Any

import apsw
from harness import (
    Result,
    Row,
    emit,
    event_text,
    make_parser,
    median,
    ms,
    not_measured,
    percentile,
    rate,
    sizes,
    times,
    work_dir,
)

from sqlstore import Event, Session, SQLiteStore, snapshot
from sqlstore.events import encode_event
from sqlstore.sqlite import rows

GOAL_RATIO = 3.0
FILL_SESSIONS_PER_TRANSACTION = 2_000
OLD_AGE = timedelta(days=60)
LIVE_SESSION = "bench-live"
MEASURE = "prune half of the sessions: appender p99 during prune"
GOAL = f"≤ {GOAL_RATIO:g}x"


def fill(path: Path, sessions: int, events: int) -> None:
    """Create the template store: ``sessions`` sessions of ``events`` events, half old."""
    now_ns = time.time_ns()
    old_ns = now_ns - int(OLD_AGE.total_seconds() * 1e9)
    bodies = [
        encode_event(Event("message", i, 1, event_text(i), "run-0001")) for i in range(events)
    ]
    with SQLiteStore(path, durability="normal") as store:
        done = 0
        while done < sessions:
            chunk = range(done, min(sessions, done + FILL_SESSIONS_PER_TRANSACTION))

            def op(conn: apsw.Connection, chunk: range = chunk) -> None:
                for n in chunk:
                    sid = f"bench-{n:07d}"
                    stamp = old_ns if n % 2 == 0 else now_ns
                    for body in bodies:
                        rows.append_record(
                            conn, sid, is_gap=False, event_type="message", body=body, now_ns=stamp
                        )
                    session = Session.new(sid)
                    rows.put_snapshot(conn, session, snapshot.encode(session), stamp)

            store.db.write(op)
            done = chunk.stop
        store.sessions.create(Session.new(LIVE_SESSION))


def appender(path: str, pace_s: float, ready: Queue[str], stop: MpEvent, out: Queue[Any]) -> None:
    """Append one event per ``pace_s`` until ``stop``; report (start, latency) of each call."""
    samples: list[tuple[float, float]] = []
    errors = 0
    with SQLiteStore(path) as store:
        store.events.append_event(LIVE_SESSION, Event("start"))
        ready.put("ready")
        i = 0
        while not stop.is_set():
            before = time.monotonic()
            try:
                store.events.append_event(
                    LIVE_SESSION, Event("message", i, 1, event_text(i), "run-0001")
                )
            except Exception:  # counted and reported: the bench must finish to say so
                errors += 1
            after = time.monotonic()
            samples.append((before, after - before))
            i += 1
            time.sleep(max(0.0, pace_s - (after - before)))
    out.put({"samples": samples, "errors": errors})


def pruner(path: str, out: Queue[Any]) -> None:
    """Plan and sweep with a 30-day main rule; report counts, seconds and peak RSS."""
    import retention

    started = time.perf_counter()
    with SQLiteStore(path) as store:
        policy = retention.Policy(
            main=retention.Rule(max_age=timedelta(days=30)), acknowledge_main_deletion=True
        )
        plan = retention.plan(store, policy)
        planned_s = time.perf_counter() - started
        report = retention.sweep(store, plan)
    out.put(
        {
            "planned": len(plan.entries),
            "plan_s": planned_s,
            "deleted": report.deleted,
            "failed": report.failed,
            "changed": report.changed,
            "sweep_s": report.seconds,
            "total_s": time.perf_counter() - started,
            "bytes_before": report.bytes_before,
            "bytes_after": report.bytes_after,
            "rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        }
    )


def fresh_copy(template: Path, path: Path) -> Path:
    """Replace ``path`` (and its -wal/-shm) with a private copy of ``template``; return it."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(template, path)
    os.chmod(path, 0o600)
    return path


def one_rep(template: Path, directory: Path, pace_s: float, calm_s: float) -> dict[str, Any]:
    """Copy the template, run the appender and the prune, return the figures."""
    path = fresh_copy(template, directory / "prune.db")
    ctx = mp.get_context("spawn")
    ready: Queue[str] = ctx.Queue()
    out: Queue[Any] = ctx.Queue()
    stop = ctx.Event()
    writer = ctx.Process(target=appender, args=(str(path), pace_s, ready, stop, out))
    writer.start()
    ready.get(timeout=120)
    time.sleep(calm_s)
    prune_out: Queue[Any] = ctx.Queue()
    prune = ctx.Process(target=pruner, args=(str(path), prune_out))
    began = time.monotonic()
    prune.start()
    report = prune_out.get(timeout=3600)
    prune.join()
    ended = time.monotonic()
    time.sleep(min(calm_s, 1.0))
    stop.set()
    appended = out.get(timeout=120)
    writer.join()
    samples = appended["samples"]
    calm = [lat for at, lat in samples if at < began]
    during = [lat for at, lat in samples if began <= at <= ended]
    return {
        **report,
        "calm_p99_s": percentile(calm, 99),
        "during_p99_s": percentile(during, 99),
        "during_max_s": max(during, default=0.0),
        "calm_calls": len(calm),
        "during_calls": len(during),
        "appender_errors": appended["errors"],
        "sessions_per_s": report["deleted"] / report["total_s"] if report["total_s"] else 0.0,
    }


def main() -> None:
    """Measure, print and (with --json) write the result."""
    parser = make_parser(__doc__ or "")
    parser.add_argument("--sessions", type=int, default=None, help="sessions in the store")
    parser.add_argument("--events", type=int, default=None, help="events per session")
    parser.add_argument("--pace-ms", type=float, default=None, help="appender pause (ms)")
    parser.add_argument("--calm", type=float, default=None, help="seconds before the prune")
    args = parser.parse_args()
    size = sizes(
        args,
        full={"sessions": 200_000, "events": 10, "pace_ms": 5.0, "calm": 4.0},
        quick={"sessions": 40, "events": 2, "pace_ms": 5.0, "calm": 0.3},
    )
    result = Result("prune", f"prune {size['sessions'] // 2:,} of {size['sessions']:,}", size)
    try:
        import retention

        missing = [
            name for name in ("plan", "sweep", "Policy", "Rule") if not hasattr(retention, name)
        ]
    except ImportError as exc:
        missing = [f"retention ({exc})"]
    if missing:
        result.rows.append(not_measured(MEASURE, GOAL, f"retention API missing: {missing}"))
        emit(result, args)
        return
    runs: list[dict[str, Any]] = []
    with work_dir(args, "prune") as directory:
        template = directory / "template.db"
        started = time.perf_counter()
        fill(template, size["sessions"], size["events"])
        result.notes.append(f"template filled in {time.perf_counter() - started:.1f} s")
        for _ in range(size["reps"]):
            runs.append(one_rep(template, directory, size["pace_ms"] / 1000, size["calm"]))
    ratios = [
        r["during_p99_s"] / r["calm_p99_s"] if r["calm_p99_s"] else float("inf") for r in runs
    ]
    ratio = median(ratios)
    deleted = median([r["deleted"] for r in runs])
    result.rows.append(
        Row(
            MEASURE.replace("half of the sessions", f"{int(deleted):,} of {size['sessions']:,}"),
            ms(median([r["during_p99_s"] for r in runs])),
            f"{ms(median([r['calm_p99_s'] for r in runs]))} p99 with no prune running",
            times(ratio),
            GOAL,
            ratio <= GOAL_RATIO,
            note=(
                f"prune {rate(median([r['sessions_per_s'] for r in runs]))} sessions "
                f"(plan {median([r['plan_s'] for r in runs]):.1f} s + sweep "
                f"{median([r['sweep_s'] for r in runs]):.1f} s); prune process peak RSS "
                f"{median([r['rss_kib'] for r in runs]) / 1024:.0f} MiB; worst append during "
                f"prune {ms(median([r['during_max_s'] for r in runs]))}; appender errors "
                f"{sum(r['appender_errors'] for r in runs)}; file "
                f"{median([r['bytes_before'] for r in runs]) / 1e6:.0f} MB before, "
                f"{median([r['bytes_after'] for r in runs]) / 1e6:.0f} MB after"
            ),
        )
    )
    result.rows.append(
        Row(
            f"prune {int(deleted):,} of {size['sessions']:,}: sessions/s and peak RSS",
            f"{rate(median([r['sessions_per_s'] for r in runs]))}, "
            f"{median([r['rss_kib'] for r in runs]) / 1024:.0f} MiB",
            "—",
            "—",
            "report",
            None,
            note="sessions deleted ÷ (plan + sweep) seconds; RSS of the prune process",
        )
    )
    result.details = {"runs": runs, "ratios": ratios}
    emit(result, args)


if __name__ == "__main__":
    main()
