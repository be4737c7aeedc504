"""Durable ``append_events`` of 10 events per call from one thread, against the raw fsync loop.

Run: ``python bench/append_batch.py [--calls N] [--batch 10] [--quick]``.

Each repetition alternates, in blocks of ``--block`` operations, the raw loop
(200-byte ``write`` + ``fsync`` per record) and ``store.events.append_events``
of ``--batch`` ~200-byte events per call into one session of a fresh
``SQLiteStore`` (``durability="full"``): one transaction and one fsync per
call. Reported: events/s ÷ raw records/s (median of the per-repetition
ratios), and the single-event ``append_event`` rate of the same run beside it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness import (
    RawLog,
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

from sqlstore import Event, Session, SQLiteStore
from sqlstore.ports import Store

GOAL_RATIO = 8.0


def batcher(store: Store, session_id: str, batch: list[Event]) -> Callable[[int], None]:
    """Return a runner that makes ``k`` ``append_events`` calls of ``batch``."""
    append_events = store.events.append_events

    def run(k: int) -> None:
        for _ in range(k):
            append_events(session_id, batch)

    return run


def single(store: Store, session_id: str, events: list[Event]) -> Callable[[int], None]:
    """Return a runner that appends ``k`` events one call each."""
    append = store.events.append_event

    def run(k: int) -> None:
        for i in range(k):
            append(session_id, events[i % len(events)])

    return run


def one_rep(directory: Path, calls: int, batch_size: int, block: int, tag: str) -> dict[str, float]:
    """Return calls/s of the batch runner, appends/s of single appends, and raw records/s."""
    batch = [Event("message", i, 1, event_text(i), "run-0001") for i in range(batch_size)]
    raw = RawLog(directory)
    with SQLiteStore(directory / f"batch-{tag}.db") as store:
        store.sessions.create(Session.new("bench-batch"))
        store.sessions.create(Session.new("bench-one"))
        store.events.append_events("bench-batch", batch)  # warm-up: statements cached
        store.events.append_event("bench-one", batch[0])
        raw.append(10)
        runners = {
            "batch": batcher(store, "bench-batch", batch),
            "single": single(store, "bench-one", batch),
            "raw": raw.append,
        }
        try:
            return interleave(runners, calls, block)
        finally:
            raw.close()


def main() -> None:
    """Measure, print and (with --json) write the result."""
    parser = make_parser(__doc__ or "")
    parser.add_argument("--calls", type=int, default=None, help="calls per runner and repetition")
    parser.add_argument("--batch", type=int, default=None, help="events per append_events call")
    parser.add_argument("--block", type=int, default=None, help="operations per alternation")
    args = parser.parse_args()
    size = sizes(
        args,
        full={"calls": 1500, "batch": 10, "block": 100},
        quick={"calls": 20, "batch": 10, "block": 5},
    )
    events: list[float] = []
    singles: list[float] = []
    raws: list[float] = []
    with work_dir(args, "batch") as directory:
        for rep in range(size["reps"]):
            got = one_rep(directory, size["calls"], size["batch"], size["block"], str(rep))
            events.append(got["batch"] * size["batch"])
            singles.append(got["single"])
            raws.append(got["raw"])
    ratios = [e / r for e, r in zip(events, raws, strict=True)]
    ratio = median(ratios)
    single_ratio = median([s / r for s, r in zip(singles, raws, strict=True)])
    n = size["batch"]
    result = Result(
        "append_batch",
        f"durable append_events of {n} events per call, one thread",
        size,
        rows=[
            Row(
                f"`append_events` of {n} events per call, one thread: events/s",
                rate(median(events)),
                f"{rate(median(raws))} raw 200 B write+fsync",
                times(ratio),
                f"≥ {GOAL_RATIO:g}x",
                ratio >= GOAL_RATIO,
                note=(
                    f"same run, one event per call (`append_event`): {rate(median(singles))} "
                    f"= {times(single_ratio)} raw"
                ),
            ),
        ],
        details={"events_per_s": events, "single_per_s": singles, "raw_per_s": raws},
    )
    emit(result, args)


if __name__ == "__main__":
    main()
