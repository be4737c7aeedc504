"""``SqlstoreSessionService`` against ADK's ``SqliteSessionService``: the rows of issue #18.

Run: ``python bench/adk_session_service.py [--quick] [--reps N] [--dir DIR]``
(needs the ``adk`` extra).

Both sides are durable: ours is ``SQLiteStore(durability="full")`` (WAL,
``synchronous=FULL``); ADK's ``SqliteSessionService`` opens a new ``aiosqlite``
connection per call with SQLite's defaults (rollback journal, ``synchronous=FULL``),
which we leave as ADK ships it. Each repetition uses fresh files in one
directory. Rows (ours ÷ theirs, > 1 means ours is faster):

* ``append_event`` of a small text event, one session, one writer;
* ``get_session(num_recent_events=20)`` on a session of ``--history`` events;
* 8 sessions appending at once (one asyncio task each), with the count of
  "database is locked" errors on each side.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path
from typing import Any

from harness import Result, Row, emit, make_parser, ratio_row, sizes, work_dir

APP, USER = "bench", "u"


def make(name: str, path: Path) -> Any:
    """Return a session service of one side on ``path``."""
    if name == "ours":
        from sqlstore.integrations.adk import SqlstoreSessionService

        return SqlstoreSessionService(str(path))
    from google.adk.sessions.sqlite_session_service import SqliteSessionService

    return SqliteSessionService(str(path))


def text_event(i: int) -> Any:
    """Return a small text event (a user message)."""
    from google.adk.events.event import Event
    from google.genai import types

    return Event(
        author="user",
        invocation_id="inv",
        content=types.Content(role="user", parts=[types.Part(text=f"message {i:08d}: hello")]),
    )


async def appends(service: Any, session_id: str, count: int) -> tuple[float, int]:
    """Append ``count`` events to one session; return (seconds, locked errors)."""
    session = await service.get_session(app_name=APP, user_id=USER, session_id=session_id)
    locked = 0
    started = time.perf_counter()
    for i in range(count):
        try:
            await service.append_event(session, text_event(i))
        except Exception as exc:  # counted, not hidden: the row reports them
            if "locked" not in str(exc):
                raise
            locked += 1
            session = await service.get_session(app_name=APP, user_id=USER, session_id=session_id)
    return time.perf_counter() - started, locked


def prefill(name: str, service: Any, path: Path, count: int) -> None:
    """Give session "long" ``count`` text events, in bulk (what is timed is the read).

    Ours: ``append_events`` of the records ``append_event`` would write, 1,000 per
    call. ADK: the rows its ``append_event`` would insert, with ``executemany``.
    """
    events = [text_event(i) for i in range(count)]
    if name == "ours":
        from sqlstore.events import Event
        from sqlstore.integrations.adk_events import EVENT_TYPE, session_key

        key = session_key(APP, USER, "long")
        records = [
            Event(EVENT_TYPE, data=e.model_dump(mode="json", exclude_none=True)) for e in events
        ]
        for start in range(0, count, 1000):
            service._store.events.append_events(key, records[start : start + 1000])
        return
    import sqlite3

    with sqlite3.connect(str(path)) as conn:
        conn.executemany(
            "INSERT INTO events (id, app_name, user_id, session_id, invocation_id, timestamp, "
            "event_data) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    e.id,
                    APP,
                    USER,
                    "long",
                    e.invocation_id,
                    e.timestamp,
                    e.model_dump_json(exclude_none=True),
                )
                for e in events
            ],
        )


async def one_side(name: str, directory: Path, size: dict[str, Any]) -> dict[str, float]:
    """Measure every row on one side; return the figures."""
    service = make(name, directory / f"{name}.db")
    out: dict[str, float] = {}
    await service.create_session(app_name=APP, user_id=USER, session_id="single")
    await appends(service, "single", 3)  # warm up
    seconds, _ = await appends(service, "single", size["appends"])
    out["append"] = size["appends"] / seconds
    await service.create_session(app_name=APP, user_id=USER, session_id="long")
    prefill(name, service, directory / f"{name}.db", size["history"])
    from google.adk.sessions.base_session_service import GetSessionConfig

    config = GetSessionConfig(num_recent_events=20)
    started = time.perf_counter()
    for _ in range(size["reads"]):
        got = await service.get_session(
            app_name=APP, user_id=USER, session_id="long", config=config
        )
        assert got is not None and len(got.events) == 20
    out["tail"] = size["reads"] / (time.perf_counter() - started)
    ids = [f"t{t}" for t in range(8)]
    for sid in ids:
        await service.create_session(app_name=APP, user_id=USER, session_id=sid)
    started = time.perf_counter()
    done = await asyncio.gather(*(appends(service, sid, size["task_appends"]) for sid in ids))
    out["eight"] = 8 * size["task_appends"] / (time.perf_counter() - started)
    out["locked"] = float(sum(locked for _, locked in done))
    await service.close()
    return out


def main() -> None:
    """Measure, print and (with --json) write the result."""
    parser: argparse.ArgumentParser = make_parser(__doc__ or "")
    for name, what in (
        ("appends", "append_event calls in the single-session row"),
        ("history", "events of the session read by get_session(num_recent_events=20)"),
        ("reads", "get_session calls timed"),
        ("task_appends", "append_event calls per task in the 8-session row"),
    ):
        parser.add_argument(f"--{name}", type=int, default=None, help=what)
    args = parser.parse_args()
    size = sizes(
        args,
        full={"appends": 300, "history": 10_000, "reads": 100, "task_appends": 40},
        quick={"appends": 10, "history": 200, "reads": 5, "task_appends": 3},
    )
    figures: dict[str, list[tuple[float, float]]] = {"append": [], "tail": [], "eight": []}
    locked = {"ours": 0.0, "adk": 0.0}
    with work_dir(args, "adk") as directory:
        for rep in range(size["reps"]):
            rep_dir = directory / f"rep{rep}"
            rep_dir.mkdir()
            order = ("ours", "adk") if rep % 2 == 0 else ("adk", "ours")
            got = {name: asyncio.run(one_side(name, rep_dir, size)) for name in order}
            for key in figures:
                figures[key].append((got["ours"][key], got["adk"][key]))
            for name in locked:
                locked[name] += got[name]["locked"]
    rows = {
        "append": ("`append_event` of a small text event (events/s)", 2.0),
        "tail": (
            f"`get_session(num_recent_events=20)` on a {size['history']:,}-event session (reads/s)",
            5.0,
        ),
        "eight": ("8 sessions appending at once (events/s)", 3.0),
    }
    result = Result("adk_session_service", "SqlstoreSessionService vs SqliteSessionService", size)
    for key, (measure, goal) in rows.items():
        result.rows.append(ratio_row(measure, figures[key], goal))
    result.rows.append(
        Row(
            '8 sessions: "database is locked" errors (all repetitions)',
            f"{locked['ours']:.0f}",
            f"{locked['adk']:.0f}",
            "—",
            "0 (ours)",
            locked["ours"] == 0,
        )
    )
    result.details = {key: pairs for key, pairs in figures.items()} | {"locked": locked}
    emit(result, args)


if __name__ == "__main__":
    main()
