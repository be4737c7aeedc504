"""Durable ``append_event`` per second from one thread, against a raw write+fsync loop.

Run: ``python bench/append_single.py [--appends N] [--quick]``.

Each repetition runs the raw loop (200-byte ``write`` + ``fsync`` on a fresh
file) and ``store.events.append_event`` of a ~200-byte event into one session
of a fresh ``SQLiteStore`` (``durability="full"``) in the same directory,
alternating in blocks of ``--block`` operations so both see the same moments of
a noisy machine. The ratio is the median of the per-repetition ratios. A third
runner, a bare apsw one-row ``INSERT`` + ``COMMIT`` in WAL with
``synchronous=FULL``, shows what SQLite itself costs per durable commit here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import apsw
from harness import (
    RAW_RECORD_BYTES,
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

GOAL_RATIO = 0.85


def bare_sqlite(path: Path) -> Callable[[int], None]:
    """Return a runner of the SQLite floor: one-row INSERT + COMMIT, WAL, synchronous=FULL."""
    conn = apsw.Connection(str(path))
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("CREATE TABLE log (pos INTEGER PRIMARY KEY, body BLOB NOT NULL)")
    body = b"b" * RAW_RECORD_BYTES

    def run(count: int) -> None:
        for _ in range(count):
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO log (body) VALUES (?)", (body,))
            conn.execute("COMMIT")

    return run


def one_rep(directory: Path, count: int, block: int, tag: str) -> dict[str, float]:
    """Return appends/s of ours and of the raw loop, run in alternating blocks."""
    events = [Event("message", i, 1, event_text(i), "run-0001") for i in range(count)]
    raw = RawLog(directory)
    with SQLiteStore(directory / f"single-{tag}.db") as store:
        store.sessions.create(Session.new("bench-single"))
        for event in events[: min(10, count)]:
            store.events.append_event("bench-single", event)  # warm-up: statements cached
        raw.append(10)
        position = [0]

        def append(k: int) -> None:
            at = position[0]
            for event in events[at : at + k]:
                store.events.append_event("bench-single", event)
            position[0] = at + k

        floor = bare_sqlite(directory / f"bare-{tag}.db")
        try:
            return interleave({"ours": append, "raw": raw.append, "sqlite": floor}, count, block)
        finally:
            raw.close()


def main() -> None:
    """Measure, print and (with --json) write the result."""
    parser = make_parser(__doc__ or "")
    parser.add_argument("--appends", type=int, default=None, help="appends per repetition")
    parser.add_argument("--block", type=int, default=None, help="operations per alternation")
    args = parser.parse_args()
    size = sizes(args, full={"appends": 3000, "block": 100}, quick={"appends": 20, "block": 5})
    raws: list[float] = []
    ours: list[float] = []
    floors: list[float] = []
    with work_dir(args, "single") as directory:
        for rep in range(size["reps"]):
            got = one_rep(directory, size["appends"], size["block"], str(rep))
            raws.append(got["raw"])
            ours.append(got["ours"])
            floors.append(got["sqlite"])
    ratios = [o / r for o, r in zip(ours, raws, strict=True)]
    ratio = median(ratios)
    floor_ratio = median([f / r for f, r in zip(floors, raws, strict=True)])
    result = Result(
        "append_single",
        "durable append_event, one thread",
        size,
        rows=[
            Row(
                "durable `append_event`/s, one thread",
                rate(median(ours)),
                f"{rate(median(raws))} raw 200 B write+fsync",
                times(ratio),
                f"≥ {GOAL_RATIO}x",
                ratio >= GOAL_RATIO,
                note=(
                    f"SQLite floor in the same run (bare apsw one-row INSERT + COMMIT, WAL, "
                    f"synchronous=FULL): {rate(median(floors))} = {times(floor_ratio)} raw"
                ),
            )
        ],
        details={"ours_per_s": ours, "raw_per_s": raws, "sqlite_per_s": floors, "ratios": ratios},
    )
    emit(result, args)


if __name__ == "__main__":
    main()
