"""Wake-up latency of a following ``read_after``, in-process and across processes.

Run: ``python bench/follow_latency.py [--events N] [--quick]``.

A follower parks in ``store.events.read_after(sid, cursor, follow=True)``; a
writer appends ``--events`` events one at a time with a random 2-8 ms pause
between them (and, in an extra cross-process row, ``--idle-events`` events
with 20-60 ms pauses, long enough for the follower's poll to back off). Each
event carries ``time.monotonic_ns()`` read just before its ``append_event``
call; the clock is system-wide on Linux, so two processes compare it directly.
Latency = when the follower yields the record - that stamp, so it *includes*
the writer's durable commit. In-process the writer is a thread using the same
store; cross-process it is a spawned process with its own store. Figures are
p50/p99 per repetition, median over repetitions.
"""

from __future__ import annotations

import multiprocessing as mp
import random
import threading
import time
from multiprocessing.queues import Queue
from pathlib import Path

from harness import Result, Row, emit, make_parser, median, ms, percentile, sizes, work_dir

from sqlstore import Event, Session, SQLiteStore

GOAL_IN_PROCESS_S = 0.005
GOAL_CROSS_PROCESS_S = 0.025
SESSION_ID = "bench-follow"
BUSY_PAUSE_S = (0.002, 0.008)
"""Pause between appends of a busy writer (a follower stays at its shortest poll)."""
IDLE_PAUSE_S = (0.020, 0.060)
"""Pause between appends of a slower writer (a cross-process follower has backed off)."""


def write_stamped(
    store: SQLiteStore, count: int, seed: int, pause: tuple[float, float] = BUSY_PAUSE_S
) -> None:
    """Append ``count`` events, each stamped with the monotonic clock just before the call."""
    pauses = random.Random(seed)
    for i in range(count):
        time.sleep(pauses.uniform(*pause))
        stamp = time.monotonic_ns()
        store.events.append_event(SESSION_ID, Event("tick", i, 1, "", "", {"t0": stamp}))


def writer_process(
    path: str, count: int, seed: int, go: Queue[str], pause: tuple[float, float]
) -> None:
    """Cross-process writer: wait for the follower to be parked, then append."""
    with SQLiteStore(path) as store:
        go.get(timeout=120)
        write_stamped(store, count, seed, pause)


def follow(store: SQLiteStore, after: str, count: int, parked: threading.Event) -> list[float]:
    """Follow the bench session from ``after`` and return the latencies of ``count`` records."""
    latencies: list[float] = []
    records = store.events.read_after(SESSION_ID, after, follow=True)
    parked.set()
    try:
        for record in records:
            now = time.monotonic_ns()
            assert record.event is not None
            stamp = record.event.data["t0"]
            assert isinstance(stamp, int)
            latencies.append((now - stamp) / 1e9)
            if len(latencies) == count:
                break
    finally:
        close = getattr(records, "close", None)
        if close is not None:
            close()  # a generator: releases the follower's connection now
    return latencies


def prepare(path: Path) -> tuple[SQLiteStore, str]:
    """Open a fresh store with the bench session and one event; return it and the cursor."""
    store = SQLiteStore(path)
    store.sessions.create(Session.new(SESSION_ID))
    cursor = store.events.append_event(SESSION_ID, Event("start"))
    return store, cursor


def in_process(directory: Path, count: int, tag: str) -> list[float]:
    """Return latencies with the writer as a thread of this process (same store)."""
    store, cursor = prepare(directory / f"follow-in-{tag}.db")
    with store:
        parked = threading.Event()

        def write() -> None:
            parked.wait()
            write_stamped(store, count, seed=len(tag))

        writer = threading.Thread(target=write)
        writer.start()
        try:
            return follow(store, cursor, count, parked)
        finally:
            writer.join()


def cross_process(
    directory: Path, count: int, tag: str, pause: tuple[float, float] = BUSY_PAUSE_S
) -> list[float]:
    """Return latencies with the writer in a spawned process with its own store."""
    path = directory / f"follow-x-{tag}.db"
    store, cursor = prepare(path)
    ctx = mp.get_context("spawn")
    go: Queue[str] = ctx.Queue()
    writer = ctx.Process(target=writer_process, args=(str(path), count, len(tag), go, pause))
    writer.start()
    parked = threading.Event()

    def release_writer() -> None:
        parked.wait()
        time.sleep(0.05)  # let the follower reach its wait
        go.put("go")

    release = threading.Thread(target=release_writer)
    release.start()
    try:
        with store:
            return follow(store, cursor, count, parked)
    finally:
        release.join()
        writer.join(timeout=120)


def summary(runs: list[list[float]]) -> dict[str, float]:
    """Return the median over repetitions of each repetition's p50 and p99."""
    return {
        "p50": median([percentile(run, 50) for run in runs]),
        "p99": median([percentile(run, 99) for run in runs]),
        "max": median([max(run) for run in runs]),
    }


def main() -> None:
    """Measure, print and (with --json) write the result."""
    parser = make_parser(__doc__ or "")
    parser.add_argument("--events", type=int, default=None, help="events per repetition")
    parser.add_argument(
        "--idle-events", type=int, default=None, help="events of the slower cross-process writer"
    )
    args = parser.parse_args()
    size = sizes(
        args, full={"events": 300, "idle_events": 100}, quick={"events": 5, "idle_events": 3}
    )
    inproc: list[list[float]] = []
    cross: list[list[float]] = []
    idle: list[list[float]] = []
    with work_dir(args, "follow") as directory:
        for rep in range(size["reps"]):
            inproc.append(in_process(directory, size["events"], f"r{rep}"))
            cross.append(cross_process(directory, size["events"], f"r{rep}"))
            idle.append(
                cross_process(directory, size["idle_events"], f"i{rep}", pause=IDLE_PAUSE_S)
            )
    mine = summary(inproc)
    other = summary(cross)
    slow = summary(idle)
    result = Result(
        "follow_latency",
        "follow wake-up latency",
        size,
        rows=[
            Row(
                "follow wake-up, in-process: p50 / p99",
                f"{ms(mine['p50'])} / {ms(mine['p99'])}",
                "—",
                "—",
                f"≤ {GOAL_IN_PROCESS_S * 1000:g} ms (p50)",
                mine["p50"] <= GOAL_IN_PROCESS_S,
                note="latency includes the writer's durable commit",
            ),
            Row(
                "follow wake-up, cross-process: p50 / p99",
                f"{ms(other['p50'])} / {ms(other['p99'])}",
                "—",
                "—",
                f"≤ {GOAL_CROSS_PROCESS_S * 1000:g} ms (p50)",
                other["p50"] <= GOAL_CROSS_PROCESS_S,
                note="latency includes the writer's durable commit",
            ),
            Row(
                "follow wake-up, cross-process, writer pausing 20-60 ms: p50 / p99",
                f"{ms(slow['p50'])} / {ms(slow['p99'])}",
                "—",
                "—",
                f"≤ {GOAL_CROSS_PROCESS_S * 1000:g} ms (p50)",
                slow["p50"] <= GOAL_CROSS_PROCESS_S,
                note="extra row: the follower's poll has backed off between events",
            ),
        ],
        details={"in_process": mine, "cross_process": other, "cross_process_idle": slow},
    )
    emit(result, args)


if __name__ == "__main__":
    main()
