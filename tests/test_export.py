"""Export and round trips: run log → sqlstore → run log, mecatl → sqlstore → mecatl (§6)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlstore import (
    Ask,
    Counters,
    Event,
    Kind,
    Limits,
    MemoryStore,
    Message,
    Part,
    Principal,
    Relationship,
    Session,
    SQLiteStore,
    State,
    ToolCall,
    ToolCallRecord,
    ToolResult,
    Usage,
    clock,
    runlog,
)
from sqlstore.jsonl import parse_jsonl
from sqlstore.migrate import export_sessions, run_migration
from sqlstore.runlog import DROPPED_EVENT_KINDS

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


def normalise(value: Any) -> Any:
    """Drop empty values (absent == empty) and cut timestamps to microseconds, recursively."""
    if isinstance(value, dict):
        out = {k: normalise(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, False, 0, "", [], {})}
    if isinstance(value, list):
        return [normalise(v) for v in value]
    if isinstance(value, str) and _TIME.match(value):
        return clock.format_rfc3339(clock.parse_rfc3339(value))
    return value


def runlog_view(path: Path) -> dict[str, Any]:
    """What the run-log round trip must preserve, per JSONL-FORMATS.md §1."""
    log = runlog.load(path)
    events = [
        {k: v for k, v in e.items() if not (k == "text" and v == "")}
        for e in log.events
        if e.get("kind") not in DROPPED_EVENT_KINDS
    ]
    return {
        "meta": log.meta,
        "messages": log.messages,
        "discarded": log.discarded,
        "events": events,
        "result": log.result,
    }


def mecatl_view(store_dir: Path) -> dict[str, Any]:
    """Every session of a mecatl store: snapshot, event lines and tool lines, normalised."""
    out: dict[str, Any] = {}
    for snap_file in sorted((store_dir / "sid-v2").glob("*.session.json")):
        envelope = json.loads(snap_file.read_text())
        token = snap_file.name[: -len(".session.json")]
        events_file = snap_file.with_name(f"{token}.events.jsonl")
        tools_file = snap_file.with_name(f"{token}.tools.jsonl")
        raw = events_file.read_bytes() if events_file.exists() else b""
        events = [value for _, value in parse_jsonl(raw, str(events_file)).lines]
        raw = tools_file.read_bytes() if tools_file.exists() else b""
        tools = [value for _, value in parse_jsonl(raw, str(tools_file)).lines]
        out[envelope["snapshot"]["id"]] = normalise(
            {
                "modified_at": envelope["modified_at"],
                "snapshot": envelope["snapshot"],
                "events": events,
                "tools": tools,
            }
        )
    return out


def round_trip(source: Path, fmt: str, out: Path, store: Any) -> None:
    """Import ``source`` into ``store`` and export every session to ``out``."""
    report = run_migration(store, source, fmt=fmt)
    assert report.ok, report.to_json()
    exported = export_sessions(store, fmt, out)
    assert exported.ok, exported.to_json()


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_example_run_logs_round_trip(tmp_path: Path, backend: str) -> None:
    """The shipped run logs come back with the same meta, messages, events, result and blobs."""
    store: Any = MemoryStore() if backend == "memory" else SQLiteStore(tmp_path / "s.db")
    with store:
        round_trip(EXAMPLES / "runlogs", "runlog", tmp_path / "out", store)
    for source in sorted((EXAMPLES / "runlogs").glob("*.jsonl")):
        assert runlog_view(tmp_path / "out" / source.name) == runlog_view(source), source.name
    blob = next((EXAMPLES / "runlogs").glob("*.blobs/*.png"))
    copy = tmp_path / "out" / blob.parent.name / blob.name
    assert copy.read_bytes() == blob.read_bytes()
    assert (copy.parent.parent / "20261129-153000.jsonl").stat().st_mtime_ns == (
        (EXAMPLES / "runlogs" / "20261129-153000.jsonl").stat().st_mtime_ns // 1000 * 1000
    )


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_example_mecatl_store_round_trips(tmp_path: Path, backend: str) -> None:
    """The shipped sid-v2 sessions come back as equal JSON values, events and audit included."""
    store: Any = MemoryStore() if backend == "memory" else SQLiteStore(tmp_path / "s.db")
    with store:
        round_trip(EXAMPLES / "mecatl-store", "mecatl", tmp_path / "out", store)
    source = mecatl_view(EXAMPLES / "mecatl-store")
    exported = mecatl_view(tmp_path / "out")
    assert set(source) <= set(exported)
    for session_id, view in source.items():
        assert exported[session_id] == view, session_id


def test_runlog_session_survives_export_to_mecatl_and_back(tmp_path: Path) -> None:
    """run log → sqlstore → mecatl → sqlstore keeps the snapshot, events (as JSON) and audit."""
    first = MemoryStore()
    run_migration(first, EXAMPLES / "runlogs")
    export_sessions(first, "mecatl", tmp_path / "m")
    second = MemoryStore()
    assert run_migration(second, tmp_path / "m").ok
    for stored in first.sessions.list():
        assert second.sessions.load(stored.id) == first.sessions.load(stored.id)
        events = [normalise(e.to_json()) for e in second.events.read(stored.id)]
        assert events == [normalise(e.to_json()) for e in first.events.read(stored.id)]
        assert second.audit.list(stored.id) == first.audit.list(stored.id)
        assert second.sessions.meta(stored.id).modified_at == stored.modified_at


def test_mecatl_export_writes_actor_as_object_or_null(tmp_path: Path) -> None:
    """`sqlstore export --format mecatl` writes `"Actor": null` without an actor (never `""`)."""
    from click.testing import CliRunner

    from cli.main import cli

    db = tmp_path / "s.db"
    actor = {"Issuer": "https://idp.example", "Subject": "agent-7"}
    events = [
        Event(type="note", seq=1, text="no actor"),
        Event(type="note", seq=2, text="an actor", data={"actor": actor}),
        Event(type="note", seq=3, text="a string actor", data={"actor": "someone"}),
    ]
    with SQLiteStore(db) as store:
        store.sessions.save(Session.new("act"))
        for event in events:
            store.events.append_event("act", event)
    out = tmp_path / "out"
    result = CliRunner().invoke(
        cli, ["--db", str(db), "export", "--format", "mecatl", "--out", str(out), "--all"]
    )
    assert result.exit_code == 0, result.output
    (events_file,) = (out / "sid-v2").glob("*.events.jsonl")
    lines = [json.loads(line) for line in events_file.read_text().splitlines()]
    actors = [line["ev"]["Actor"] for line in lines if line.get("v") == "eventlog-json/1"]
    assert actors == [None, actor, None]
    target = MemoryStore()
    assert run_migration(target, out).ok
    assert list(target.events.read("act")) == events


def test_export_never_overwrites_and_reports_the_session(tmp_path: Path) -> None:
    """An existing file at the target path makes that session fail; the file is untouched."""
    store = MemoryStore()
    run_migration(store, EXAMPLES / "runlogs")
    out = tmp_path / "out"
    out.mkdir()
    (out / "20261128-090000.jsonl").write_text("keep me")
    report = export_sessions(store, "runlog", out, session_ids=["20261128-090000", "nope"])
    assert [s for s, _ in report.failed] == ["20261128-090000", "nope"]
    assert (out / "20261128-090000.jsonl").read_text() == "keep me"


def test_a_session_that_fails_half_way_leaves_none_of_its_files(tmp_path: Path) -> None:
    """A mecatl export whose events file cannot be created removes that session's snapshot."""
    from sqlstore.migrate.mecatl_source import (
        EVENTS_SUFFIX,
        SNAPSHOT_SUFFIX,
        V2_DIR,
        family_token,
    )

    store = MemoryStore()
    run_migration(store, EXAMPLES / "runlogs")
    sid = "20261128-090000"
    folder = tmp_path / "out" / V2_DIR
    folder.mkdir(parents=True)
    blocker = folder / f"{family_token(sid)}{EVENTS_SUFFIX}"
    blocker.write_text("someone else's")
    report = export_sessions(store, "mecatl", tmp_path / "out", session_ids=[sid])
    assert [s for s, _ in report.failed] == [sid]
    assert not (folder / f"{family_token(sid)}{SNAPSHOT_SUFFIX}").exists()
    assert blocker.read_text() == "someone else's"
    assert sorted(p.name for p in folder.iterdir()) == [blocker.name]


