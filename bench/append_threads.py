"""Eight threads appending durably to one store (group commit), against the raw fsync loop.

Run: ``python bench/append_threads.py [--threads 8] [--seconds S] [--quick]``.

Each repetition starts ``--threads`` threads on one ``SQLiteStore``
(``durability="full"``), each appending ~200-byte events to its own session for
``--seconds`` in total, cut into ``--windows`` windows; before each window the
raw loop (200-byte ``write`` + ``fsync``) writes its share of ``--raw`` records,
so both see the same moments of a shared machine. (A window boundary ends any
starvation episode, so the fair-share figure is, if anything, optimistic; the
worst-stall figure shows episodes up to a window long.) Reported:
total appends/s ÷ raw records/s, the process CPU time per append (what bounds the
rate once fsyncs are shared), the slowest thread's count ÷ the fair share
(total ÷ threads), and the worst single ``append_event`` call (stall).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from harness import (
    RawLog,
    Result,
    Row,
    emit,
    event_text,
    make_parser,
    median,
    ms,
    percentile,
    rate,
    sizes,
    times,
    work_dir,
)

from sqlstore import Event, Session, SQLiteStore

GOAL_RATIO = 5.0
GOAL_FAIR_SHARE = 0.70
GOAL_STALL_S = 0.050


def run_threads(
    directory: Path, threads: int, seconds: float, windows: int, raw_records: int, tag: str
) -> dict[str, Any]:
    """Return total and raw rates, per-thread counts and latencies of ``threads`` appenders.

    The time is cut into ``windows`` windows; before each, the raw loop writes
    its share of ``raw_records``, so both see the same moments of the machine.
    """
    counts = [0] * threads
    latencies: list[list[float]] = [[] for _ in range(threads)]
    raw = RawLog(directory)
    raw_seconds = active = cpu = 0.0
    raw_done = 0
    with SQLiteStore(directory / f"threads-{tag}.db") as store:
        for n in range(threads):
            store.sessions.create(Session.new(f"bench-thread-{n}"))
        gate = threading.Barrier(threads + 1)
        window: dict[str, float] = {"deadline": 0.0, "stop": 0.0}

        def appender(n: int) -> None:
            sid = f"bench-thread-{n}"
            events = [Event("message", i, 1, event_text(i), "run-0001") for i in range(256)]
            mine = latencies[n]
            i = 0
            while True:
                gate.wait()  # a window opens
                if window["stop"]:
                    break
                deadline = window["deadline"]
                while time.perf_counter() < deadline:
                    before = time.perf_counter()
                    store.events.append_event(sid, events[i & 255])
                    mine.append(time.perf_counter() - before)
                    i += 1
                gate.wait()  # every thread has finished its last append
            counts[n] = i

        workers = [threading.Thread(target=appender, args=(n,)) for n in range(threads)]
        for worker in workers:
            worker.start()
        try:
            for w in range(windows):
                share = raw_records * (w + 1) // windows - raw_done
                started = time.perf_counter()
                raw.append(share)
                raw_seconds += time.perf_counter() - started
                raw_done += share
                began = time.perf_counter()
                cpu_began = time.process_time()
                window["deadline"] = began + seconds / windows
                gate.wait()
                gate.wait()
                active += time.perf_counter() - began
                cpu += time.process_time() - cpu_began
        finally:
            window["stop"] = 1.0
            gate.wait()
            for worker in workers:
                worker.join()
            raw.close()
    total = sum(counts)
    fair = total / threads
    every = [x for mine in latencies for x in mine]
    return {
        "rate": total / active,
        "raw_rate": raw_done / raw_seconds,
        "counts": counts,
        "slowest_share": (min(counts) / fair) if fair else 0.0,
        "worst_stall_s": max(every, default=0.0),
        "p99_s": percentile(every, 99),
        "cpu_us_per_append": cpu / total * 1e6 if total else 0.0,
        "cores_busy": cpu / active if active else 0.0,
    }


def main() -> None:
    """Measure, print and (with --json) write the result."""
    parser = make_parser(__doc__ or "")
    parser.add_argument("--threads", type=int, default=None, help="appending threads")
    parser.add_argument("--seconds", type=float, default=None, help="seconds per repetition")
    parser.add_argument("--raw", type=int, default=None, help="records of the raw loop")
    parser.add_argument("--windows", type=int, default=None, help="alternations per repetition")
    args = parser.parse_args()
    size = sizes(
        args,
        full={"threads": 8, "seconds": 3.0, "raw": 3000, "windows": 3},
        quick={"threads": 3, "seconds": 0.2, "raw": 20, "windows": 2},
    )
    raws: list[float] = []
    runs: list[dict[str, Any]] = []
    with work_dir(args, "threads") as directory:
        for rep in range(size["reps"]):
            run = run_threads(
                directory, size["threads"], size["seconds"], size["windows"], size["raw"], str(rep)
            )
            runs.append(run)
            raws.append(run["raw_rate"])
    ratios = [run["rate"] / raw for run, raw in zip(runs, raws, strict=True)]
    ratio = median(ratios)
    share = median([run["slowest_share"] for run in runs])
    stall = median([run["worst_stall_s"] for run in runs])
    ours = median([run["rate"] for run in runs])
    n = size["threads"]
    result = Result(
        "append_threads",
        f"{n} threads appending (group commit)",
        size,
        rows=[
            Row(
                f"{n} threads appending (group commit): total appends/s",
                rate(ours),
                f"{rate(median(raws))} raw 200 B write+fsync",
                times(ratio),
                f"≥ {GOAL_RATIO:g}x",
                ratio >= GOAL_RATIO,
            ),
            Row(
                f"{n} threads: CPU per append (all threads) and cores busy",
                f"{median([r['cpu_us_per_append'] for r in runs]):.0f} µs, "
                f"{median([r['cores_busy'] for r in runs]):.2f} cores",
                "—",
                "—",
                "report",
                None,
                note=(
                    "process CPU time ÷ appends while the threads run; rate x CPU per append "
                    "= cores busy, against the 1 core the GIL lets Python code use"
                ),
            ),
            Row(
                f"{n} threads: slowest thread ÷ fair share",
                f"{share:.1%}",
                "—",
                "—",
                f"≥ {GOAL_FAIR_SHARE:.0%}",
                share >= GOAL_FAIR_SHARE,
            ),
            Row(
                f"{n} threads: worst stall (slowest single append)",
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
