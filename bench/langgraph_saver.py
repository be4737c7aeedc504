"""SqlstoreSaver against LangGraph's own SQLite savers, both durable (WAL, synchronous=FULL).

Run: ``python bench/langgraph_saver.py [--quick] [--reps N] [--puts N] [--tasks N]``.

Four measures, each in the same run for both sides (fresh files in one directory):

* ``put``, one thread: ``SqlstoreSaver.put`` vs ``SqliteSaver.put`` of the same
  checkpoints (one new ~150 B message per step plus a step counter; both
  channels named in ``new_versions``), alternating in blocks;
* ``aput`` from 8 concurrent tasks (8 threads, one asyncio loop):
  ``SqlstoreSaver.aput`` vs ``AsyncSqliteSaver.aput``;
* ``list`` of a 1,000-checkpoint thread, each checkpoint with two pending
  writes: ``SqlstoreSaver.list`` vs ``SqliteSaver.list`` (every tuple consumed);
* file size after 200 steps whose 100 KB channel never changes (database +
  WAL after a TRUNCATE checkpoint).

The peers' connections get ``PRAGMA synchronous=FULL`` (read back); sqlstore
runs with ``durability="full"``. Reported ratios: ours ÷ theirs in operations
per second (> 1: ours faster), and ours ÷ theirs in bytes for the file size.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
from append_single import bare_sqlite
from harness import Result, Row, emit, make_parser, median, rate, sizes, times, work_dir

from sqlstore.checkpoints import CheckpointQuery
from sqlstore.integrations.langgraph import SqlstoreSaver

BIG_BYTES = 100_000
SIZE_STEPS = 200
LIST_WRITES = 2
FLOOR_WARM = 1_100
"""Untimed floor commits of a warmed run: one WAL frame each, so past SQLite's automatic
checkpoint at 1,000 frames, after which the WAL's frames are overwritten, not appended."""


def durable(conn: sqlite3.Connection) -> None:
    """Set WAL + synchronous=FULL on a peer connection and check it."""
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2


def checkpoints(count: int, *, big: str = "") -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Return ``count`` (checkpoint, new_versions) pairs of a chat-like thread.

    Versions are made as LangGraph makes them: one new version per step for
    every channel the step writes, from the saver's ``get_next_version`` (the
    baseline's, ``SqliteSaver``'s; ours has the same format: a zero-padded
    counter and a random fraction).
    """
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.base.id import uuid6
    from langgraph.checkpoint.sqlite import SqliteSaver

    versions = SqliteSaver(sqlite3.connect(":memory:"))
    out = []
    first = versions.get_next_version(None, None)
    current = first
    for step in range(count):
        cp: dict[str, Any] = dict(empty_checkpoint())
        cp["id"] = str(uuid6(clock_seq=step))
        message = {"role": "user", "content": f"message {step:08d}: summarise the attached report"}
        cp["channel_values"] = {"step": step, "last": message}
        cp["channel_versions"] = {"step": current, "last": current}
        new = {"step": current, "last": current}
        if big:
            cp["channel_values"]["big"] = big
            cp["channel_versions"]["big"] = first
            if step == 0:
                new["big"] = first
        out.append((cp, new))
        current = versions.get_next_version(current, None)
    versions.conn.close()
    return out


def put_all(saver: Any, thread: str, items: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
    """Put a chain of checkpoints, one call each."""
    config: Any = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    for step, (cp, new) in enumerate(items):
        config = saver.put(config, cp, {"source": "loop", "step": step, "parents": {}}, new)


def sqlite_saver(path: Path) -> tuple[Any, sqlite3.Connection]:
    """Return a durable SqliteSaver on ``path``."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(str(path), check_same_thread=False)
    saver = SqliteSaver(conn)
    saver.setup()
    durable(conn)
    return saver, conn