# -- property tests -------------------------------------------------------------------------

_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
_word = st.text(alphabet="abcdefghij_-", min_size=1, max_size=8)
_json: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_word, inner, max_size=3),
    max_leaves=6,
)


@st.composite
def runlog_records(draw: st.DrawFn) -> list[tuple[str, dict[str, Any] | None]]:
    """A random run log: meta, then messages, events and resets, and maybe a result."""
    meta = {
        "id": "",
        "task": draw(_text),
        "model": draw(_text),
        "provider": draw(_text),
        "driver": draw(_text),
        "workdir": draw(_text),
    }
    if draw(st.booleans()):
        meta["resumedFrom"] = draw(_word)
    records: list[tuple[str, dict[str, Any] | None]] = [("meta", meta)]
    call = 0
    for _ in range(draw(st.integers(0, 12))):
        choice = draw(st.sampled_from(["plain", "pair", "event", "reset"]))
        if choice == "plain":
            mtype = draw(
                st.sampled_from(
                    ["instructions", "user", "bot", "reasoning", "checkpoint", "attachment", "x"]
                )
            )
            records.append(("message", {"type": mtype, "text": draw(_text)}))
        elif choice == "pair":
            call += 1
            name = draw(_word)
            args = json.dumps(draw(st.dictionaries(_word, _json, max_size=2)))
            request = {"kind": "request", "id": f"c{call}", "name": name, "arguments": args}
            records.append(("message", {"type": "activity", "text": "", "activity": request}))
            result = draw(st.one_of(_text, st.dictionaries(_word, _json, min_size=1, max_size=2)))
            response = {
                "kind": "response",
                "id": f"c{call}",
                "name": name,
                "result": result,
                "failure": draw(st.sampled_from(["", "boom"])),
            }
            records.append(("message", {"type": "activity", "text": "", "activity": response}))
        elif choice == "event":
            event: dict[str, Any] = {"kind": draw(st.sampled_from(["tool", "retry", "token"]))}
            if draw(st.booleans()):
                event["tool"] = draw(_word)
            text = draw(_text)
            if text:
                event["text"] = text
            if draw(st.booleans()):
                event["iteration"] = draw(st.integers(0, 50))
            records.append(("event", event))
        else:
            records.append(("reset", None))
    if draw(st.booleans()):
        result: dict[str, Any] = {"reason": draw(_word), "code": draw(st.sampled_from([0, 1]))}
        for key in ("message", "error"):
            if draw(st.booleans()):
                result[key] = draw(_text.filter(bool))
        for key in ("iterations", "calls", "continuations", "cycles", "settles"):
            result[key] = draw(st.integers(0, 9))
        if draw(st.booleans()):
            result["inputTokens"] = draw(st.integers(0, 10**6))
            result["outputTokens"] = draw(st.integers(0, 10**6))
        if draw(st.booleans()):
            result["failure"] = {"status": 500, "response_body": draw(_text)}
        records.append(("result", result))
    return records


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(logs=st.lists(runlog_records(), min_size=1, max_size=3))
def test_property_run_log_round_trip(
    tmp_path_factory: pytest.TempPathFactory, logs: list[list[tuple[str, Any]]]
) -> None:
    """Property: run log → sqlstore → run log keeps meta, messages, events and result, and a
    second import of the export gives the same sessions, logs and audit rows."""
    source = tmp_path_factory.mktemp("src")
    for index, records in enumerate(logs):
        run_id = f"2026113{index}-000000"
        lines = []
        for second, (kind, payload) in enumerate(records):
            if kind == "meta":
                payload = {**payload, "id": run_id}
            line: dict[str, Any] = {"kind": kind, "at": f"2026-11-30T00:00:{second % 60:02d}Z"}
            if payload is not None:
                line[kind] = payload
            lines.append(json.dumps(line, ensure_ascii=False) + "\n")
        (source / f"{run_id}.jsonl").write_text("".join(lines), encoding="utf-8")
    out = tmp_path_factory.mktemp("out")
    first = MemoryStore()
    round_trip(source, "runlog", out, first)
    for path in source.glob("*.jsonl"):
        assert runlog_view(out / path.name) == runlog_view(path)
    second = MemoryStore()
    assert run_migration(second, out).ok
    for stored in first.sessions.list():
        assert second.sessions.load(stored.id) == first.sessions.load(stored.id)
        assert list(second.events.read(stored.id)) == list(first.events.read(stored.id))
        assert second.audit.list(stored.id) == first.audit.list(stored.id)
        assert second.sessions.meta(stored.id).modified_at == stored.modified_at
    shutil.rmtree(source)
    shutil.rmtree(out)


