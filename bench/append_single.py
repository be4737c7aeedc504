"""Durable ``append_event`` per second from one thread, against a raw write+fsync loop.

Run: ``python bench/append_single.py [--appends N] [--quick]``.

Each repetition runs the raw loop (200-byte ``write`` + ``fsync`` on a fresh
file) and ``store.events.append_event`` of a ~200-byte event into one session
of a fresh ``SQLiteStore`` (``durability="full"``) in the same directory,
alternating in blocks of ``--block`` operations so both see the same moments of
a noisy machine. The ratio is the median of the per-repetition ratios. A third
runner, a bare apsw one-row ``INSERT`` + ``COMMIT`` in WAL with
``synchronous=FULL``, shows what SQLite itself costs per durable commit here; a
fourth appends to a session whose snapshot is ``--big-kib`` KiB (extra row).
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
from snapshot_save import big_session

from sqlstore import Event, Session, SQLiteStore
from sqlstore.ports import Store

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


def appender(store: Store, session_id: str, events: list[Event]) -> Callable[[int], None]:
    """Return a runner that appends the next ``k`` events to ``session_id``."""
    position = [0]
    append = store.events.append_event

    def run(k: int) -> None:
        at = position[0]
        for event in events[at : at + k]:
            append(session_id, event)
        position[0] = at + k

    return run


def one_rep(directory: Path, count: int, block: int, big_kib: int, tag: str) -> dict[str, float]:
    """Return appends/s of ours (small and big snapshot), the raw loop and the SQLite floor."""
    events = [Event("message", i, 1, event_text(i), "run-0001") for i in range(count)]
    raw = RawLog(directory)
    with (
        SQLiteStore(directory / f"single-{tag}.db") as store,
        SQLiteStore(directory / f"single-big-{tag}.db") as big_store,
    ):
        store.sessions.create(Session.new("bench-single"))
        big = big_session(big_kib)
        big_store.sessions.create(big)
        for event in events[: min(10, count)]:  # warm-up: statements cached
            store.events.append_event("bench-single", event)
            big_store.events.append_event(big.id, event)
        raw.append(10)
        runners = {
            "ours": appender(store, "bench-single", events),
            "raw": raw.append,
            "sqlite": bare_sqlite(directory / f"bare-{tag}.db"),
            "big": appender(big_store, big.id, events),
        }
        try:
            return interleave(runners, count, block)
        finally:
            raw.close()


def main() -> None:
    """Measure, print and (with --json) write the result."""
    parser = make_parser(__doc__ or "")
    parser.add_argument("--appends", type=int, default=None, help="appends per repetition")
    parser.add_argument("--block", type=int, default=None, help="operations per alternation")
    parser.add_argument("--big-kib", type=int, default=None, help="snapshot size, extra row")
    args = parser.parse_args()
    size = sizes(
        args,
        full={"appends": 3000, "block": 100, "big_kib": 1024},
        quick={"appends": 20, "block": 5, "big_kib": 16},
    )
    raws: list[float] = []
    ours: list[float] = []
    floors: list[float] = []
    bigs: list[float] = []
    with work_dir(args, "single") as directory:
        for rep in range(size["reps"]):
            got = one_rep(directory, size["appends"], size["block"], size["big_kib"], str(rep))
            raws.append(got["raw"])
            ours.append(got["ours"])
            floors.append(got["sqlite"])
            bigs.append(got["big"])
    ratios = [o / r for o, r in zip(ours, raws, strict=True)]
    ratio = median(ratios)
    floor_ratio = median([f / r for f, r in zip(floors, raws, strict=True)])
    big_ratios = [b / r for b, r in zip(bigs, raws, strict=True)]
    big_ratio = median(big_ratios)
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
            ),
            Row(
                f"durable `append_event`/s, one thread, session with a "
                f"{size['big_kib'] * 1024 / 1e6:.2f} MB snapshot",
                rate(median(bigs)),
                f"{rate(median(raws))} raw 200 B write+fsync",
                times(big_ratio),
                f"≥ {GOAL_RATIO}x",
                big_ratio >= GOAL_RATIO,
                note="extra row: each append also updates the session row that holds the snapshot",
            ),
        ],
        details={
            "ours_per_s": ours,
            "raw_per_s": raws,
            "sqlite_per_s": floors,
            "big_snapshot_per_s": bigs,
            "ratios": ratios,
            "big_ratios": big_ratios,
        },
    )
    emit(result, args)


if __name__ == "__main__":
    main()
