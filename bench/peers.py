"""One item per call, durably: sqlstore against the OpenAI Agents SDK and LangGraph SQLite stores.

Run: ``python bench/peers.py [--items N] [--quick] [--no-peers]``.

The peers are optional bench dependencies, never runtime ones. Install them into
the bench environment with::

    .venv/bin/pip install -r bench/requirements-bench.txt

Each repetition writes ``--items`` items one call at a time into each store
(each in a fresh file in the same directory), alternating between the stores in
blocks of ``--block`` items so all see the same moments of a noisy machine:

* ours: ``store.events.append_event`` of the item as an event's ``data``
  (``SQLiteStore``, ``durability="full"``: WAL, ``synchronous=FULL``);
* OpenAI Agents SDK: ``await SQLiteSession.add_items([item])`` (WAL; we set
  ``PRAGMA synchronous=FULL`` on each of its connections, which is also the
  default of Python's sqlite3, and read it back);
* LangGraph: ``SqliteSaver.put`` of a checkpoint whose channel values hold the
  item (WAL via ``setup()``; we open its ``sqlite3`` connection and set
  ``PRAGMA synchronous=FULL``, read back).

Reported: ours ÷ theirs in items/s (> 1 means ours is faster).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import sqlite3
import uuid
from pathlib import Path
from typing import Any

from harness import (
    Result,
    Row,
    emit,
    interleave,
    make_parser,
    median,
    rate,
    sizes,
    times,
    work_dir,
)

from sqlstore import Event, Session, SQLiteStore

INSTALL_HINT = (
    "peer stores not installed; install them with: "
    ".venv/bin/pip install -r bench/requirements-bench.txt"
)
WARM_UP_ITEMS = 5
PEER_MODULES = {
    "agents": "openai-agents",
    "langgraph.checkpoint.sqlite": "langgraph-checkpoint-sqlite",
}


def item(i: int) -> dict[str, Any]:
    """Return one conversation item (a user message, about 150 bytes of JSON)."""
    return {"role": "user", "content": f"message {i:08d}: please summarise the attached report"}


def missing_peers() -> list[str]:
    """Return the pip names of the peer packages that cannot be imported."""
    missing = []
    for module, package in PEER_MODULES.items():
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            missing.append(package)
    return missing


class Ours:
    """sqlstore: ``append_event`` of the item as the event's ``data``."""

    def __init__(self, directory: Path, items: list[dict[str, Any]]) -> None:
        self.items = items
        self.at = 0
        self.store = SQLiteStore(directory / "ours.db")
        self.store.sessions.create(Session.new("bench-peer"))

    def write(self, count: int) -> None:
        """Write the next ``count`` items, one call each."""
        append = self.store.events.append_event
        for i in range(self.at, self.at + count):
            append("bench-peer", Event("message", i, 1, "", "", self.items[i]))
        self.at += count

    def close(self) -> None:
        """Close the store."""
        self.store.close()


class OpenAIAgents:
    """OpenAI Agents SDK: ``await SQLiteSession.add_items([item])``."""

    def __init__(self, directory: Path, items: list[dict[str, Any]]) -> None:
        from agents.memory.sqlite_session import SQLiteSession

        class DurableSession(SQLiteSession):
            @staticmethod
            def _configure_connection(conn: sqlite3.Connection) -> None:
                SQLiteSession._configure_connection(conn)
                conn.execute("PRAGMA synchronous=FULL")
                check_durable(conn, "agents SDK")

        self.items = items
        self.at = 0
        self.loop = asyncio.new_event_loop()
        self.session = DurableSession("bench-peer", str(directory / "agents.db"))

    def write(self, count: int) -> None:
        """Write the next ``count`` items, one call each."""
        add = self.session.add_items

        async def run() -> None:
            for i in range(self.at, self.at + count):
                await add([self.items[i]])  # type: ignore[list-item]

        self.loop.run_until_complete(run())
        self.at += count

    def close(self) -> None:
        """Close the session and the event loop."""
        self.session.close()
        self.loop.close()