_go_usage = st.fixed_dictionaries(
    {k: st.integers(0, 10**6) for k in ("InputTokens", "OutputTokens", "CacheReadTokens")}
)
_kinds = st.sampled_from(
    [
        ("main", None),
        ("scheduled", {"schedule_name": "nightly", "origin_session_id": "o"}),
        ("subagent", {"parent_session_id": "p", "call_id": "c", "branch_index": None}),
        ("parallel_branch", {"parent_session_id": "p", "call_id": "c", "branch_index": 2}),
        ("team_member", {"team_id": "t", "member_name": "reviewer", "parent_session_id": "p"}),
        ("debug", {"target": "x"}),
    ]
)


@st.composite
def mecatl_message(draw: st.DrawFn) -> dict[str, Any]:
    """A random mecatl message."""
    message: dict[str, Any] = {
        "role": draw(st.sampled_from(["system", "user", "assistant", "tool"])),
        "text": draw(_text),
    }
    if message["role"] == "assistant" and draw(st.booleans()):
        message["tool_calls"] = [
            {"ID": draw(_word), "Name": draw(_word), "Args": draw(st.dictionaries(_word, _json))}
        ]
        if draw(st.booleans()):
            message["tool_calls"][0]["item_id"] = draw(_word)
    if message["role"] == "tool":
        message["tool_result"] = {
            "CallID": draw(_word),
            "Content": draw(_text),
            "IsError": draw(st.booleans()),
        }
    if draw(st.booleans()):
        message["reasoning"] = draw(_text)
    if draw(st.booleans()):
        message["phase"] = draw(_word)
    if draw(st.booleans()):
        message["parts"] = [{"kind": "image", "mime_type": "image/png", "data": "AAEC", "url": ""}]
    return message


