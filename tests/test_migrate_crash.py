"""Crash safety of ``sqlstore migrate``: kill -9 / SIGINT mid-import, then resume (§6)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import apsw
import pytest

from sqlstore import SQLiteStore
from sqlstore.migrate import run_migration

REPO = Path(__file__).resolve().parents[1]
RUNS = 600
MESSAGES_PER_RUN = 1 + 2 * 6  # user prompt + six request/response pairs
EVENTS_PER_RUN = 6 + 1  # one tool event per call + the result
CHILD = """
import sys
from sqlstore import SQLiteStore
from sqlstore.migrate import run_migration
with SQLiteStore(sys.argv[1]) as store:
    try:
        run_migration(store, sys.argv[2], batch_sessions=2)
    except KeyboardInterrupt:
        sys.exit(130)
"""


def make_runs(folder: Path) -> None:
    """Write RUNS run logs, each with six tool-call pairs and a result."""
    folder.mkdir()
    for index in range(RUNS):
        run_id = f"20261201-{index:06d}"
        at = "2026-12-01T00:00:00Z"
        lines = [{"kind": "meta", "at": at, "meta": {"id": run_id, "task": f"task {index}"}}]
        lines.append({"kind": "message", "at": at, "message": {"type": "user", "text": "go"}})
        for call in range(6):
            request = {"kind": "request", "id": f"c{call}", "name": "bash", "arguments": "{}"}
            response = {
                "kind": "response",
                "id": f"c{call}",
                "name": "bash",
                "result": "ok" * 40,
                "failure": "",
            }
            lines.append(
                {
                    "kind": "message",
                    "at": at,
                    "message": {"type": "activity", "text": "", "activity": request},
                }
            )
            lines.append({"kind": "event", "at": at, "event": {"kind": "tool", "tool": "bash"}})
            lines.append(
                {
                    "kind": "message",
                    "at": at,
                    "message": {"type": "activity", "text": "", "activity": response},
                }
            )
        lines.append({"kind": "result", "at": at, "result": {"reason": "done", "code": 0}})
        (folder / f"{run_id}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


def committed_items(db: Path) -> int:
    """Count checkpoint rows committed so far (0 while the file or schema is not there yet)."""
    if not db.exists():
        return 0
    try:
        conn = apsw.Connection(os.fspath(db), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            row = conn.execute("SELECT count(*) FROM migration_items").fetchone()
        finally:
            conn.close()
    except apsw.Error:
        return 0
    return 0 if row is None else int(row[0])


def interrupt_mid_import(db: Path, source: Path, sig: int, at_least: int) -> int:
    """Start an import in a child process and send ``sig`` once ``at_least`` items committed."""
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, os.fspath(db), os.fspath(source)], cwd=REPO
    )
    deadline = time.monotonic() + 120
    try:
        while committed_items(db) < at_least:
            assert child.poll() is None, "the import ended before it could be interrupted"
            assert time.monotonic() < deadline, "the import made no progress"
            time.sleep(0.005)
        child.send_signal(sig)
        code = child.wait(timeout=60)
        assert code == (130 if sig == signal.SIGINT else -sig)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    return committed_items(db)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["kill-9", "sigint"])
def test_interrupted_import_resumes_with_nothing_lost_or_duplicated(
    tmp_path: Path, sig: int
) -> None:
    """Two interrupted runs then a full run import every session exactly once."""
    source = tmp_path / "runs"
    make_runs(source)
    db = tmp_path / "s.db"
    first = interrupt_mid_import(db, source, sig, at_least=20)
    assert 20 <= first < RUNS
    second = interrupt_mid_import(db, source, sig, at_least=first + 20)
    assert first < second < RUNS
    with SQLiteStore(db) as store:
        report = run_migration(store, source, verify=True)
        assert report.ok, report.to_json()
        assert report.skipped["already_imported"] == second
        assert report.imported + report.skipped["already_imported"] == RUNS
        ids = [s.id for s in store.sessions.list()]
        assert len(ids) == len(set(ids)) == RUNS
        for session_id in ids:
            assert len(store.sessions.load(session_id).messages) == MESSAGES_PER_RUN
            assert sum(1 for _ in store.events.read_after(session_id)) == EVENTS_PER_RUN
            assert len(store.audit.list(session_id)) == 6
    assert committed_items(db) == RUNS
