"""Checkpoints never make agents wait for readers (issue 20, item 8).

A WAL checkpoint in TRUNCATE (or RESTART/FULL) mode takes the write lock and
then waits for every reader to reach the newest snapshot; while one reader
kept an old read transaction open (a long `ls`, a `backup`, a viewer), the
final checkpoint of `vacuum --incremental` and of every sweep that deleted
something held the lock for the whole busy timeout, and agents appending
meanwhile got ``StoreBusy``. Here a reader process holds a read transaction
open and an appender process appends with a 2 s busy timeout while
`sqlstore vacuum --incremental` (the console script), the library's
incremental `vacuum` and a retention sweep run: the appender must never see
``StoreBusy`` (no timing is asserted).
"""

from __future__ import annotations

import subprocess
from datetime import timedelta
from pathlib import Path

import pytest

import retention
from sqlstore import Event, Session, SQLiteStore, clock
from sqlstore.sqlite.maintenance import vacuum

from .helpers import spawn

pytestmark = pytest.mark.slow

TIMEOUT_S = 120.0
"""Upper bound for any wait on a child process (never a timing assertion)."""


def _seed(db: Path, sessions: int, events: int) -> None:
    with SQLiteStore(db, durability="normal") as store:
        for index in range(sessions):
            sid = f"old{index}"
            store.sessions.save(Session.new(sid))
            for n in range(events):
                store.events.append_event(sid, Event("message", text="x" * 200 + str(n)))


def _wait_for(proc: subprocess.Popen[str], prefix: str) -> str:
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        assert line, f"child ended before {prefix!r}: {proc.stderr.read() if proc.stderr else ''}"
        if line.startswith(prefix):
            return line


def test_maintenance_never_blocks_an_appender_behind_an_open_reader(tmp_path: Path) -> None:
    """Incremental vacuum (CLI, library) and a sweep beside an open reader never stall appends."""
    from tests.test_cli_process import console_script

    db = tmp_path / "stall.db"
    _seed(db, 100, 10)
    appender = spawn("steady", str(db), "2000", stdin=subprocess.PIPE)
    reader = spawn("holdread", str(db), stdin=subprocess.PIPE)
    try:
        _wait_for(appender, "FLOWING")
        _wait_for(reader, "READING")  # its snapshot is older than every append from now on
        done = subprocess.run(
            [console_script(), "--db", str(db), "vacuum", "--incremental"],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
        assert done.returncode == 0, done.stderr
        with SQLiteStore(db) as store:
            policy = retention.Policy(
                main=retention.Rule(max_age=timedelta(hours=1)), acknowledge_main_deletion=True
            )
            plan = retention.plan(store, policy, now=clock.now() + timedelta(days=1))
            report = retention.sweep(store, plan)
            assert report.deleted >= 100 and report.ok, report
            vacuum(store, incremental=True)
        assert reader.poll() is None, "the reader must still hold its transaction"
    finally:
        reader.communicate(input="go\n", timeout=TIMEOUT_S)
        out, err = appender.communicate(input="", timeout=TIMEOUT_S)
    busy = [line for line in out.splitlines() if line.startswith("BUSY")]
    assert busy == [], (busy[:3], err)
    assert any(line.startswith("DONE") for line in out.splitlines()), err