@st.composite
def mecatl_session(draw: st.DrawFn, session_id: str) -> dict[str, Any]:
    """A random sid-v2 family: envelope snapshot, event lines and tool lines."""
    state = draw(st.sampled_from(["idle", "running", "awaiting", "completed", "failed"]))
    kind, rel = draw(_kinds)
    snap: dict[str, Any] = {
        "id": session_id,
        "state": state,
        "mode": draw(st.sampled_from(["default", "plan", "acceptEdits"])),
        "limits": {
            "MaxTurns": draw(st.integers(0, 9)),
            "MaxToolCalls": 0,
            "MaxConsecutiveFailures": 3,
        },
        "counters": {"Turns": draw(st.integers(0, 9)), "ToolCalls": 1, "ConsecutiveFailures": 0},
        "created_at": "2026-06-01T12:30:45.123456789Z",
        "messages": draw(st.none() | st.lists(mecatl_message(), max_size=4)),
    }
    if draw(st.booleans()):
        snap["kind"] = kind
        if rel is not None:
            snap["relationship"] = rel
    if state == "awaiting":
        snap["pending"] = {
            "AskID": "a1",
            "Tool": "Bash",
            "Args": {"command": "true"},
            "Reason": draw(_text),
        }
    for key in ("title", "provider_id", "model_id", "stop_reason", "run_id", "profile"):
        if draw(st.booleans()):
            snap[key] = draw(_text)
    if draw(st.booleans()):
        total = draw(_go_usage)
        snap["token_usage"] = {"main": {"Total": total, "Models": {"p/m": total}}}
        if draw(st.booleans()):
            snap["usage"] = total
    elif draw(st.booleans()):
        snap["usage"] = draw(_go_usage)
    if draw(st.booleans()):
        snap["owner"] = {"Issuer": "iss", "Subject": draw(_word), "GrantType": "", "Name": "n"}
    snap.update(
        draw(
            st.dictionaries(
                st.sampled_from(["environment_ref", "incarnation", "authority", "x_unknown"]), _json
            )
        )
    )
    events: list[dict[str, Any]] = [{"v": "eventlog-gen/1", "g": "0123456789abcdef"}]
    for seq in range(draw(st.integers(0, 6))):
        if draw(st.integers(0, 5)) == 0:
            events.append({"v": "eventlog-gap/1", "r": draw(_text)})
            continue
        ev: dict[str, Any] = {
            "Type": draw(st.sampled_from(["turn.start", "tool.call", "result", "hook"])),
            "Seq": seq,
            "Turn": 1,
            "Text": draw(_text),
            "ToolCall": None,
            "ToolResult": None,
            "Ask": None,
            "Result": None,
            "Hook": None,
            "CompactionArchive": None,
            "UserPrompt": None,
            "RunID": draw(_word),
            "Actor": "",
        }
        payload = draw(
            st.sampled_from(
                [
                    "none",
                    "ToolCall",
                    "ToolResult",
                    "Ask",
                    "Result",
                    "Hook",
                    "CompactionArchive",
                    "UserPrompt",
                ]
            )
        )
        if payload == "ToolCall":
            ev["ToolCall"] = {
                "ID": "c1",
                "Name": "Bash",
                "Args": draw(st.dictionaries(_word, _json)),
            }
        elif payload == "ToolResult":
            ev["ToolResult"] = {"CallID": "c1", "Content": draw(_text), "IsError": True}
        elif payload == "Ask":
            ev["Ask"] = {"AskID": "a", "Tool": "t", "Args": {"k": 1}, "Reason": "r"}
        elif payload == "Result":
            ev["Result"] = {
                "Stop": "end_turn",
                "Text": draw(_text),
                "Usage": draw(_go_usage),
                "Error": draw(_text),
                "Progress": "complete",
            }
        elif payload == "Hook":
            ev["Hook"] = draw(st.dictionaries(_word, _json, min_size=1))
        elif payload == "CompactionArchive":
            ev["CompactionArchive"] = {"Replaced": draw(st.lists(mecatl_message(), max_size=2))}
        elif payload == "UserPrompt":
            ev["UserPrompt"] = {"Parts": [{"kind": "image", "data": "AA=="}]}
        events.append({"v": "eventlog-json/1", "ev": ev})
    tools = [
        {
            "type": "tool_call",
            "time": "2026-11-29T10:01:02.000001Z",
            "session_id": session_id,
            "call_id": draw(_word),
            "tool": draw(_word),
            "args": draw(st.dictionaries(_word, _json)),
            "result": draw(_text),
            "is_error": draw(st.booleans()),
            "queued_micros": 1,
            "took_micros": draw(st.integers(0, 10**9)),
        }
        for _ in range(draw(st.integers(0, 2)))
    ]
    return {"snapshot": snap, "events": events, "tools": tools}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(families=st.lists(st.data(), min_size=1, max_size=3))
