"""``read_tail(id, 20)`` on a 1,000,000-record log against the same call on a 100-record log.

Run: ``python bench/read_tail.py [--records N] [--reads N] [--quick]``.

One ``SQLiteStore`` file holds both logs (so both reads meet the same cache
and file): ``big`` with ``--records`` ~200-byte events (written with
``append_events`` in batches, ``durability="normal"`` to build it quickly) and
``small`` with 100. The reads alternate in blocks of ``--block``; reported is
the time per ``read_tail`` on the big log ÷ on the small one (an index seek:
the depth of the B-tree grows by a level or two, the work does not grow with
the log). The same ratio for ``read_before`` from the middle of the big log
is given in the note.
"""

from __future__ import annotations

import base64
import json
import time

from harness import Result, Row, emit, event_text, make_parser, median, ms, sizes, times, work_dir

from sqlstore import Event, SQLiteStore
from sqlstore.cursor import encode_cursor

GOAL_RATIO = 2.0
TAIL = 20
SMALL = 100
BUILD_BATCH = 10_000


def build(store: SQLiteStore, session_id: str, records: int) -> list[str]:
    """Append ``records`` events in batches; return the cursors of the last batch."""
    events = [Event("message", i, 1, event_text(i), "run-0001") for i in range(BUILD_BATCH)]
    cursors: list[str] = []
    done = 0
    while done < records:
        step = min(BUILD_BATCH, records - done)
        cursors = store.events.append_events(session_id, events[:step])
        done += step
    return cursors


def at_position(cursor: str, position: int) -> str:
    """Return the cursor of the same log as ``cursor`` at ``position`` (a record boundary)."""
    doc = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    return encode_cursor(doc["s"], doc["g"], position)


def one_rep(store: SQLiteStore, reads: int, block: int, middle: str) -> dict[str, float]:
    """Return seconds per read of the big tail, the small tail and a mid-log page."""
    spent = {"big": 0.0, "small": 0.0, "middle": 0.0}
    done = 0
    while done < reads:
        step = min(block, reads - done)
        for name in spent:
            started = time.perf_counter()
            for _ in range(step):
                if name == "middle":
                    store.events.read_before("big", middle, limit=TAIL)
                else:
                    store.events.read_tail(name, TAIL)
            spent[name] += time.perf_counter() - started
        done += step
    return {name: seconds / reads for name, seconds in spent.items()}


def main() -> None:
    """Measure, print and (with --json) write the result."""
    parser = make_parser(__doc__ or "")
    parser.add_argument("--records", type=int, default=None, help="records of the big log")
    parser.add_argument("--reads", type=int, default=None, help="reads per log and repetition")
    parser.add_argument("--block", type=int, default=None, help="reads per alternation")
    args = parser.parse_args()
    size = sizes(
        args,
        full={"records": 1_000_000, "reads": 3000, "block": 100},
        quick={"records": 2_000, "reads": 20, "block": 5},
    )
    runs: list[dict[str, float]] = []
    with (
        work_dir(args, "tail") as directory,
        SQLiteStore(directory / "tail.db", durability="normal") as store,
    ):
        started = time.perf_counter()
        build(store, "small", SMALL)
        build(store, "big", size["records"])
        built_s = time.perf_counter() - started
        middle = at_position(store.events.read_tail("big", 1)[0].cursor, size["records"] // 2)
        assert len(store.events.read_tail("big", TAIL)) == TAIL
        for _ in range(size["reps"]):
            runs.append(one_rep(store, size["reads"], size["block"], middle))
    ratio = median([r["big"] / r["small"] for r in runs])
    middle_ratio = median([r["middle"] / r["small"] for r in runs])
    n = size["records"]
    result = Result(
        "read_tail",
        f"read_tail({TAIL}) on a {n:,}-record log",
        size,
        rows=[
            Row(
                f"`read_tail(id, {TAIL})` on a {n:,}-record log: time per call",
                ms(median([r["big"] for r in runs])),
                f"{ms(median([r['small'] for r in runs]))} on a {SMALL}-record log",
                times(ratio),
                f"≤ {GOAL_RATIO:g}x the time",
                ratio <= GOAL_RATIO,
                note=(
                    f"`read_before` a page of {TAIL} from the middle of the big log: "
                    f"{times(middle_ratio)} the small tail's time; big log built in {built_s:.0f} s"
                ),
            ),
        ],
        details={"runs": runs, "built_s": built_s},
    )
    emit(result, args)


if __name__ == "__main__":
    main()
