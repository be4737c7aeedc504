"""Importing a mecatl JSONL store: envelopes, Go-named events, gaps, audit, sid-v1 (§2)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from sqlstore import MemoryStore, clock
from sqlstore.migrate import run_migration
from sqlstore.migrate.mecatl_source import family_token
from sqlstore.model import Kind, Relationship, State, Usage

MODIFIED = "2026-11-29T10:04:12.500000001Z"


def go_usage(i: int, o: int) -> dict[str, int]:
    """Return a Go Usage object."""
    return {
        "InputTokens": i,
        "OutputTokens": o,
        "CacheReadTokens": 0,
        "CacheWriteTokens": 0,
        "ReasoningTokens": 0,
    }


def snapshot(session_id: str, **fields: Any) -> dict[str, Any]:
    """Return a minimal mecatl snapshot object."""
    base: dict[str, Any] = {
        "id": session_id,
        "state": "idle",
        "mode": "default",
        "limits": {"MaxTurns": 7, "MaxToolCalls": 21, "MaxConsecutiveFailures": 3},
        "counters": {"Turns": 1, "ToolCalls": 2, "ConsecutiveFailures": 0},
        "created_at": "2026-06-01T12:30:45.123456789Z",
        "messages": None,
    }
    base.update(fields)
    return base


def go_event(event_type: str, seq: int, **fields: Any) -> dict[str, Any]:
    """Return an eventlog-json/1 line with every payload null unless given."""
    ev: dict[str, Any] = {"Type": event_type, "Seq": seq, "Turn": 1, "Text": ""}
    for key in ("ToolCall", "ToolResult", "Ask", "Result", "UserPrompt", "CompactionArchive"):
        ev[key] = None
    ev.update({"RunID": "r1", "Actor": ""})
    ev.update(fields)
    return {"v": "eventlog-json/1", "ev": ev}


def write_family(
    store_dir: Path,
    snap: dict[str, Any],
    events: list[Any] | None = None,
    tools: list[Any] | None = None,
    modified: str = MODIFIED,
) -> str:
    """Write one sid-v2 family; return its token."""
    folder = store_dir / "sid-v2"
    folder.mkdir(parents=True, exist_ok=True)
    token = family_token(snap["id"])
    envelope = {"v": "sessnap-current-json/2", "modified_at": modified, "snapshot": snap}
    envelope.update({"metadata": {"id": "ignored"}, "activity": {}})
    (folder / f"{token}.session.json").write_text(json.dumps(envelope))
    if events is not None:
        text = "".join(
            (line if isinstance(line, str) else json.dumps(line)) + "\n" for line in events
        )
        (folder / f"{token}.events.jsonl").write_text(text)
    if tools is not None:
        (folder / f"{token}.tools.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tools))
    return token


def test_family_token_matches_the_mecatl_rule() -> None:
    """The token is sid-v2- + 40 sanitised id chars + - + 32 hex of sha256(id)."""
    token = family_token("a/b c" + "x" * 50)
    prefix = "sid-v2-a_b_c" + "x" * 35 + "-"
    assert token.startswith(prefix) and len(token) == len(prefix) + 32
    assert family_token("").startswith("sid-v2-id-")


def test_snapshot_fields_map_after_snake_casing(tmp_path: Path) -> None:
    """Limits, counters, owner, pending, kind, relationship and usage map to their fields."""
    snap = snapshot(
        "child-1",
        state="awaiting",
        kind="parallel_branch",
        relationship={"parent_session_id": "p", "call_id": "c", "branch_index": 2},
        owner={"Issuer": "iss", "Subject": "sub", "GrantType": "device", "Name": "Ada"},
        pending={"AskID": "ask-1", "Tool": "Bash", "Args": {"command": "true"}, "Reason": "why"},
        token_usage={"main": {"Total": go_usage(10, 2), "Models": {}}},
        usage=go_usage(10, 2),
        title="t",
        model_id="m",
        provider_id="p",
        stop_reason="",
        environment_ref={"Kind": "workspace", "ID": "/w", "Revision": "r"},
        incarnation="inc-1",
    )
    write_family(tmp_path, snap)
    store = MemoryStore()
    report = run_migration(store, tmp_path)
    assert report.imported == 1, report.to_json()
    session = store.sessions.load("child-1")
    assert session.state is State.AWAITING
    assert (session.limits.max_turns, session.limits.max_tool_calls) == (7, 21)
    assert session.counters.tool_calls == 2
    assert session.kind is Kind.PARALLEL_BRANCH
    assert session.relationship == Relationship(parent_session_id="p", call_id="c", branch_index=2)
    assert session.owner is not None and session.owner.identity == ("iss", "sub")
    assert session.pending_ask is not None and session.pending_ask.args == '{"command":"true"}'
    assert session.usage == Usage(input_tokens=10, output_tokens=2)
    assert session.extra["environment_ref"] == {"Kind": "workspace", "ID": "/w", "Revision": "r"}
    assert session.extra["incarnation"] == "inc-1"
    assert "token_usage" in session.extra
    assert session.created_at == clock.parse_rfc3339("2026-06-01T12:30:45.123456Z")
    assert store.sessions.meta("child-1").modified_at == clock.parse_rfc3339(MODIFIED)


def test_messages_map_tool_calls_results_parts_and_keep_unknown_keys(tmp_path: Path) -> None:
    """Go-named tool calls and results map to ToolCall/ToolResult; other keys go to extra."""
    messages = [
        {
            "role": "user",
            "text": "hi",
            "parts": [{"kind": "image", "mime_type": "image/png", "data": "AAEC", "url": ""}],
        },
        {
            "role": "assistant",
            "text": "",
            "reasoning": "r",
            "phase": "final",
            "tool_calls": [{"ID": "c1", "Name": "Bash", "Args": {"a": 1}, "item_id": "it"}],
        },
        {
            "role": "tool",
            "text": "",
            "tool_result": {"CallID": "c1", "Content": "out", "IsError": True},
        },
    ]
    write_family(tmp_path, snapshot("m1", messages=messages))
    store = MemoryStore()
    run_migration(store, tmp_path)
    user, assistant, tool = store.sessions.load("m1").messages
    assert user.parts[0].data == b"\x00\x01\x02"
    assert assistant.tool_calls[0].args == '{"a":1}' and assistant.reasoning == "r"
    assert assistant.extra["phase"] == "final"
    assert assistant.extra["mecatl_tool_calls_extra"] == [{"item_id": "it"}]
    assert tool.tool_result is not None and tool.tool_result.is_error is True


def test_id_comes_from_the_content_not_the_file_name(tmp_path: Path) -> None:
    """A family whose file name names another id still imports under snapshot.id."""
    token = write_family(tmp_path, snapshot("real-id"))
    folder = tmp_path / "sid-v2"
    (folder / f"{token}.session.json").rename(folder / "sid-v2-whatever-0.session.json")
    store = MemoryStore()
    run_migration(store, tmp_path)
    assert [s.id for s in store.sessions.list()] == ["real-id"]


def test_events_map_go_payloads_to_spec_data_and_gaps_to_gaps(tmp_path: Path) -> None:
    """ToolCall/ToolResult/Ask/Result/UserPrompt/CompactionArchive become SPEC data keys."""
    events = [
        {"v": "eventlog-gen/1", "g": "9f1c2a7be04d5e11"},
        go_event("user_prompt", 1, UserPrompt={"Parts": [{"kind": "image", "data": "AA=="}]}),
        go_event("tool.call", 2, ToolCall={"ID": "c1", "Name": "Bash", "Args": {"x": 1}}),
        go_event("tool.result", 3, ToolResult={"CallID": "c1", "Content": "ok", "IsError": False}),
        {"v": "eventlog-gap/1", "r": "append failed: disk full"},
        go_event(
            "permission.ask", 5, Ask={"AskID": "a1", "Tool": "Bash", "Args": {}, "Reason": "?"}
        ),
        go_event(
            "compaction.archive",
            6,
            CompactionArchive={"Replaced": [{"role": "user", "text": "old"}]},
        ),
        go_event("hook.end", 7, Hook={"Name": "fmt"}, Actor="hooks"),
        go_event(
            "result",
            8,
            Result={
                "Stop": "end_turn",
                "Text": "done",
                "Usage": go_usage(5, 1),
                "Error": "",
                "Progress": "complete",
            },
        ),
    ]
    write_family(tmp_path, snapshot("e1"), events=events)
    store = MemoryStore()
    report = run_migration(store, tmp_path)
    assert report.events == 8 and not report.warnings
    records = list(store.events.read_after("e1"))
    assert [r.kind for r in records].count("gap") == 1
    assert records[3].gap_reason == "append failed: disk full"
    got = [r.event for r in records if r.event is not None]
    assert got[0].data["parts"] == [{"kind": "image", "data": "AA=="}]
    assert got[1].data["call"] == {"id": "c1", "name": "Bash", "args": '{"x":1}'}
    assert got[1].run_id == "r1" and got[1].seq == 2 and got[1].turn == 1
    assert got[2].data["result"] == {"call_id": "c1", "content": "ok", "is_error": False}
    assert got[3].data["ask"] == {"ask_id": "a1", "tool": "Bash", "args": "{}", "reason": "?"}
    assert got[4].data["replaced"][0]["text"] == "old"
    assert got[5].data["Hook"] == {"Name": "fmt"} and got[5].data["actor"] == "hooks"
    result = got[6].data
    assert result["stop"] == "end_turn" and result["progress"] == "complete"
    assert result["usage"]["input_tokens"] == 5
    assert result["mecatl"] == {"Result": {"Text": "done"}}


def test_event_log_generation_is_kept(tmp_path: Path) -> None:
    """The imported log keeps the source generation (cursors name it)."""
    events = [{"v": "eventlog-gen/1", "g": "9f1c2a7be04d5e11"}, go_event("turn.start", 1)]
    write_family(tmp_path, snapshot("g1"), events=events)
    store = MemoryStore()
    run_migration(store, tmp_path)
    cursor = next(iter(store.events.read_after("g1"))).cursor
    from sqlstore.migrate.export import _generation

    assert _generation(cursor) == "9f1c2a7be04d5e11"


def test_unversioned_event_log_is_reported_and_skipped(tmp_path: Path) -> None:
    """A log without a generation header is skipped with a warning; the snapshot imports."""
    write_family(tmp_path, snapshot("u1"), events=[go_event("turn.start", 1)])
    store = MemoryStore()
    report = run_migration(store, tmp_path)
    assert report.imported == 1 and report.events == 0
    assert any("unversioned" in w for w in report.warnings)
    assert list(store.events.read("u1")) == []


def test_tools_jsonl_becomes_audit_rows(tmp_path: Path) -> None:
    """Each tool_call line is a ToolCallRecord with args as JSON text and µs timings."""
    tools = [
        {
            "type": "tool_call",
            "time": "2026-11-29T10:01:02.000001Z",
            "session_id": "t1",
            "call_id": "call_1",
            "tool": "bash",
            "args": {"cmd": "ls"},
            "result": "a\nb",
            "is_error": False,
            "queued_micros": 120,
            "took_micros": 5400,
        },
        {"type": "other"},
    ]
    write_family(tmp_path, snapshot("t1"), tools=tools)
    store = MemoryStore()
    report = run_migration(store, tmp_path)
    (row,) = store.audit.list("t1")
    assert (row.call_id, row.tool, row.args, row.result) == (
        "call_1",
        "bash",
        '{"cmd":"ls"}',
        "a\nb",
    )
    assert (row.queued_us, row.took_us) == (120, 5400)
    assert row.at == clock.parse_rfc3339("2026-11-29T10:01:02.000001Z")
    assert any(".tools.jsonl:2" in w for w in report.warnings)


def test_sid_v1_last_line_wins_and_mtime_is_modified_at(tmp_path: Path) -> None:
    """A sid-v1 file's last complete snapshot line is imported with the file mtime."""
    folder = tmp_path / "sid-v1"
    folder.mkdir()
    path = folder / "sid-v1-x.session.jsonl"
    lines = [snapshot("v1", title="first"), snapshot("v1", title="second")]
    path.write_text("".join(json.dumps(s) + "\n" for s in lines) + '{"id":"v1","tit')
    os.utime(path, (1_790_820_060, 1_790_820_060))
    store = MemoryStore()
    report = run_migration(store, tmp_path)
    assert store.sessions.load("v1").title == "second"
    assert store.sessions.meta("v1").modified_at == clock.from_ns(1_790_820_060 * 10**9)
    assert any("torn" in w for w in report.warnings)