def test_property_mecatl_round_trip(
    tmp_path_factory: pytest.TempPathFactory, families: list[st.DataObject]
) -> None:
    """Property: mecatl → sqlstore → mecatl gives equal JSON (absent == empty)."""
    from sqlstore.migrate.mecatl_source import family_token

    source = tmp_path_factory.mktemp("src")
    folder = source / "sid-v2"
    folder.mkdir()
    for index, data in enumerate(families):
        session_id = f"s/{index}"
        family = data.draw(mecatl_session(session_id))
        token = family_token(session_id)
        envelope = {
            "v": "sessnap-current-json/2",
            "modified_at": "2026-11-29T10:04:12.5Z",
            "metadata": {},
            "activity": {},
            "snapshot": family["snapshot"],
        }
        (folder / f"{token}.session.json").write_text(json.dumps(envelope))
        lines = "".join(json.dumps(e) + "\n" for e in family["events"])
        (folder / f"{token}.events.jsonl").write_text(lines)
        if family["tools"]:
            tools = "".join(json.dumps(t) + "\n" for t in family["tools"])
            (folder / f"{token}.tools.jsonl").write_text(tools)
    out = tmp_path_factory.mktemp("out")
    round_trip(source, "mecatl", out, MemoryStore())
    before, after = mecatl_view(source), mecatl_view(out)
    for session_id, view in before.items():
        if len(view.get("events", [])) <= 1:  # an empty log is not exported
            view.pop("events", None)
        assert after[session_id] == view
    shutil.rmtree(source)
    shutil.rmtree(out)


# -- native sessions: sqlstore → mecatl → sqlstore is lossless ---------------------------------

_json_text = st.dictionaries(_word, _json, max_size=2).map(
    lambda v: json.dumps(v, separators=(",", ":"), ensure_ascii=False)
)
_extra = st.dictionaries(_word.map(lambda w: f"x_{w}"), _json, max_size=2)
_moment = st.integers(0, 4_000_000_000_000_000).map(lambda us: clock.from_ns(us * 1000))


@st.composite
def native_message(draw: st.DrawFn) -> Message:
    """A random sqlstore Message."""
    role = draw(st.sampled_from(["system", "user", "assistant", "tool"]))
    calls = []
    if role == "assistant":
        calls = draw(
            st.lists(
                st.builds(ToolCall, id=_word, name=_word, args=_json_text | st.just("")), max_size=2
            )
        )
    result = None
    if role == "tool" and draw(st.booleans()):
        result = ToolResult(call_id=draw(_word), content=draw(_text), is_error=draw(st.booleans()))
    parts = draw(
        st.lists(
            st.builds(Part, kind=_word, mime_type=_word, data=st.binary(max_size=8), url=_text),
            max_size=1,
        )
    )
    return Message(
        role=role,
        text=draw(_text),
        tool_calls=calls,
        tool_result=result,
        parts=parts,
        reasoning=draw(_text),
        extra=draw(_extra),
    )


