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
import sqlite3
import time
from pathlib import Path
from typing import Any

from harness import Result, Row, emit, make_parser, median, rate, sizes, times, work_dir

from sqlstore.integrations.langgraph import SqlstoreSaver

BIG_BYTES = 100_000
SIZE_STEPS = 200
LIST_WRITES = 2


def durable(conn: sqlite3.Connection) -> None:
    """Set WAL + synchronous=FULL on a peer connection and check it."""
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2


def checkpoints(count: int, *, big: str = "") -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Return ``count`` (checkpoint, new_versions) pairs of a chat-like thread."""
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.base.id import uuid6

    out = []
    for step in range(count):
        cp: dict[str, Any] = dict(empty_checkpoint())
        cp["id"] = str(uuid6(clock_seq=step))
        message = {"role": "user", "content": f"message {step:08d}: summarise the attached report"}
        cp["channel_values"] = {"step": step, "last": message}
        cp["channel_versions"] = {"step": step + 1, "last": step + 1}
        new = {"step": step + 1, "last": step + 1}
        if big:
            cp["channel_values"]["big"] = big
            cp["channel_versions"]["big"] = 1
            if step == 0:
                new["big"] = 1
        out.append((cp, new))
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


def measure_put(directory: Path, count: int) -> tuple[float, float]:
    """Return puts/s of (ours, SqliteSaver), alternating blocks of 50 puts."""
    items = checkpoints(count)
    ours = SqlstoreSaver(str(directory / "put-ours.db"))
    theirs, conn = sqlite_saver(directory / "put-theirs.db")
    spent = {"ours": 0.0, "theirs": 0.0}
    try:
        configs: dict[str, Any] = {
            "ours": {"configurable": {"thread_id": "t", "checkpoint_ns": ""}},
            "theirs": {"configurable": {"thread_id": "t", "checkpoint_ns": ""}},
        }
        for start in range(0, count, 50):
            for name, saver in (("ours", ours), ("theirs", theirs)):
                began = time.perf_counter()
                for step in range(start, min(start + 50, count)):
                    cp, new = items[step]
                    meta = {"source": "loop", "step": step, "parents": {}}
                    configs[name] = saver.put(configs[name], cp, meta, new)
                spent[name] += time.perf_counter() - began
    finally:
        ours.close()
        conn.close()
    return count / spent["ours"], count / spent["theirs"]


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


def measure_list(directory: Path, count: int) -> tuple[float, float]:
    """Return checkpoints listed per second (ours, SqliteSaver) on a ``count``-step thread."""
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
        for saver in (ours, theirs):
            best = []
            for _ in range(3):
                began = time.perf_counter()
                got = sum(1 for _ in saver.list({"configurable": {"thread_id": "t"}}))
                best.append(got / (time.perf_counter() - began))
                assert got == count
            rates.append(median(best))
    finally:
        ours.close()
        conn.close()
    return rates[0], rates[1]


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
        full={"puts": 1000, "tasks": 8, "each": 100, "listed": 1000, "steps": SIZE_STEPS},
        quick={"puts": 20, "tasks": 2, "each": 5, "listed": 20, "steps": 5},
    )
    got: dict[str, list[tuple[float, float]]] = {"put": [], "aput": [], "list": [], "size": []}
    with work_dir(args, "langgraph") as directory:
        for rep in range(size["reps"]):
            rep_dir = directory / f"rep{rep}"
            rep_dir.mkdir()
            got["put"].append(measure_put(rep_dir, size["puts"]))
            got["aput"].append(measure_aput(rep_dir, size["tasks"], size["each"]))
            got["list"].append(measure_list(rep_dir, size["listed"]))
            got["size"].append(measure_size(rep_dir, size["steps"]))
    result = Result("langgraph_saver", "LangGraph checkpointer vs LangGraph's SQLite savers", size)
    goals = {
        "put": ("`put`, one thread (vs `SqliteSaver.put`)", 1.2),
        "aput": (f"`aput` from {size['tasks']} tasks (vs `AsyncSqliteSaver.aput`)", 3.0),
        "list": (f"`list` of a {size['listed']}-checkpoint thread (vs `SqliteSaver.list`)", 5.0),
    }
    for key, (label, goal) in goals.items():
        ratio = median([o / t for o, t in got[key]])
        result.rows.append(
            Row(
                label,
                rate(median([o for o, _ in got[key]])),
                rate(median([t for _, t in got[key]])),
                times(ratio),
                f">= {goal}x",
                ratio >= goal,
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
    result.notes.append(
        "Both sides durable: sqlstore durability='full'; LangGraph's savers with WAL and "
        "PRAGMA synchronous=FULL set and read back."
    )
    emit(result, args)


if __name__ == "__main__":
    main()
