"""Sessions, events and comparisons the conformance suites share (no pytest, no I/O)."""

from __future__ import annotations

import random
from datetime import UTC, datetime

from sqlstore.events import Event
from sqlstore.model import (
    Ask,
    Kind,
    Limits,
    Message,
    Part,
    Principal,
    Relationship,
    ToolCall,
    ToolResult,
    Usage,
)
from sqlstore.session import Session, session_fields

CREATED_AT = datetime(2026, 6, 1, 12, 30, 45, 123456, tzinfo=UTC)
"""``created_at`` of the representative session (2026-06-01T12:30:45.123456Z)."""

PNG_4 = b"\x89PNG"
"""A 4-byte image part (the PNG signature's first bytes)."""

ALICE = Principal(issuer="https://id.example", subject="alice", grant_type="code", name="Alice")
BOB = Principal(issuer="https://id.example", subject="bob", grant_type="code", name="Bob")

AWAITING_ASK = Ask(ask_id="ask-1", tool="Bash", args='{"command":"true"}', reason="runs a shell")

KIND_CASES: dict[str, tuple[Kind, Relationship]] = {
    "main": (Kind.MAIN, Relationship()),
    "scheduled": (
        Kind.SCHEDULED,
        Relationship(schedule_name="nightly", origin_session_id="origin"),
    ),
    "subagent": (Kind.SUBAGENT, Relationship(parent_session_id="parent", call_id="call-sub")),
    "parallel_branch": (
        Kind.PARALLEL_BRANCH,
        Relationship(parent_session_id="parent", call_id="call-par", branch_index=2),
    ),
    "team_member": (
        Kind.TEAM_MEMBER,
        Relationship(team_id="team", member_name="reviewer", parent_session_id="parent"),
    ),
    "unknown": (Kind.UNKNOWN, Relationship()),
}
"""Every kind with a relationship it accepts."""

LIFECYCLE_CASES = ("idle", "completed_budget", "awaiting", "cancelled", "failed")


def representative_session(session_id: str = "conf-representative") -> Session:
    """Return the running session every round-trip test starts from (SPEC §9, mecatl 8.1)."""
    session = Session.new(
        session_id,
        mode="acceptEdits",
        limits=Limits(max_turns=7, max_tool_calls=21, max_consecutive_failures=3),
        owner=ALICE,
        provider_id="openrouter",
        model_id="anthropic/claude-3.5-sonnet",
        labels={
            "profile": "no-fs",
            "provider": "openrouter",
            "model": "anthropic/claude-3.5-sonnet",
            "effort": "high",
            "workdir": "/work/space",
        },
    )
    session.created_at = CREATED_AT
    session.run_id = "run-conf-1"
    session.extra = {"x_future_field": {"kept": [1, "two", None]}}
    session.messages.append(Message(role="system", text="You are a careful coding agent."))
    session.record_user_prompt("Summarise the repository layout, please.")
    session.record_user_prompt(
        "And what is in this picture?",
        parts=[Part(kind="image", mime_type="image/png", data=PNG_4)],
    )
    session.begin_turn()
    session.record_usage(
        Usage(input_tokens=1200, output_tokens=340, cache_read_tokens=800, cache_write_tokens=200)
    )
    session.record_assistant(
        Message(
            role="assistant",
            text="Let me look at the files first.",
            reasoning="opaque-reasoning-blob:AAECAwQ=",
            tool_calls=[
                ToolCall(id="call-1", name="Bash", args='{"command":"ls -la"}'),
                ToolCall(id="call-2", name="Read", args='{"path":"/work/space/README.md"}'),
            ],
        )
    )
    session.record_tool_results(
        [
            ToolResult(call_id="call-1", content="README.md\nsrc\n", is_error=False),
            ToolResult(call_id="call-2", content="permission denied", is_error=True),
        ]
    )
    return session


