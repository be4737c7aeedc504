"""``events.read`` of a long log, against a bare apsw ``SELECT`` + ``json.loads`` loop.

Run: ``python bench/read_events.py [--events N] [--quick]``.

One session's log is filled with ``--events`` ~200-byte events (through the
store's own write path, 5,000 appends per transaction, to keep setup short).
Each repetition times ``list(store.events.read(sid))`` (paged, one short read
transaction per 512 records, ``Event`` objects built) and a bare loop over the
same rows on a plain apsw connection (one ``SELECT body … ORDER BY pos`` and
``json.loads`` per row). Both run with a warm page cache (one untimed pass first).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import apsw
from harness import (
    Result,
    Row,
    emit,
    event_text,
    make_parser,
    median,
    rate,
    sizes,
    times,
    work_dir,
)

from sqlstore import Event, Session, SQLiteStore
from sqlstore.events import encode_event
from sqlstore.sqlite import rows

GOAL_RATIO = 0.6
FILL_PER_TRANSACTION = 5_000
SESSION_ID = "bench-read"


def fill(store: SQLiteStore, count: int) -> None:
    """Append ``count`` events to the bench session, many per transaction."""
    store.sessions.create(Session.new(SESSION_ID))
    done = 0
    while done < count:
        chunk = range(done, min(count, done + FILL_PER_TRANSACTION))
        bodies = [encode_event(Event("message", i, 1, event_text(i), "run-0001")) for i in chunk]

        def op(conn: apsw.Connection, bodies: list[bytes] = bodies) -> None:
            now_ns = time.time_ns()
            for body in bodies:
                rows.append_record(
                    conn, SESSION_ID, is_gap=False, event_type="message", body=body, now_ns=now_ns
                )

        store.db.write(op)
        done = chunk.stop


def ours(store: SQLiteStore) -> tuple[float, int]:
    """Return (events/s, count) of one full ``events.read``."""
    started = time.perf_counter()
    count = sum(1 for _ in store.events.read(SESSION_ID))
    return count / (time.perf_counter() - started), count


def bare(path: Path) -> tuple[float, int]:
    """Return (rows/s, count) of a bare apsw SELECT with json.loads per row."""
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        started = time.perf_counter()
        count = 0
        for (body,) in conn.execute(
            "SELECT body FROM events WHERE session_id = ? ORDER BY pos", (SESSION_ID,)
        ):
            json.loads(body)
            count += 1
        return count / (time.perf_counter() - started), count
    finally:
        conn.close()


def main() -> None:
    """Measure, print and (with --json) write the result."""
    parser = make_parser(__doc__ or "")
    parser.add_argument("--events", type=int, default=None, help="events in the log")
    args = parser.parse_args()
    size = sizes(args, full={"events": 100_000}, quick={"events": 600})
    baseline: list[float] = []
    measured: list[float] = []
    with work_dir(args, "read") as directory:
        path = directory / "read.db"
        with SQLiteStore(path) as store:
            fill(store, size["events"])
            ours(store)
            bare(path)
            for _ in range(size["reps"]):
                got, count = bare(path)
                baseline.append(got)
                mine, seen = ours(store)
                measured.append(mine)
                if count != size["events"] or seen != size["events"]:
                    raise SystemExit(f"read {seen} / {count} events, expected {size['events']}")
    ratios = [o / b for o, b in zip(measured, baseline, strict=True)]
    ratio = median(ratios)
    result = Result(
        "read_events",
        f"read of {size['events']:,} events",
        size,
        rows=[
            Row(
                f"`read` of {size['events']:,} events: events/s",
                rate(median(measured)),
                f"{rate(median(baseline))} bare apsw SELECT + json.loads",
                times(ratio),
                f"≥ {GOAL_RATIO}x",
                ratio >= GOAL_RATIO,
            )
        ],
        details={"ours_per_s": measured, "bare_per_s": baseline, "ratios": ratios},
    )
    emit(result, args)


if __name__ == "__main__":
    main()
