"""Several processes appending durably to one file, against the raw fsync loop.

Run: ``python bench/append_procs.py [--procs 4] [--seconds S] [--quick]``.

Each repetition measures the raw loop (200-byte ``write`` + ``fsync``; the mean
of one run just before and one just after, as the machine is shared), and
starts ``--procs`` processes (``multiprocessing`` spawn), each with its own
``SQLiteStore`` on the same file, appending ~200-byte events to its own session
for ``--seconds`` (all start at the same instant). Reported: total appends/s ÷
raw records/s, how many calls failed with a "locked"/busy error (they are
counted and the process goes on), and the worst single call.
"""

from __future__ import annotations

import multiprocessing as mp
import time
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event as MpEvent
from pathlib import Path
from typing import Any

from harness import (
    Result,
    Row,
    emit,
    event_text,
    make_parser,
    median,
    ms,
    percentile,
    rate,
    raw_fsync_rate,
    sizes,
    times,
    work_dir,
)

from sqlstore import Event, Session, SQLiteStore
from sqlstore.errors import StoreBusy, StoreError

GOAL_RATIO = 0.8
GOAL_STALL_S = 1.0


def appender(
    path: str, n: int, ready: Queue[int], go: MpEvent, seconds: float, out: Queue[dict[str, Any]]
) -> None:
    """Append to session ``bench-proc-<n>`` until ``seconds`` after ``go``; report counts."""
    sid = f"bench-proc-{n}"
    events = [Event("message", i, 1, event_text(i), "run-0001") for i in range(256)]
    locked = errors = count = 0
    latencies: list[float] = []
    messages: list[str] = []
    with SQLiteStore(path) as store:
        store.events.append_event(sid, events[0])  # warm-up, outside the window
        ready.put(n)
        go.wait()
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            before = time.perf_counter()
            try:
                store.events.append_event(sid, events[count & 255])
                count += 1
            except StoreError as exc:
                if isinstance(exc, StoreBusy) or "locked" in str(exc).lower():
                    locked += 1
                else:
                    errors += 1
                if len(messages) < 3:
                    messages.append(f"{type(exc).__name__}: {exc}")
            latencies.append(time.perf_counter() - before)
    out.put(
        {
            "n": n,
            "count": count,
            "locked": locked,
            "errors": errors,
            "worst_s": max(latencies, default=0.0),
            "p99_s": percentile(latencies, 99),
            "messages": messages,
        }
    )


def run_procs(directory: Path, procs: int, seconds: float, tag: str) -> dict[str, Any]:
    """Return the total rate and per-process figures of ``procs`` appending processes."""
    path = str(directory / f"procs-{tag}.db")
    with SQLiteStore(path) as store:
        for n in range(procs):
            store.sessions.create(Session.new(f"bench-proc-{n}"))
    ctx = mp.get_context("spawn")
    ready: Queue[int] = ctx.Queue()
    out: Queue[dict[str, Any]] = ctx.Queue()
    go = ctx.Event()
    workers = [
        ctx.Process(target=appender, args=(path, n, ready, go, seconds, out)) for n in range(procs)
    ]
    for worker in workers:
        worker.start()
    for _ in workers:
        ready.get(timeout=120)
    go.set()
    reports = [out.get(timeout=seconds + 120) for _ in workers]
    for worker in workers:
        worker.join()
    total = sum(r["count"] for r in reports)
    return {
        "rate": total / seconds,
        "counts": [r["count"] for r in reports],
        "locked": sum(r["locked"] for r in reports),
        "errors": sum(r["errors"] for r in reports),
        "worst_stall_s": max(r["worst_s"] for r in reports),
        "p99_s": max(r["p99_s"] for r in reports),
        "messages": [m for r in reports for m in r["messages"]],
    }


def main() -> None:
    """Measure, print and (with --json) write the result."""
    parser = make_parser(__doc__ or "")
    parser.add_argument("--procs", type=int, default=None, help="appending processes")
    parser.add_argument("--seconds", type=float, default=None, help="seconds per repetition")
    parser.add_argument("--raw", type=int, default=None, help="records of the raw loop")
    args = parser.parse_args()
    size = sizes(
        args,
        full={"procs": 4, "seconds": 3.0, "raw": 3000},
        quick={"procs": 2, "seconds": 0.2, "raw": 20},
    )
    raws: list[float] = []
    runs: list[dict[str, Any]] = []
    with work_dir(args, "procs") as directory:
        for rep in range(size["reps"]):
            before = raw_fsync_rate(directory, size["raw"])
            runs.append(run_procs(directory, size["procs"], size["seconds"], str(rep)))
            raws.append((before + raw_fsync_rate(directory, size["raw"])) / 2)
    ratios = [run["rate"] / raw for run, raw in zip(runs, raws, strict=True)]
    ratio = median(ratios)
    locked = sum(run["locked"] for run in runs)
    errors = sum(run["errors"] for run in runs)
    stall = median([run["worst_stall_s"] for run in runs])
    n = size["procs"]
    messages = [m for run in runs for m in run["messages"]][:3]
    result = Result(
        "append_procs",
        f"{n} processes appending",
        size,
        rows=[
            Row(
                f"{n} processes appending: total appends/s",
                rate(median([run["rate"] for run in runs])),
                f"{rate(median(raws))} raw 200 B write+fsync",
                times(ratio),
                f"≥ {GOAL_RATIO}x",
                ratio >= GOAL_RATIO,
            ),
            Row(
                f'{n} processes: calls failed with "locked" (all repetitions)',
                str(locked),
                "—",
                "—",
                "0",
                locked == 0,
                note=f"other errors: {errors}" + (f"; first: {messages}" if messages else ""),
            ),
            Row(
                f"{n} processes: worst stall (slowest single append)",
                ms(stall),
                "—",
                "—",
                f"≤ {GOAL_STALL_S * 1000:g} ms",
                stall <= GOAL_STALL_S,
                note=f"p99 append latency {ms(median([r['p99_s'] for r in runs]))}",
            ),
        ],
        details={"raw_per_s": raws, "runs": runs, "ratios": ratios},
    )
    emit(result, args)


if __name__ == "__main__":
    main()