class LangGraph:
    """LangGraph: ``SqliteSaver.put`` of a checkpoint whose channel values hold the item."""

    def __init__(self, directory: Path, items: list[dict[str, Any]]) -> None:
        from langgraph.checkpoint.base import empty_checkpoint
        from langgraph.checkpoint.sqlite import SqliteSaver

        self.conn = sqlite3.connect(str(directory / "langgraph.db"), check_same_thread=False)
        self.saver = SqliteSaver(self.conn)
        self.saver.setup()
        self.conn.execute("PRAGMA synchronous=FULL")
        check_durable(self.conn, "langgraph")
        self.checkpoints = []
        for one in items:
            checkpoint = empty_checkpoint()
            checkpoint["id"] = str(uuid.uuid1())
            checkpoint["channel_values"] = {"messages": [one]}
            self.checkpoints.append(checkpoint)
        self.config: Any = {"configurable": {"thread_id": "bench-peer", "checkpoint_ns": ""}}
        self.at = 0

    def write(self, count: int) -> None:
        """Write the next ``count`` checkpoints, one call each."""
        for i in range(self.at, self.at + count):
            self.config = self.saver.put(self.config, self.checkpoints[i], {"step": i}, {})
        self.at += count

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()


def check_durable(conn: sqlite3.Connection, who: str) -> None:
    """Raise unless the connection is in WAL mode with synchronous=FULL."""
    level = conn.execute("PRAGMA synchronous").fetchone()[0]
    mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    if level != 2 or mode != "wal":
        raise RuntimeError(f"{who} connection is journal_mode={mode}, synchronous={level}")


def one_rep(directory: Path, count: int, block: int, peers: bool) -> dict[str, float]:
    """Return items/s of each store, written in alternating blocks of ``block`` items."""
    items = [item(i) for i in range(count + WARM_UP_ITEMS)]
    kinds: dict[str, Any] = {"ours": Ours}
    if peers:
        kinds |= {"agents": OpenAIAgents, "langgraph": LangGraph}
    opened: dict[str, Any] = {}
    try:
        for name, kind in kinds.items():
            opened[name] = kind(directory, items)
            opened[name].write(WARM_UP_ITEMS)
        return interleave({name: s.write for name, s in opened.items()}, count, block)
    finally:
        for store in opened.values():
            store.close()


def main() -> None:
    """Measure, print and (with --json) write the result."""
    parser: argparse.ArgumentParser = make_parser(__doc__ or "")
    parser.add_argument("--items", type=int, default=None, help="items per repetition")
    parser.add_argument(
        "--no-peers", action="store_true", help="measure only sqlstore (peers not needed)"
    )
    parser.add_argument("--block", type=int, default=None, help="items per alternation")
    args = parser.parse_args()
    size = sizes(args, full={"items": 2000, "block": 100}, quick={"items": 20, "block": 5})
    missing = [] if args.no_peers else missing_peers()
    skip = args.no_peers or bool(missing)
    if missing:
        print(f"{INSTALL_HINT} (missing: {', '.join(missing)})")
    mine: list[float] = []
    theirs: dict[str, list[float]] = {"agents": [], "langgraph": []}
    with work_dir(args, "peers") as directory:
        for rep in range(size["reps"]):
            rep_dir = directory / f"rep{rep}"
            rep_dir.mkdir()
            got = one_rep(rep_dir, size["items"], size["block"], not skip)
            mine.append(got["ours"])
            for name in theirs:
                if name in got:
                    theirs[name].append(got[name])
    goal = "ours faster (> 1x)"
    names = {
        "agents": "OpenAI Agents SDK `SQLiteSession.add_items`",
        "langgraph": "LangGraph `SqliteSaver.put`",
    }
    result = Result("peers", "peers, one item per call, durable", size)
    for key, label in names.items():
        measure = f"vs {label}, one item per call"
        if skip:
            why = "--no-peers given" if args.no_peers else INSTALL_HINT
            result.rows.append(
                Row(
                    measure,
                    f"{rate(median(mine))} (peer not measured: {why})",
                    "—",
                    "—",
                    goal,
                    None,
                )
            )
            continue
        ratios = [o / t for o, t in zip(mine, theirs[key], strict=True)]
        ratio = median(ratios)
        result.rows.append(
            Row(
                measure,
                rate(median(mine)),
                rate(median(theirs[key])),
                times(ratio),
                goal,
                ratio > 1,
            )
        )
    result.details = {"ours_per_s": mine, **{f"{k}_per_s": v for k, v in theirs.items()}}
    if not skip:
        result.notes.append(
            "Peers configured durably: WAL with PRAGMA synchronous=FULL set and read back on "
            "every peer connection (Python's sqlite3 default is FULL already)."
        )
    emit(result, args)


if __name__ == "__main__":
    main()
