"""``sqlstore.aio`` appends against the same sync appends, measured in the same run.

Run: ``python bench/aio_append.py [--appends N] [--seconds S] [--quick]``.

Two comparisons, each alternating its two sides so both see the same moments
of a shared machine (``durability="full"``, ~200-byte events):

* one task awaiting ``store.events.append_event`` on an ``AsyncStore`` against
  one thread calling the sync ``append_event`` (blocks of ``--block`` appends,
  the side that goes first alternating);
* 64 tasks on one event loop appending to 8 sessions (8 tasks per session)
  against 8 sync threads, one per session, for ``--seconds`` cut into
  ``--windows`` windows: total appends/s of each.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness import (
    Result,
    Row,
    emit,
    event_text,
    interleave,
    make_parser,
    median,
    rate,
    sizes,
    times,
    work_dir,
)

import sqlstore.aio
from sqlstore import Event, Session, SQLiteStore

GOAL_ONE = 0.9
GOAL_MANY = 1.0
TASKS = 64
SESSIONS = 8


@contextmanager
def side_by_side(
    directory: Path, name: str
) -> Iterator[tuple[asyncio.AbstractEventLoop, SQLiteStore, sqlstore.aio.AsyncStore]]:
    """Yield an event loop, a sync store and an AsyncStore on two files of one directory."""
    loop = asyncio.new_event_loop()
    try:
        with SQLiteStore(directory / f"{name}-sync.db") as sync:
            astore = loop.run_until_complete(sqlstore.aio.open(str(directory / f"{name}-aio.db")))
            try:
                yield loop, sync, astore
            finally:
                loop.run_until_complete(astore.aclose())
    finally:
        loop.close()


def one_task(directory: Path, count: int, block: int, tag: str) -> dict[str, float]:
    """Return appends/s of one sync thread and of one task on an AsyncStore, interleaved."""
    events = [Event("message", i, 1, event_text(i), "run-0001") for i in range(256)]
    with side_by_side(directory, f"one-{tag}") as (loop, sync, astore):
        sync.events.append_event("s", events[0])  # warm-up
        loop.run_until_complete(astore.events.append_event("s", events[0]))

        async def aio_block(k: int) -> None:
            for i in range(k):
                await astore.events.append_event("s", events[i & 255])

        def sync_block(k: int) -> None:
            for i in range(k):
                sync.events.append_event("s", events[i & 255])

        def aio_runner(k: int) -> None:
            loop.run_until_complete(aio_block(k))

        rates = interleave({"sync": sync_block, "aio": aio_runner}, count, block)
    return rates


def threads_window(store: SQLiteStore, seconds: float, events: list[Event]) -> int:
    """Run SESSIONS sync threads appending for ``seconds``; return the appends made."""
    counts = [0] * SESSIONS
    deadline = time.perf_counter() + seconds

    def work(n: int) -> None:
        i = 0
        while time.perf_counter() < deadline:
            store.events.append_event(f"s{n}", events[i & 255])
            i += 1
        counts[n] = i

    workers = [threading.Thread(target=work, args=(n,)) for n in range(SESSIONS)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return sum(counts)


async def tasks_window(store: sqlstore.aio.AsyncStore, seconds: float, events: list[Event]) -> int:
    """Run TASKS tasks over SESSIONS sessions appending for ``seconds``; return the appends."""
    deadline = time.perf_counter() + seconds
    counts = [0] * TASKS

    async def work(n: int) -> None:
        i = 0
        while time.perf_counter() < deadline:
            await store.events.append_event(f"s{n % SESSIONS}", events[i & 255])
            i += 1
        counts[n] = i

    await asyncio.gather(*(work(n) for n in range(TASKS)))
    return sum(counts)


def many_tasks(directory: Path, seconds: float, windows: int, tag: str) -> dict[str, float]:
    """Return total appends/s of 8 sync threads and of 64 tasks, in alternating windows."""
    events = [Event("message", i, 1, event_text(i), "run-0001") for i in range(256)]
    made = {"threads": 0, "tasks": 0}
    spent = {"threads": 0.0, "tasks": 0.0}
    with side_by_side(directory, f"many-{tag}") as (loop, sync, astore):
        for n in range(SESSIONS):
            sync.sessions.create(Session.new(f"s{n}"))
            loop.run_until_complete(astore.sessions.create(Session.new(f"s{n}")))

        def threads_side() -> int:
            return threads_window(sync, seconds / windows, events)

        def tasks_side() -> int:
            return loop.run_until_complete(tasks_window(astore, seconds / windows, events))

        sides = {"threads": threads_side, "tasks": tasks_side}
        for window in range(windows):
            order = ["threads", "tasks"] if window % 2 == 0 else ["tasks", "threads"]
            for name in order:  # the side that goes first alternates
                started = time.perf_counter()
                made[name] += sides[name]()
                spent[name] += time.perf_counter() - started
    return {name: made[name] / spent[name] for name in made}


def main() -> None:
    """Measure, print and (with --json) write the result."""
    parser = make_parser(__doc__ or "")
    parser.add_argument("--appends", type=int, default=None, help="appends per side, one task")
    parser.add_argument("--block", type=int, default=None, help="appends per alternation")
    parser.add_argument("--seconds", type=float, default=None, help="seconds per side, 64 tasks")
    parser.add_argument("--windows", type=int, default=None, help="alternations, 64 tasks")
    args = parser.parse_args()
    size = sizes(
        args,
        full={"appends": 1500, "block": 100, "seconds": 3.0, "windows": 3},
        quick={"appends": 20, "block": 5, "seconds": 0.2, "windows": 2},
    )
    ones: list[dict[str, float]] = []
    manys: list[dict[str, float]] = []
    with work_dir(args, "aio") as directory:
        for rep in range(size["reps"]):
            ones.append(one_task(directory, size["appends"], size["block"], str(rep)))
            manys.append(many_tasks(directory, size["seconds"], size["windows"], str(rep)))
    one_ratio = median([r["aio"] / r["sync"] for r in ones])
    many_ratio = median([r["tasks"] / r["threads"] for r in manys])
    result = Result(
        "aio_append",
        "sqlstore.aio appends against sync appends",
        size,
        rows=[
            Row(
                "`await aio.events.append_event`, one task: appends/s",
                rate(median([r["aio"] for r in ones])),
                f"{rate(median([r['sync'] for r in ones]))} sync `append_event`, one thread",
                times(one_ratio),
                f"≥ {GOAL_ONE:g}x",
                one_ratio >= GOAL_ONE,
            ),
            Row(
                f"{TASKS} tasks on one loop appending to {SESSIONS} sessions: total appends/s",
                rate(median([r["tasks"] for r in manys])),
                f"{rate(median([r['threads'] for r in manys]))} {SESSIONS} sync threads",
                times(many_ratio),
                f"≥ {GOAL_MANY:g}x",
                many_ratio >= GOAL_MANY,
                note=f"AsyncStore pool: {sqlstore.aio.AIO_MAX_WORKERS} worker threads",
            ),
        ],
        details={"one_task": ones, "many_tasks": manys},
    )
    emit(result, args)


if __name__ == "__main__":
    main()