def test_sid_v2_supersedes_sid_v1_for_the_same_id(tmp_path: Path) -> None:
    """When both layouts hold an id, sid-v2 is imported and sid-v1 skipped as superseded."""
    write_family(tmp_path, snapshot("both", title="v2"))
    folder = tmp_path / "sid-v1"
    folder.mkdir()
    (folder / "sid-v1-both.session.jsonl").write_text(json.dumps(snapshot("both")) + "\n")
    store = MemoryStore()
    report = run_migration(store, tmp_path)
    assert store.sessions.load("both").title == "v2"
    assert report.skipped["superseded"] == 1


@pytest.mark.parametrize(
    ("envelope", "outcome"),
    [
        (
            {"v": "sessnap-current-json/1", "modified_at": MODIFIED, "snapshot": {"id": "x"}},
            "not_a_session",
        ),
        (
            {
                "v": "sessnap-current-json/2",
                "modified_at": "0001-01-01T00:00:00Z",
                "snapshot": {"id": "x"},
            },
            "failed",
        ),
        ({"v": "sessnap-current-json/2", "modified_at": MODIFIED, "snapshot": {}}, "failed"),
    ],
)
def test_bad_envelopes_are_skipped_or_failed(
    tmp_path: Path, envelope: dict[str, Any], outcome: str
) -> None:
    """Unknown versions are skipped; a zero modified_at or empty snapshot fails the item."""
    folder = tmp_path / "sid-v2"
    folder.mkdir()
    (folder / "sid-v2-x-0.session.json").write_text(json.dumps(envelope))
    report = run_migration(MemoryStore(), tmp_path)
    assert report.items[-1].outcome == outcome


