"""Stored text and file names never reach a terminal raw (issue 20, item 12).

Each command runs through the installed ``sqlstore`` script on a real
pseudo-terminal (click strips escapes only when output is piped). The store
holds ids, tool names, call ids and file names carrying an OSC title escape, a
screen clear, a C1 CSI and a bell; none may arrive raw.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from freezegun import freeze_time
from reliability.helpers import run_in_pty

from sqlstore import Event, Kind, Relationship, Session, SQLiteStore, ToolCallRecord

SQLSTORE = Path(sys.executable).with_name("sqlstore")
EVIL = "ev\x1b]0;PWNED\x07il\x1b[2J\x9b2J/x"
"""An id with a terminal-title escape, a clear-screen, a C1 CSI, a bell and a slash."""

RAW = [b"\x1b]0;PWNED", b"\x1b[2J", b"\xc2\x9b2J", b"\x07"]


def assert_no_raw_escapes(out: bytes) -> None:
    """Fail when any of the hostile sequences reached the terminal unescaped."""
    found = [seq for seq in RAW if seq in out]
    assert not found, f"raw escapes {found} in {out!r}"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A store with one hostile session (old, with an audit row) and one plain one."""
    path = tmp_path / "s.db"
    with freeze_time(datetime(2026, 1, 1, tzinfo=UTC)), SQLiteStore(path) as store:
        store.sessions.save(Session.new("plain"))
        link = Relationship(parent_session_id="plain", call_id="call-1")
        store.sessions.save(Session.new(EVIL, kind=Kind.SUBAGENT, relationship=link))
        for sid in (EVIL, "plain"):
            store.events.append_event(sid, Event("message", text=EVIL))
        store.audit.record(
            ToolCallRecord(
                session_id=EVIL,
                tool="bash\x1b]0;PWNED\x07",
                call_id="c\x1b[2J\x9b2J",
                args=EVIL,
                result=EVIL,
                at=datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=1),
            )
        )
    return path


@pytest.mark.parametrize(
    "args",
    [
        ["audit", EVIL],
        ["prune", "--older-than", "1d", "--dry-run"],
        ["retention", "plan"],
        ["export", "--format", "runlog", "--out", "out", "--all"],
    ],
    ids=["audit", "prune-dry-run", "retention-plan", "export-failed"],
)
def test_listed_commands_escape_stored_text_on_a_terminal(
    db: Path, args: list[str], tmp_path: Path
) -> None:
    """audit, prune --dry-run, retention plan and export's failed: lines print escapes escaped."""
    status, out = run_in_pty([SQLSTORE, "--db", db, *args], cwd=tmp_path)
    assert status in (0, 1), out
    assert b"PWNED" in out  # the text is shown, only made harmless
    assert_no_raw_escapes(out)


def test_rm_prompt_and_deleted_line_escape_the_id(db: Path, tmp_path: Path) -> None:
    """The ``rm`` confirmation prompt and its ``Deleted`` line show the id escaped."""
    status, out = run_in_pty([SQLSTORE, "--db", db, "rm", EVIL], cwd=tmp_path, answer=b"y\n")
    assert status == 0, out
    assert out.count(b"PWNED") >= 2  # prompt and Deleted line
    assert_no_raw_escapes(out)
    with SQLiteStore(db, readonly=True) as store:
        assert [s.id for s in store.sessions.list()] == ["plain"]


def test_migrate_failed_lines_escape_source_file_names(tmp_path: Path) -> None:
    """A source file named with escapes (and bad UTF-8) is printed escaped in ``failed:``."""
    source = tmp_path / "runs"
    source.mkdir()
    name = b"run\x1b]0;PWNED\x07\x1b[2J\xff.jsonl"
    with open(bytes(source) + b"/" + name, "wb") as handle:
        handle.write(b'{"kind":"meta","at":"2026-01-01T00:00:00Z","meta":{}}\n')
    status, out = run_in_pty([SQLSTORE, "--db", tmp_path / "s.db", "migrate", source])
    assert status == 1, out
    assert b"failed: run" in out and b"PWNED" in out
    assert_no_raw_escapes(out)
