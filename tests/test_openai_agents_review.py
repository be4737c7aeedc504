"""``SqlstoreSession`` under hostile use found in review: ``clear_session`` in one process
racing ``add_items`` in another, with tool calls audited and counted."""

from __future__ import annotations

import asyncio
import multiprocessing
from pathlib import Path
from typing import Any

import pytest

TIMEOUT_S = 120.0
"""Upper bound for any wait on a child process (never a timing assertion)."""

BATCHES = 40
CLEARS = 15


def batch(who: str, n: int) -> list[dict[str, Any]]:
    """Return one turn: a user message, a function call and its output (one audit row)."""
    call = f"{who}{n}"
    return [
        {"role": "user", "content": f"{who}{n} question"},
        {"type": "function_call", "call_id": call, "name": "look", "arguments": "{}"},
        {"type": "function_call_output", "call_id": call, "output": f"{who}{n} answer"},
    ]


def adder(db: str, start: Any) -> None:
    """Child: add BATCHES turns, one add_items each."""
    from sqlstore.integrations.openai_agents import SqlstoreSession

    async def main() -> None:
        session = SqlstoreSession("raced", db)
        try:
            start.wait(TIMEOUT_S)
            for n in range(BATCHES):
                await session.add_items(batch("a", n))
        finally:
            session.close()

    asyncio.run(main())


def clearer(db: str, start: Any) -> None:
    """Child: clear the session and add one turn of its own, CLEARS times."""
    from sqlstore.integrations.openai_agents import SqlstoreSession

    async def main() -> None:
        session = SqlstoreSession("raced", db)
        try:
            start.wait(TIMEOUT_S)
            for n in range(CLEARS):
                await session.clear_session()
                await session.add_items(batch("b", n))
        finally:
            session.close()

    asyncio.run(main())


@pytest.mark.slow
def test_clear_racing_add_in_two_processes_keeps_the_session_consistent(tmp_path: Path) -> None:
    """Whatever order the clears and adds land in, turns come whole and counts match the log."""
    db = str(tmp_path / "raced.db")
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager:
        start = manager.Event()
        with ctx.Pool(2) as pool:
            jobs = [pool.apply_async(f, (db, start)) for f in (adder, clearer)]
            start.set()
            for job in jobs:
                job.get(TIMEOUT_S)

    import sqlstore
    from sqlstore.integrations.openai_agents import SqlstoreSession

    session = SqlstoreSession("raced", db)
    items = asyncio.run(session.get_items())
    session.close()
    assert len(items) % 3 == 0
    turns = [items[i : i + 3] for i in range(0, len(items), 3)]
    for turn in turns:  # every add_items is all or nothing
        who_n = turn[0]["content"].split()[0]
        assert turn == batch(who_n[0], int(who_n[1:]))
    last_b = max(int(t[0]["content"].split()[0][1:]) for t in turns if t[0]["content"][0] == "b")
    assert last_b == CLEARS - 1  # the last clear was followed by the clearer's own turn
    with sqlstore.open(db) as store:
        meta = store.sessions.meta("raced")
        audit = store.audit.list("raced")
        records = list(store.events.read("raced"))
    assert meta.turns == len(turns)
    assert len(records) == len(items)  # nothing of a cleared generation is left in the log
    assert sorted(a.call_id for a in audit) == sorted(t[1]["call_id"] for t in turns)


HOSTILE = "\x1b]0;PWNED\x07\x1b[2J\x9b31m\u202eevil\u2066"
"""Terminal title and clear-screen sequences, a C1 CSI, and bidi overrides (text spoofing)."""

RAW_CONTROLS = ("\x1b", "\x07", "\x9b", "\u202e", "\u2066")


def read_pty(argv: list[str]) -> tuple[int, str]:
    """Run ``argv`` with stdout and stderr on a real pseudo-terminal; return status and output."""
    import os
    import pty
    import subprocess

    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdout=slave, stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    return proc.wait(TIMEOUT_S), out.decode("utf-8", errors="replace")


def test_hostile_item_text_is_escaped_on_a_terminal(tmp_path: Path) -> None:
    """ls, show, events and audit of an Agents session print hostile item text escaped, on a pty."""
    import shutil
    import sys

    from sqlstore.integrations.openai_agents import SqlstoreSession

    db = str(tmp_path / "hostile.db")
    session = SqlstoreSession("conv-1", db)
    call = "c" + HOSTILE
    items = [
        {"role": "user", "content": "hi " + HOSTILE},
        {"type": "function_call", "call_id": call, "name": "t" + HOSTILE, "arguments": "{}"},
        {"type": "function_call_output", "call_id": call, "output": "out " + HOSTILE},
        {"role": "assistant", "content": [{"type": "output_text", "text": "ans " + HOSTILE}]},
    ]
    asyncio.run(session.add_items(items))
    session.close()
    beside = Path(sys.executable).parent / "sqlstore"
    exe = str(beside) if beside.exists() else shutil.which("sqlstore")
    assert exe, "the sqlstore console script is not installed"
    for command in (["ls"], ["show", "conv-1"], ["events", "conv-1"], ["audit", "conv-1"]):
        status, out = read_pty([exe, "--db", db, *command])
        assert status == 0, (command, out)
        assert "PWNED" in out, (command, out)  # the text is shown...
        raw = [hex(ord(c)) for c in RAW_CONTROLS if c in out]
        assert raw == [], (command, raw)  # ...but no control character reaches the terminal
