"""``SqlstoreSession`` against the SDK's ``SQLiteSession``: the four rows of issue #16.

Run: ``python bench/openai_agents_session.py [--quick] [--reps N] [--dir DIR]``
(needs the ``openai-agents`` extra).

Both sides are durable: ours is ``SQLiteStore(durability="full")`` (WAL,
``synchronous=FULL``); the SDK's ``SQLiteSession`` runs in WAL, and we set
``PRAGMA synchronous=FULL`` on each of its connections (Python's sqlite3
default) and read it back. Each repetition uses fresh files in one directory;
the single-session rows alternate between the two in blocks so both see the
same moments of a noisy machine. Rows (ours ÷ theirs, > 1 means ours is faster):

* ``add_items`` of 1 item per call, one session — and, in the same blocks, the
  floor of any durable async session (:class:`Floor`: a thread hop plus a bare
  one-row durable commit), whose ratio to ``SQLiteSession`` is the most the
  first row can reach on this machine;
* 8 sessions on one file, one asyncio task each, adding 1 item per call at once;
* ``add_items`` of 10 items per call;
* ``get_items(20)`` on a 100,000-item session.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from harness import Result, emit, interleave, make_parser, ratio_row, sizes, work_dir

import sqlstore


def item(i: int) -> dict[str, Any]:
    """Return conversation item ``i``: user and assistant messages in turn, ~100 bytes of JSON.

    A user message changes the session's turn count, so on our side every
    other item also rewrites the small snapshot (assistant items do not).
    """
    role = "user" if i % 2 == 0 else "assistant"
    return {"role": role, "content": f"message {i:08d}: please summarise the attached report"}


def durable_sqlite_session() -> type[Any]:
    """Return ``SQLiteSession`` with ``synchronous=FULL`` set and checked on every connection."""
    from agents.memory.sqlite_session import SQLiteSession

    class DurableSession(SQLiteSession):
        @staticmethod
        def _configure_connection(conn: sqlite3.Connection) -> None:
            SQLiteSession._configure_connection(conn)
            conn.execute("PRAGMA synchronous=FULL")
            level = conn.execute("PRAGMA synchronous").fetchone()[0]
            mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
            if level != 2 or mode != "wal":
                raise RuntimeError(f"SQLiteSession is journal_mode={mode}, synchronous={level}")

    return DurableSession


class Side:
    """One implementation: sessions on one file, driven from one event loop."""

    def __init__(self, name: str, path: Path) -> None:
        self.name = name
        self.loop = asyncio.new_event_loop()
        self.sessions: list[Any] = []
        if name == "ours":
            from sqlstore.integrations.openai_agents import SqlstoreSession

            self.store: Any = sqlstore.open(str(path))
            self.make = lambda sid: SqlstoreSession(sid, self.store)
        else:
            self.store = None
            kind = durable_sqlite_session()
            self.make = lambda sid: kind(sid, str(path))
        self.at = 0

    def session(self, session_id: str) -> Any:
        made = self.make(session_id)
        self.sessions.append(made)
        return made

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def close(self) -> None:
        for session in self.sessions:
            session.close()
        if self.store is not None:
            self.store.close()
        self.loop.close()


def adder(side: Side, session: Any, per_call: int) -> Any:
    """Return ``write(k)``: k calls of ``add_items`` with ``per_call`` items each."""

    def write(calls: int) -> None:
        async def go() -> None:
            for _ in range(calls):
                batch = [item(side.at + k) for k in range(per_call)]
                side.at += per_call
                await session.add_items(batch)

        side.run(go())

    return write


class Floor:
    """The least any durable async session can do per call: one hop, one 1-row commit.

    ``await asyncio.to_thread(insert)`` where ``insert`` is a bare apsw one-row
    INSERT + COMMIT on a WAL file with ``synchronous=FULL``: the thread hop both
    sessions take to keep the event loop free, plus SQLite's cheapest durable
    commit (one fdatasync). No session can beat it at one durable write per call.
    """

    def __init__(self, path: Path) -> None:
        import apsw

        self.loop = asyncio.new_event_loop()
        self.conn = apsw.Connection(str(path))
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=FULL")
        self.conn.execute("CREATE TABLE IF NOT EXISTS t (body TEXT NOT NULL)")
        self.at = 0

    def write(self, calls: int) -> None:
        """Make ``calls`` durable one-row commits, each from a worker thread."""

        def insert(body: str) -> None:
            with self.conn:
                self.conn.execute("INSERT INTO t VALUES (?)", (body,))

        async def go() -> None:
            for _ in range(calls):
                self.at += 1
                await asyncio.to_thread(insert, json.dumps(item(self.at)))

        self.loop.run_until_complete(go())

    def close(self) -> None:
        self.conn.close()
        self.loop.close()


def single(directory: Path, calls: int, block: int, per_call: int) -> dict[str, float]:
    """Return calls/s of each side for ``add_items`` of ``per_call`` items, one session.

    For one item per call, the floor (:class:`Floor`) runs in the same blocks.
    """
    sides = {name: Side(name, directory / f"{name}-{per_call}.db") for name in ("ours", "sdk")}
    floor = Floor(directory / "floor.db") if per_call == 1 else None
    try:
        writers = {}
        for name, side in sides.items():
            writers[name] = adder(side, side.session("bench"), per_call)
            writers[name](3)  # warm up: schema, first snapshot
        if floor is not None:
            writers["floor"] = floor.write
            floor.write(3)
        return interleave(writers, calls, block)
    finally:
        for side in sides.values():
            side.close()
        if floor is not None:
            floor.close()


def concurrent(directory: Path, name: str, tasks: int, calls: int) -> float:
    """Return items/s of ``tasks`` sessions on one file, one task each, adding at once."""
    side = Side(name, directory / f"{name}-concurrent.db")
    try:
        sessions = [side.session(f"task-{t}") for t in range(tasks)]

        async def one(session: Any, count: int) -> None:
            for i in range(count):
                await session.add_items([item(i)])

        async def everyone(count: int) -> None:
            await asyncio.gather(*(one(s, count) for s in sessions))

        side.run(everyone(1))  # warm up: schema, first snapshots
        started = time.perf_counter()
        side.run(everyone(calls))
        return tasks * calls / (time.perf_counter() - started)
    finally:
        side.close()


def tail_reads(directory: Path, history: int, reads: int) -> dict[str, float]:
    """Return reads/s of ``get_items(20)`` on a ``history``-item session of each side."""
    out: dict[str, float] = {}
    for name in ("ours", "sdk"):
        side = Side(name, directory / f"{name}-tail.db")
        try:
            session = side.session("long")
            chunk = 1000
            for start in range(0, history, chunk):
                side.run(session.add_items([item(i) for i in range(start, start + chunk)]))

            async def go(reader: Any) -> None:
                for _ in range(reads):
                    got = await reader.get_items(20)
                    assert len(got) == 20

            side.run(go(session))  # warm the page cache for both sides alike
            started = time.perf_counter()
            side.run(go(session))
            out[name] = reads / (time.perf_counter() - started)
        finally:
            side.close()
    return out


def main() -> None:
    """Measure, print and (with --json) write the result."""
    parser: argparse.ArgumentParser = make_parser(__doc__ or "")
    for name, what in (
        ("calls", "add_items calls per single-session row"),
        ("block", "calls per alternation"),
        ("task_calls", "add_items calls per task in the 8-session row"),
        ("history", "items of the session read by get_items(20)"),
        ("reads", "get_items(20) calls timed"),
    ):
        parser.add_argument(f"--{name}", type=int, default=None, help=what)
    args = parser.parse_args()
    size = sizes(
        args,
        full={
            "calls": 400,
            "block": 50,
            "tasks": 8,
            "task_calls": 60,
            "history": 100_000,
            "reads": 300,
        },
        quick={"calls": 10, "block": 5, "tasks": 8, "task_calls": 3, "history": 2_000, "reads": 10},
    )
    keys = ("one", "floor", "eight", "ten", "tail")
    figures: dict[str, list[tuple[float, float]]] = {k: [] for k in keys}
    with work_dir(args, "openai-agents") as directory:
        for rep in range(size["reps"]):
            rep_dir = directory / f"rep{rep}"
            rep_dir.mkdir()
            got = single(rep_dir, size["calls"], size["block"], 1)
            figures["one"].append((got["ours"], got["sdk"]))
            figures["floor"].append((got["floor"], got["sdk"]))
            ours = concurrent(rep_dir, "ours", size["tasks"], size["task_calls"])
            sdk = concurrent(rep_dir, "sdk", size["tasks"], size["task_calls"])
            figures["eight"].append((ours, sdk))
            got = single(rep_dir, size["calls"] // 2, size["block"], 10)
            figures["ten"].append((got["ours"] * 10, got["sdk"] * 10))
            got = tail_reads(rep_dir, size["history"], size["reads"])
            figures["tail"].append((got["ours"], got["sdk"]))
    rows = {
        "one": ("`add_items`, 1 item per call (items/s)", 1.5),
        "eight": (f"{size['tasks']} sessions, one task each, adding at once (items/s)", 2.0),
        "ten": ("`add_items` of 10 items per call (items/s)", 1.0),
        "tail": (f"`get_items(20)` on a {size['history']:,}-item session (reads/s)", 1.0),
    }
    result = Result("openai_agents_session", "SqlstoreSession vs SQLiteSession, durable", size)
    for key, (measure, goal) in rows.items():
        result.rows.append(ratio_row(measure, figures[key], goal))
        if key == "one":
            floor = ratio_row(
                "floor (the most any durable async session can reach): `to_thread` + "
                "bare 1-row durable commit, 1 per call (calls/s)",
                figures["floor"],
                goal,
            )
            floor.goal = "report"
            floor.met = None
            result.rows.append(floor)
    result.details = {key: pairs for key, pairs in figures.items()}
    result.notes.append(
        "SQLiteSession set to WAL + synchronous=FULL (read back); ours SQLiteStore durability=full."
    )
    emit(result, args)


if __name__ == "__main__":
    main()
