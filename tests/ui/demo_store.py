"""A small store that shows every page of the viewer: kinds, states, lineage, tool calls
with an error, an image part, a gap, and a session full of hostile markup."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

from sqlstore import (
    Event,
    Kind,
    Message,
    Part,
    Principal,
    Relationship,
    Session,
    SQLiteStore,
    ToolCall,
    ToolCallRecord,
    ToolResult,
)

HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
"""Markup that would run if the viewer failed to escape it."""


def _png(width: int, height: int) -> bytes:
    """Return a small RGB gradient as PNG bytes (stdlib only)."""

    def chunk(tag: bytes, data: bytes) -> bytes:
        body = tag + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    raw = b"".join(
        b"\x00" + b"".join(bytes((x * 4, y * 6, 160)) for x in range(width)) for y in range(height)
    )
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


PIXEL_PNG = _png(64, 40)

PARENT_ID = "run-parent-0001"
CHILD_ID = "run-child-0001"
HOSTILE_ID = "evil-<b>id</b>"
LIVE_ID = "run-live-0001"


def _conversation(session: Session, prompt: str, *, fail_tool: bool) -> None:
    session.record_user_prompt(
        prompt, parts=[Part(kind="image", mime_type="image/png", data=PIXEL_PNG)]
    )
    session.begin_turn()
    session.record_assistant(
        Message(
            role="assistant",
            text="Let me look at the repository first.",
            reasoning="The user wants the tests fixed; read the failing test.",
            tool_calls=[
                ToolCall(
                    id="call-1", name="read_file", args=json.dumps({"path": "tests/test_x.py"})
                ),
                ToolCall(id="call-2", name="run_tests", args=json.dumps({"target": "tests"})),
            ],
        )
    )
    session.record_tool_results(
        [
            ToolResult(call_id="call-1", content="def test_x():\n    assert f() == 2\n"),
            ToolResult(call_id="call-2", content="1 failed: AssertionError", is_error=fail_tool),
        ]
    )


def build(path: Path, *, extra_sessions: int = 0) -> SQLiteStore:
    """Create the demo store at ``path`` and return it open (read-write)."""
    store = SQLiteStore(path)
    owner = Principal(issuer="https://id.example", subject="alice", name="Alice")
    parent = Session.new(
        PARENT_ID,
        title="Fix the failing tests",
        owner=owner,
        provider_id="anthropic",
        model_id="claude-x",
        labels={"task": "fix-tests", "workdir": "/src/app"},
    )
    _conversation(parent, "Fix the failing tests in tests/", fail_tool=True)
    parent.fail("run_tests failed: 1 failed: AssertionError")
    store.sessions.save(parent)
    child = Session.new(
        CHILD_ID,
        kind=Kind.SUBAGENT,
        title="Read the test file",
        relationship=Relationship(parent_session_id=PARENT_ID, call_id="call-9"),
    )
    _conversation(child, "Read tests/test_x.py and explain it", fail_tool=False)
    child.complete()
    store.sessions.save(child)
    for n, (tool, took, err) in enumerate(
        [("read_file", 1_200, False), ("run_tests", 2_450_000, True), ("grep", 35_000, False)]
    ):
        store.audit.record(
            ToolCallRecord(
                session_id=PARENT_ID,
                call_id=f"call-{n + 1}",
                tool=tool,
                args=json.dumps({"n": n}),
                result="boom" if err else "ok",
                is_error=err,
                took_us=took,
                queued_us=50,
            )
        )
    for n in range(5):
        store.events.append_event(PARENT_ID, Event(type="turn.start", seq=n, turn=1))
        store.events.append_event(PARENT_ID, Event(type="message.delta", seq=n, text=f"step {n}"))
    store.events.append_gap(PARENT_ID, "recorder restarted")
    store.events.append_event(
        PARENT_ID,
        Event(type="tool.call", data={"call": {"id": "call-2", "name": "run_tests", "args": "{}"}}),
    )
    evil = Session.new(HOSTILE_ID, title=HOSTILE, labels={"note": HOSTILE})
    evil.record_user_prompt(HOSTILE)
    evil.begin_turn()
    evil.record_assistant(
        Message(
            role="assistant",
            text=HOSTILE,
            reasoning=HOSTILE,
            tool_calls=[ToolCall(id="c<1>", name=HOSTILE, args=json.dumps({"x": HOSTILE}))],
        )
    )
    evil.record_tool_results([ToolResult(call_id="c<1>", content=HOSTILE, is_error=True)])
    evil.fail(HOSTILE)
    store.sessions.save(evil)
    store.events.append_event(HOSTILE_ID, Event(type=HOSTILE, text=HOSTILE, data={"k": HOSTILE}))
    store.audit.record(
        ToolCallRecord(
            session_id=HOSTILE_ID,
            call_id="c<1>",
            tool=HOSTILE,
            args=HOSTILE,
            result=HOSTILE,
            is_error=True,
            took_us=10,
        )
    )
    live = Session.new(LIVE_ID, title="A run still going")
    live.begin_turn()
    store.sessions.save(live)
    store.events.append_event(LIVE_ID, Event(type="turn.start", turn=1))
    for n in range(extra_sessions):
        store.sessions.save(Session.new(f"bulk-{n:06d}", title=f"bulk session {n}"))
    return store