def measure_put(directory: Path, count: int, warm: int = 0) -> tuple[float, float, float]:
    """Return puts/s of (ours, SqliteSaver, floor), alternating blocks of 50 puts.

    The floor is the cheapest durable commit there is: a bare apsw one-row
    ``INSERT`` + ``COMMIT`` (WAL, synchronous=FULL), run in the same blocks.
    ``warm`` untimed puts (and floor commits) first bring each WAL to the size
    it keeps from then on: a commit that appends to a growing WAL costs
    several times the fsync of one that overwrites frames of a full one.
    """
    items = checkpoints(warm + count)
    ours = SqlstoreSaver(str(directory / f"put{warm}-ours.db"))
    theirs, conn = sqlite_saver(directory / f"put{warm}-theirs.db")
    floor = bare_sqlite(directory / f"put{warm}-floor.db")
    spent = {"ours": 0.0, "theirs": 0.0, "floor": 0.0}
    try:
        configs: dict[str, Any] = {
            "ours": {"configurable": {"thread_id": "t", "checkpoint_ns": ""}},
            "theirs": {"configurable": {"thread_id": "t", "checkpoint_ns": ""}},
        }
        for name, saver in (("ours", ours), ("theirs", theirs)):
            for step in range(warm):
                cp, new = items[step]
                meta = {"source": "loop", "step": step, "parents": {}}
                configs[name] = saver.put(configs[name], cp, meta, new)
        floor(max(warm, FLOOR_WARM) if warm else 0)
        for start in range(0, count, 50):
            for name, saver in (("ours", ours), ("theirs", theirs)):
                began = time.perf_counter()
                for step in range(warm + start, warm + min(start + 50, count)):
                    cp, new = items[step]
                    meta = {"source": "loop", "step": step, "parents": {}}
                    configs[name] = saver.put(configs[name], cp, meta, new)
                spent[name] += time.perf_counter() - began
            began = time.perf_counter()
            floor(min(start + 50, count) - start)
            spent["floor"] += time.perf_counter() - began
    finally:
        ours.close()
        conn.close()
    return count / spent["ours"], count / spent["theirs"], count / spent["floor"]


async def _aput_tasks(saver: Any, tasks: int, each: int) -> float:
    items = checkpoints(each)

    async def one(task: int) -> None:
        config: Any = {"configurable": {"thread_id": f"t{task}", "checkpoint_ns": ""}}
        for step, (cp, new) in enumerate(items):
            cp = dict(cp, id=f"{task:02d}-{cp['id']}")
            meta = {"source": "loop", "step": step, "parents": {}}
            config = await saver.aput(config, cp, meta, new)

    began = time.perf_counter()
    await asyncio.gather(*(one(t) for t in range(tasks)))
    return tasks * each / (time.perf_counter() - began)


def measure_aput(directory: Path, tasks: int, each: int) -> tuple[float, float]:
    """Return aputs/s of (ours, AsyncSqliteSaver) with ``tasks`` concurrent tasks."""
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    async def theirs() -> float:
        async with AsyncSqliteSaver.from_conn_string(str(directory / "aput-theirs.db")) as saver:
            await saver.setup()
            await saver.conn.execute("PRAGMA synchronous=FULL")
            async with saver.conn.execute("PRAGMA synchronous") as cur:
                row = await cur.fetchone()
            assert row is not None and row[0] == 2
            return await _aput_tasks(saver, tasks, each)

    async def ours() -> float:
        async with SqlstoreSaver.from_conn_string(directory / "aput-ours.db") as saver:
            return await _aput_tasks(saver, tasks, each)

    return asyncio.run(ours()), asyncio.run(theirs())