def test_lock_temporaries_and_inventory_are_ignored_and_strays_reported(tmp_path: Path) -> None:
    """family.lock, *.tmp-* and .session-inventory are ignored; other files are skipped."""
    token = write_family(tmp_path, snapshot("k1"))
    folder = tmp_path / "sid-v2"
    (folder / f"{token}.family.lock").write_text("")
    (folder / f"{token}.session.json.tmp-1").write_text("{")
    (folder / ".session-inventory").mkdir()
    (folder / "stray.txt").write_text("?")
    report = run_migration(MemoryStore(), tmp_path)
    assert report.imported == 1
    assert [(i.item, i.outcome) for i in report.items if i.outcome != "imported"] == [
        ("sid-v2/stray.txt", "not_a_session")
    ]


def test_legacy_usage_is_used_without_token_usage(tmp_path: Path) -> None:
    """Without token_usage, the legacy usage object gives Session.usage."""
    write_family(tmp_path, snapshot("legacy", usage=go_usage(7, 3)))
    store = MemoryStore()
    run_migration(store, tmp_path)
    assert store.sessions.load("legacy").usage == Usage(input_tokens=7, output_tokens=3)


def test_unknown_kind_is_kept_for_export_and_imported_as_unknown(tmp_path: Path) -> None:
    """A kind this version does not know (debug) imports as 'unknown' and keeps the original."""
    write_family(tmp_path, snapshot("dbg", kind="debug", relationship={"target": "x"}))
    store = MemoryStore()
    run_migration(store, tmp_path)
    session = store.sessions.load("dbg")
    assert session.kind is Kind.UNKNOWN and session.relationship.is_empty()
    assert session.extra["mecatl_kind"] == "debug"
    assert session.extra["mecatl_relationship"] == {"target": "x"}