def kind_session(session_id: str, case: str) -> Session:
    """Return an idle session of the kind and relationship named by ``case`` (KIND_CASES)."""
    kind, relationship = KIND_CASES[case]
    return Session.new(session_id, kind=kind, relationship=relationship)


def lifecycle_session(session_id: str, case: str) -> Session:
    """Return a session driven into the lifecycle state named by ``case`` (LIFECYCLE_CASES)."""
    session = Session.new(session_id, model_id="m")
    session.record_user_prompt("do the thing")
    if case == "idle":
        return session
    session.begin_turn()
    if case == "completed_budget":
        session.stop("budget")
    elif case == "awaiting":
        session.pause_for_approval(AWAITING_ASK)
    elif case == "cancelled":
        session.cancel()
    elif case == "failed":
        session.fail("provider returned HTTP 529: overloaded")
    else:
        raise ValueError(f"unknown lifecycle case {case!r}")
    return session


def id_of_bytes(size: int, tag: str) -> str:
    """Return a session id of exactly ``size`` UTF-8 bytes with multibyte and URL-ish characters."""
    head = f"conf-{tag}-é☃🧪/:?#%-"
    filler = size - len(head.encode("utf-8"))
    if filler < 0:
        raise ValueError(f"size {size} is smaller than the id head")
    session_id = head + "".join("abcdefghij"[i % 10] for i in range(filler))
    assert len(session_id.encode("utf-8")) == size
    return session_id


def noise(size: int, seed: int = 20260601) -> bytes:
    """Return ``size`` reproducible pseudo-random bytes (non-uniform payload)."""
    return random.Random(seed).randbytes(size)


def representative_events(session_id: str) -> list[Event]:
    """Return a reasoning delta, a tool call, an approval and a result (mecatl 8.7)."""
    ask_id = f"{session_id}:0:call-1:r1"
    return [
        Event(type="reasoning.delta", seq=1, turn=1, text="thinking…", run_id="run-1"),
        Event(
            type="tool.call",
            seq=2,
            turn=1,
            run_id="run-1",
            data={"call": {"id": "call-1", "name": "Bash", "args": '{"command":"ls"}'}},
        ),
        Event(
            type="approval",
            seq=3,
            turn=1,
            run_id="run-1",
            data={"decision": "allow_always", "ask_id": ask_id},
        ),
        Event(
            type="result",
            seq=4,
            turn=1,
            run_id="run-1",
            data={"stop": "end_turn", "usage": {"input_tokens": 100, "output_tokens": 20}},
        ),
    ]


def numbered(count: int, prefix: str = "e") -> list[Event]:
    """Return ``count`` small events ``prefix-0`` … with ``seq`` equal to the index."""
    return [Event(type="note", seq=i, text=f"{prefix}-{i}") for i in range(count)]


def session_differences(got: Session, want: Session) -> list[str]:
    """Return one line per snapshot field (and per message) where ``got`` differs from ``want``."""
    problems: list[str] = []
    for name in session_fields():
        if name == "messages":
            continue
        a, b = getattr(got, name), getattr(want, name)
        if a != b:
            problems.append(f"{name}: got {a!r:.200} want {b!r:.200}")
    if len(got.messages) != len(want.messages):
        problems.append(f"messages: got {len(got.messages)} want {len(want.messages)}")
    for index, (a_msg, b_msg) in enumerate(zip(got.messages, want.messages, strict=False)):
        if a_msg != b_msg:
            problems.append(f"messages[{index}]: got {a_msg!r:.300} want {b_msg!r:.300}")
    if got.created_at.utcoffset() is None:
        problems.append("created_at: got a naive datetime")
    return problems


def assert_same_session(got: Session, want: Session) -> None:
    """Fail with every differing field unless ``got`` equals ``want`` field by field."""
    problems = session_differences(got, want)
    assert not problems, "session differs:\n  " + "\n  ".join(problems)
    assert got == want