def measure_list(directory: Path, count: int) -> tuple[float, float, float]:
    """Return checkpoints listed per second (ours, SqliteSaver, floor) on a ``count``-step thread.

    The floor is the least a Python listing can do: one apsw ``SELECT`` of one
    JSON text per checkpoint (the texts ours reads, ~400 bytes each), one
    ``json.loads`` each and a ``CheckpointTuple`` built from it.
    """
    items = checkpoints(count)
    ours = SqlstoreSaver(str(directory / "list-ours.db"))
    theirs, conn = sqlite_saver(directory / "list-theirs.db")
    rates = []
    try:
        for saver in (ours, theirs):
            put_all(saver, "t", items)
            for tup in list(saver.list({"configurable": {"thread_id": "t"}})):
                writes = [(f"ch{i}", f"value {i}") for i in range(LIST_WRITES)]
                saver.put_writes(tup.config, writes, "task")
        floor = floor_lister(directory / "list-floor.db", ours)
        for run in (
            lambda: sum(1 for _ in ours.list({"configurable": {"thread_id": "t"}})),
            lambda: sum(1 for _ in theirs.list({"configurable": {"thread_id": "t"}})),
            floor,
        ):
            best = []
            for _ in range(3):
                began = time.perf_counter()
                got = run()
                best.append(got / (time.perf_counter() - began))
                assert got == count
            rates.append(median(best))
    finally:
        ours.close()
        conn.close()
    return rates[0], rates[1], rates[2]


def floor_lister(path: Path, ours: SqlstoreSaver) -> Callable[[], int]:
    """Return a runner of the listing floor over a copy of the texts of ours' thread."""
    from langgraph.checkpoint.base import CheckpointTuple

    texts = []
    after = None
    query = CheckpointQuery(thread_id="t")
    while True:
        page = ours.checkpoints.documents(query, after=after)
        texts += [(d.checkpoint_id, d.parent_id, d.text) for d in page.documents]
        if page.next is None:
            break
        after = page.next
    conn = apsw.Connection(str(path))
    conn.execute("CREATE TABLE docs (id TEXT PRIMARY KEY, parent TEXT, doc TEXT) WITHOUT ROWID")
    with conn:
        conn.executemany("INSERT INTO docs VALUES (?, ?, ?)", texts)

    def config(checkpoint_id: str) -> dict[str, Any]:
        return {
            "configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": checkpoint_id}
        }

    def run() -> int:
        listed = 0
        for checkpoint_id, parent, doc in conn.execute(
            "SELECT id, parent, doc FROM docs ORDER BY id DESC"
        ):
            checkpoint, values, metadata, writes = json.loads(doc)
            checkpoint["channel_values"] = values
            CheckpointTuple(
                config(checkpoint_id),
                checkpoint,
                metadata,
                None if parent is None else config(parent),
                [(task, channel, value) for task, channel, value in writes],
            )
            listed += 1
        return listed

    return run


def file_bytes(path: Path) -> int:
    """Checkpoint the WAL into the file (TRUNCATE) and return database + WAL bytes."""
    conn = sqlite3.connect(str(path))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    wal = path.with_name(path.name + "-wal")
    return path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


def measure_size(directory: Path, steps: int) -> tuple[int, int]:
    """Return file bytes (ours, SqliteSaver) after ``steps`` with an unchanged 100 KB channel."""
    items = checkpoints(steps, big="x" * BIG_BYTES)
    ours = SqlstoreSaver(str(directory / "size-ours.db"))
    put_all(ours, "t", items)
    ours.close()
    theirs, conn = sqlite_saver(directory / "size-theirs.db")
    put_all(theirs, "t", items)
    conn.close()
    return file_bytes(directory / "size-ours.db"), file_bytes(directory / "size-theirs.db")