def test_audit_lines_naming_another_session_are_reported(tmp_path: Path) -> None:
    """A tools line whose session_id differs is imported under the snapshot id, with a warning."""
    tools = [
        {
            "type": "tool_call",
            "time": "2026-11-29T10:01:02Z",
            "session_id": "else",
            "call_id": "c",
            "tool": "t",
            "args": {},
            "result": "",
            "is_error": False,
            "queued_micros": 0,
            "took_micros": 0,
        }
    ]
    write_family(tmp_path, snapshot("own"), tools=tools)
    store = MemoryStore()
    report = run_migration(store, tmp_path)
    assert [r.session_id for r in store.audit.list("own")] == ["own"]
    assert any("differs from the snapshot" in w for w in report.warnings)


def test_imported_event_logs_fold_back_to_the_snapshot() -> None:
    """The SPEC §2.4 data of imported mecatl events is what the fold understands."""
    from sqlstore import SessionSeed, fold

    store = MemoryStore()
    run_migration(store, Path(__file__).resolve().parents[1] / "examples" / "mecatl-store")
    sid = "sess-2026-11-29-review/sub/call_2"
    stored = store.sessions.load(sid)
    seed = SessionSeed(id=sid, kind=stored.kind, relationship=stored.relationship)
    folded = fold(seed, store.events.read(sid))
    assert folded.messages == [
        m.__class__(role=m.role, text=m.text, tool_calls=m.tool_calls, tool_result=m.tool_result)
        for m in stored.messages
    ]
    assert (folded.state, folded.usage) == (stored.state, stored.usage)