_native_kinds = st.sampled_from(
    [
        (Kind.MAIN, Relationship()),
        (Kind.UNKNOWN, Relationship()),
        (Kind.SCHEDULED, Relationship(schedule_name="nightly", origin_session_id="o")),
        (Kind.SUBAGENT, Relationship(parent_session_id="p", call_id="c")),
        (Kind.PARALLEL_BRANCH, Relationship(parent_session_id="p", call_id="c", branch_index=0)),
        (Kind.TEAM_MEMBER, Relationship(team_id="t", member_name="m")),
    ]
)


@st.composite
def native_session(draw: st.DrawFn, session_id: str) -> Session:
    """A random valid sqlstore Session."""
    kind, relationship = draw(_native_kinds)
    state = draw(st.sampled_from(list(State)))
    counts = st.integers(0, 1000)
    return Session(
        id=session_id,
        state=state,
        mode=draw(st.sampled_from(["default", "plan", "acceptEdits"])),
        limits=Limits(draw(counts), draw(counts), draw(counts)),
        counters=Counters(draw(counts), draw(counts), draw(counts)),
        usage=Usage(draw(counts), draw(counts), draw(counts), draw(counts), draw(counts)),
        messages=draw(st.lists(native_message(), max_size=3)),
        created_at=draw(_moment),
        title=draw(_text),
        provider_id=draw(_text),
        model_id=draw(_text),
        kind=kind,
        relationship=relationship,
        owner=draw(
            st.none()
            | st.builds(Principal, issuer=_text, subject=_text, grant_type=_text, name=_text)
        ),
        stop_reason=draw(_text),
        pending_ask=(
            draw(st.builds(Ask, ask_id=_word, tool=_word, args=_json_text, reason=_text))
            if state is State.AWAITING
            else None
        ),
        last_error=draw(_text),
        run_id=draw(_text),
        labels=draw(st.dictionaries(_word, _text, max_size=2)),
        extra=draw(_extra),
    )


_data_keys = st.sampled_from(
    [
        "call",
        "result",
        "ask",
        "stop",
        "usage",
        "error",
        "progress",
        "parts",
        "replaced",
        "actor",
        "mecatl",
        "Type",
        "Seq",
        "Hook",
        "ToolCall",
        "SqlstoreData",
        "tool",
        "at",
    ]
)
_native_event = st.builds(
    Event,
    type=_word,
    seq=st.integers(0, 100),
    turn=st.integers(0, 100),
    text=_text,
    run_id=_text,
    data=st.dictionaries(_data_keys, _json, max_size=3),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_property_native_sessions_survive_mecatl_export_and_import(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    """Property: any session, its log (gaps included) and audit rows survive export → migrate."""
    source = MemoryStore()
    ids = ["a", "b/c"]
    for session_id in ids:
        source.sessions.save(data.draw(native_session(session_id)))
        for entry in data.draw(st.lists(_native_event | _text, max_size=4)):
            if isinstance(entry, Event):
                source.events.append_event(session_id, entry)
            else:
                source.events.append_gap(session_id, entry)
        for record in data.draw(
            st.lists(
                st.builds(
                    ToolCallRecord,
                    session_id=st.just(session_id),
                    call_id=_word,
                    tool=_word,
                    args=_json_text,
                    result=_text,
                    is_error=st.booleans(),
                    at=_moment,
                    queued_us=st.integers(0, 10**6),
                    took_us=st.integers(0, 10**9),
                    run_id=_text,
                ),
                max_size=2,
            )
        ):
            source.audit.record(record)
    out = tmp_path_factory.mktemp("native")
    assert export_sessions(source, "mecatl", out).ok
    target = MemoryStore()
    report = run_migration(target, out)
    assert report.ok and report.imported == 2, report.to_json()
    for session_id in ids:
        assert target.sessions.load(session_id) == source.sessions.load(session_id)
        before = [(r.kind, r.event, r.gap_reason) for r in source.events.read_after(session_id)]
        after = [(r.kind, r.event, r.gap_reason) for r in target.events.read_after(session_id)]
        assert after == before
        assert target.audit.list(session_id) == source.audit.list(session_id)
        assert (
            target.sessions.meta(session_id).modified_at
            == source.sessions.meta(session_id).modified_at
        )
    shutil.rmtree(out)