def main() -> None:
    """Measure, print and (with --json) write the result."""
    parser: argparse.ArgumentParser = make_parser(__doc__ or "")
    parser.add_argument("--puts", type=int, default=None, help="puts per repetition")
    parser.add_argument("--tasks", type=int, default=None, help="concurrent aput tasks")
    parser.add_argument("--listed", type=int, default=None, help="checkpoints in the listed thread")
    args = parser.parse_args()
    size = sizes(
        args,
        full={
            "puts": 1000,
            "warm": 600,
            "tasks": 8,
            "each": 100,
            "listed": 1000,
            "steps": SIZE_STEPS,
        },
        quick={"puts": 20, "warm": 5, "tasks": 2, "each": 5, "listed": 20, "steps": 5},
    )
    got: dict[str, list[tuple[float, float]]] = {
        "put": [],
        "steady": [],
        "aput": [],
        "list": [],
        "size": [],
    }
    floors: dict[str, list[tuple[float, float]]] = {"steady": [], "list": []}
    with work_dir(args, "langgraph") as directory:
        for rep in range(size["reps"]):
            rep_dir = directory / f"rep{rep}"
            rep_dir.mkdir()
            ours, theirs, _ = measure_put(rep_dir, size["puts"])
            got["put"].append((ours, theirs))
            ours, theirs, floor = measure_put(rep_dir, size["puts"], size["warm"])
            got["steady"].append((ours, theirs))
            floors["steady"].append((floor, theirs))
            got["aput"].append(measure_aput(rep_dir, size["tasks"], size["each"]))
            ours, theirs, floor = measure_list(rep_dir, size["listed"])
            got["list"].append((ours, theirs))
            floors["list"].append((floor, theirs))
            got["size"].append(measure_size(rep_dir, size["steps"]))
    result = Result("langgraph_saver", "LangGraph checkpointer vs LangGraph's SQLite savers", size)
    goals: dict[str, tuple[str, float | None]] = {
        "put": ("`put`, one thread, new files (vs `SqliteSaver.put`)", 1.2),
        "steady": (
            f"`put`, one thread, after {size['warm']} puts (each WAL at its working size)",
            None,
        ),
        "aput": (f"`aput` from {size['tasks']} tasks (vs `AsyncSqliteSaver.aput`)", 3.0),
        "list": (f"`list` of a {size['listed']}-checkpoint thread (vs `SqliteSaver.list`)", 5.0),
    }
    floor_labels = {
        "steady": "floor: bare one-row durable commit (apsw, WAL, FULL), same WAL state, "
        "vs `SqliteSaver.put`",
        "list": "floor: `SELECT` of one JSON text + `json.loads` + `CheckpointTuple` each, "
        "vs `SqliteSaver.list`",
    }
    for key, (label, goal) in goals.items():
        ratio = median([o / t for o, t in got[key]])
        result.rows.append(
            Row(
                label,
                rate(median([o for o, _ in got[key]])),
                rate(median([t for _, t in got[key]])),
                times(ratio),
                "report" if goal is None else f">= {goal}x",
                None if goal is None else ratio >= goal,
            )
        )
        if key in floors:
            pairs = floors[key]
            result.rows.append(
                Row(
                    floor_labels[key],
                    rate(median([f for f, _ in pairs])),
                    rate(median([t for _, t in pairs])),
                    times(median([f / t for f, t in pairs])),
                    "report",
                    None,
                    note="the most any implementation of this measure could reach here",
                )
            )
    ratio = median([o / t for o, t in got["size"]])
    result.rows.append(
        Row(
            f"file size after {size['steps']} steps, unchanged 100 KB channel",
            f"{median([o for o, _ in got['size']]) / 1e6:.2f} MB",
            f"{median([t for _, t in got['size']]) / 1e6:.2f} MB",
            times(ratio),
            "<= 0.1x",
            ratio <= 0.1,
        )
    )
    result.details = {key: [list(pair) for pair in pairs] for key, pairs in got.items()}
    result.details["floors"] = {
        key: [list(pair) for pair in pairs] for key, pairs in floors.items()
    }
    result.notes.append(
        "Both sides durable: sqlstore durability='full'; LangGraph's savers with WAL and "
        "PRAGMA synchronous=FULL set and read back."
    )
    emit(result, args)


if __name__ == "__main__":
    main()
