"""Terminal escapes in every printed field, on a real pseudo-terminal (issue 20, item 12).

A store whose every text field (ids, titles, labels, owners, models, message
text, reasoning, tool names and arguments, event types and text, audit tool,
call id, args and result) carries an OSC title escape, a clear-screen, a C1 CSI
(``\\x9b``, raw in ``json.dumps(ensure_ascii=False)``), DEL and a bell is shown
by every command, human and ``--json``, and so are error messages naming
hostile paths and ids: none of those sequences reaches the terminal raw.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from freezegun import freeze_time

from sqlstore import (
    Event,
    Kind,
    Message,
    Principal,
    Relationship,
    Session,
    SQLiteStore,
    ToolCall,
    ToolCallRecord,
)

from .helpers import run_in_pty

SQLSTORE = Path(sys.executable).with_name("sqlstore")
BAD = "\x1b]0;PWNED\x07\x1b[2J\x9b2J\x7f"
SID = f"s{BAD}/1"
RAW = [b"\x1b]0;PWNED", b"\x1b[2J", b"\xc2\x9b2J", b"\x07", b"\x7f"]


@pytest.fixture(scope="module")
def hostile_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store where every text field of one old subagent session is hostile."""
    path = tmp_path_factory.mktemp("esc") / "s.db"
    at = datetime(2026, 1, 1, tzinfo=UTC)
    with freeze_time(at), SQLiteStore(path) as store:
        store.sessions.save(Session.new("parent"))
        session = Session.new(
            SID,
            kind=Kind.SUBAGENT,
            relationship=Relationship(parent_session_id="parent", call_id=f"c{BAD}"),
            owner=Principal(subject=f"u{BAD}", issuer=f"i{BAD}"),
            title=f"t{BAD}",
            model_id=f"m{BAD}",
            labels={f"k{BAD}": f"v{BAD}"},
        )
        session.messages.append(Message(role="user", text=f"hi{BAD}\nline2{BAD}"))
        session.messages.append(
            Message(
                role="assistant",
                reasoning=f"r{BAD}",
                tool_calls=[ToolCall(id=f"c{BAD}", name=f"n{BAD}", args=f'{{"a":"{BAD}"}}')],
            )
        )
        store.sessions.save(session)
        store.events.append_event(SID, Event(f"e{BAD}", text=f"x{BAD}", data={f"d{BAD}": BAD}))
        store.events.append_gap(SID, f"gap{BAD}")
        store.audit.record(
            ToolCallRecord(
                session_id=SID,
                tool=f"bash{BAD}",
                call_id=f"c{BAD}",
                args=f"a{BAD}",
                result=f"r{BAD}",
                is_error=True,
                at=at + timedelta(seconds=1),
            )
        )
    return path


COMMANDS = {
    "ls": ["ls"],
    "ls-json": ["ls", "--json"],
    "show": ["show", SID],
    "show-json": ["show", SID, "--json"],
    "events": ["events", SID],
    "audit": ["audit", SID],
    "audit-json": ["audit", SID, "--json"],
    "prune-dry-run": ["prune", "--older-than", "1d", "--dry-run"],
    "prune-dry-run-json": ["prune", "--older-than", "1d", "--dry-run", "--json"],
    "retention-plan": ["retention", "plan"],
    "export-runlog": ["export", "--format", "runlog", "--out", "out-r", "--all"],
    "export-mecatl": ["export", "--format", "mecatl", "--out", "out-m", "--all"],
    "missing-id": ["show", f"nope{BAD}"],
    "missing-db": ["--db", f"no{BAD}.db", "ls"],
    "backup-dest": ["backup", f"bk{BAD}/x.db"],
}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_no_command_prints_a_raw_escape(hostile_db: Path, tmp_path: Path, name: str) -> None:
    """Every command, human and JSON, and every error escapes hostile stored text and paths."""
    args = COMMANDS[name]
    if args[0] != "--db":
        args = ["--db", str(hostile_db), *args]
    status, out = run_in_pty([SQLSTORE, *args], cwd=tmp_path)
    assert status in (0, 1), out
    assert b"Traceback" not in out, out
    found = [seq for seq in RAW if seq in out]
    assert not found, f"{name}: raw {found} in {out!r}"
