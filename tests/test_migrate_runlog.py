"""Importing openzot run logs: every row of the mapping table (JSONL-FORMATS.md §1)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from sqlstore import MemoryStore, clock
from sqlstore.migrate import run_migration
from sqlstore.migrate.runlog_mapping import INCOMPLETE_ERROR
from sqlstore.model import Kind, State

AT = "2026-11-29T14:05:0{}.000000Z"


def rec(kind: str, second: int, payload: object = None) -> str:
    """Return one run-log line."""
    line: dict[str, object] = {"kind": kind, "at": AT.format(second)}
    if payload is not None:
        line[kind] = payload
    return json.dumps(line) + "\n"


def meta(run_id: str, **extra: object) -> dict[str, object]:
    """Return a meta payload."""
    return {
        "id": run_id,
        "task": "fix the flaky test\nsecond line",
        "model": "glm-5.2",
        "provider": "zai",
        "driver": "openai",
        "workdir": "/src/app",
        **extra,
    }


def activity(kind: str, call_id: str, **fields: object) -> dict[str, object]:
    """Return an activity message payload."""
    return {"type": "activity", "text": "", "activity": {"kind": kind, "id": call_id, **fields}}


def write_run(folder: Path, run_id: str, lines: list[str], mtime_s: int = 1_795_961_115) -> Path:
    """Write one run log with a fixed mtime."""
    path = folder / f"{run_id}.jsonl"
    path.write_text("".join(lines))
    os.utime(path, (mtime_s, mtime_s))
    return path


FULL_RUN = [
    rec("meta", 1, meta("r1", resumedFrom="r0")),
    rec("message", 1, {"type": "instructions", "text": "You are openzot."}),
    rec("message", 2, {"type": "user", "text": "fix it"}),
    rec("message", 2, {"type": "reasoning", "text": "think first"}),
    rec("message", 3, {"type": "bot", "text": "Looking."}),
    rec("message", 3, activity("request", "call_1", name="bash", arguments='{"cmd":"ls"}')),
    rec("event", 3, {"kind": "tool", "tool": "bash", "text": "ls", "iteration": 1}),
    rec("event", 3, {"kind": "token", "text": "x"}),
    rec("message", 5, activity("response", "call_1", name="bash", result="a\nb", failure="")),
    rec("message", 6, activity("request", "call_2", name="cat", arguments="{}")),
    rec("message", 6, activity("response", "call_2", name="cat", result={"n": 1}, failure="boom")),
    rec("reset", 7),
    rec("message", 8, {"type": "checkpoint", "text": "Summary so far"}),
    rec(
        "result",
        9,
        {
            "reason": "done",
            "message": "fixed",
            "code": 0,
            "iterations": 4,
            "calls": 2,
            "continuations": 0,
            "cycles": 0,
            "settles": 1,
            "inputTokens": 100,
            "outputTokens": 20,
        },
    ),
]


@pytest.fixture
def imported(tmp_path: Path) -> MemoryStore:
    """A MemoryStore holding the FULL_RUN run log."""
    write_run(tmp_path, "r1", FULL_RUN)
    store = MemoryStore()
    report = run_migration(store, tmp_path)
    assert report.imported == 1 and report.ok
    return store


def test_meta_maps_to_identity_labels_title_and_created_at(imported: MemoryStore) -> None:
    """id is the stem, meta fields become model/provider/labels, task's first line the title."""
    session = imported.sessions.load("r1")
    assert session.kind is Kind.MAIN
    assert session.model_id == "glm-5.2" and session.provider_id == "zai"
    assert session.labels == {
        "task": "fix the flaky test\nsecond line",
        "driver": "openai",
        "workdir": "/src/app",
        "resumed_from": "r0",
    }
    assert session.title == "fix the flaky test"
    assert session.created_at == clock.parse_rfc3339(AT.format(1))


def test_modified_at_is_the_file_mtime_not_the_import_time(imported: MemoryStore) -> None:
    """The imported session keeps the run log's real age."""
    assert imported.sessions.meta("r1").modified_at == clock.from_ns(1_795_961_115 * 10**9)


def test_snapshot_keeps_only_messages_after_the_last_reset(imported: MemoryStore) -> None:
    """The checkpoint after the reset is the whole resumable conversation, role user."""
    messages = imported.sessions.load("r1").messages
    assert [(m.role, m.text) for m in messages] == [("user", "Summary so far")]
    assert messages[0].extra["runlog_type"] == "checkpoint"


def test_reset_becomes_a_compaction_archive_of_the_discarded_messages(
    imported: MemoryStore,
) -> None:
    """The messages before the reset are in data.replaced, mapped by type to roles."""
    events = list(imported.events.read("r1"))
    assert [e.type for e in events] == ["tool", "compaction.archive", "result"]
    replaced = events[1].data["replaced"]
    roles = [(m["role"], m["runlog_type"]) for m in replaced]
    assert roles == [
        ("system", "instructions"),
        ("user", "user"),
        ("assistant", "reasoning"),
        ("assistant", "bot"),
        ("assistant", "activity"),
        ("tool", "activity"),
        ("assistant", "activity"),
        ("tool", "activity"),
    ]
    assert replaced[2]["reasoning"] == "think first" and replaced[2]["text"] == ""
    assert replaced[4]["tool_calls"] == [{"id": "call_1", "name": "bash", "args": '{"cmd":"ls"}'}]
    assert replaced[5]["tool_result"] == {"call_id": "call_1", "content": "a\nb", "is_error": False}
    assert replaced[7]["tool_result"] == {
        "call_id": "call_2",
        "content": '{"n":1}',
        "is_error": True,
    }
    assert replaced[5]["runlog_activity"]["kind"] == "response"


def test_events_keep_kind_text_tool_iteration_and_drop_token_events(imported: MemoryStore) -> None:
    """A run-log event maps to Event(type=kind, text, data={tool, iteration}); tokens go."""
    tool = next(iter(imported.events.read("r1")))
    assert tool.type == "tool" and tool.text == "ls"
    assert tool.data["tool"] == "bash" and tool.data["iteration"] == 1


def test_result_maps_to_a_result_event_and_a_completed_state(imported: MemoryStore) -> None:
    """The result record becomes the last event and sets state, stop reason and usage."""
    session = imported.sessions.load("r1")
    assert session.state is State.COMPLETED and session.stop_reason == "done"
    assert session.usage.input_tokens == 100 and session.usage.output_tokens == 20
    assert session.counters.turns == 4
    result = list(imported.events.read("r1"))[-1]
    assert result.text == "fixed"
    assert result.data["stop"] == "done" and result.data["code"] == 0
    assert result.data["usage"] == {"input_tokens": 100, "output_tokens": 20}


def test_request_response_pairs_become_audit_rows(imported: MemoryStore) -> None:
    """Each request/response pair is one audit record timed from request to response."""
    rows = imported.audit.list("r1")
    assert [(r.call_id, r.tool, r.args, r.result, r.is_error) for r in rows] == [
        ("call_1", "bash", '{"cmd":"ls"}', "a\nb", False),
        ("call_2", "cat", "{}", '{"n":1}', True),
    ]
    assert rows[0].at == clock.parse_rfc3339(AT.format(5))
    assert rows[0].took_us == 2_000_000


def test_failed_result_sets_state_failed_with_last_error(tmp_path: Path) -> None:
    """A result with an error (or a non-zero code) gives state failed and last_error."""
    write_run(
        tmp_path,
        "bad",
        [
            rec("meta", 1, meta("bad")),
            rec("result", 2, {"reason": "error", "error": "rate limited", "code": 1}),
        ],
    )
    write_run(
        tmp_path,
        "code",
        [
            rec("meta", 1, meta("code")),
            rec("result", 2, {"reason": "x", "message": "m", "code": 3}),
        ],
    )
    store = MemoryStore()
    run_migration(store, tmp_path)
    bad = store.sessions.load("bad")
    assert bad.state is State.FAILED and bad.last_error == "rate limited"
    assert bad.stop_reason == "error"
    code = store.sessions.load("code")
    assert code.state is State.FAILED and code.last_error == "m"


def test_run_without_result_is_failed_and_reported_incomplete(tmp_path: Path) -> None:
    """No result record: state failed, stop reason error, a fixed last_error, counted incomplete."""
    write_run(tmp_path, "open", [rec("meta", 1, meta("open")), rec("message", 2, {"type": "user"})])
    store = MemoryStore()
    report = run_migration(store, tmp_path)
    session = store.sessions.load("open")
    assert session.state is State.FAILED and session.stop_reason == "error"
    assert session.last_error == INCOMPLETE_ERROR
    assert report.incomplete == 1 and report.imported == 1 and report.ok
    assert "incomplete" in report.items[0].detail


def test_stem_wins_over_a_different_meta_id_and_is_reported(tmp_path: Path) -> None:
    """The file stem is the id; a meta.id that differs is reported as a warning."""
    write_run(tmp_path, "stem", [rec("meta", 1, meta("other")), rec("result", 2, {"code": 0})])
    store = MemoryStore()
    report = run_migration(store, tmp_path)
    assert store.sessions.load("stem").id == "stem"
    assert any("!= file stem" in w for w in report.warnings)


def test_attachment_images_become_parts_from_the_blobs_folder(tmp_path: Path) -> None:
    """Image bytes are read from <id>.blobs/; a missing blob is an empty part, not an error."""
    blobs = tmp_path / "img.blobs"
    blobs.mkdir()
    digest = hashlib.sha256(b"\x89PNG").hexdigest()
    (blobs / f"{digest}.png").write_bytes(b"\x89PNG")
    images = [
        {"digest": f"sha256:{digest}", "media_type": "image/png", "width": 1, "height": 1},
        {"digest": "missing", "media_type": "image/jpeg", "width": 2, "height": 2},
    ]
    write_run(
        tmp_path,
        "img",
        [
            rec("meta", 1, meta("img")),
            rec("message", 2, {"type": "attachment", "text": "see", "images": images}),
            rec("result", 3, {"code": 0}),
        ],
    )
    store = MemoryStore()
    report = run_migration(store, tmp_path)
    assert report.skipped.get("not_a_session", 0) == 0
    message = store.sessions.load("img").messages[0]
    assert message.role == "user"
    assert [(p.mime_type, p.data) for p in message.parts] == [
        ("image/png", b"\x89PNG"),
        ("image/jpeg", b""),
    ]


def test_unknown_message_types_are_kept(tmp_path: Path) -> None:
    """A message type the mapping does not know is imported as a user message with its type."""
    write_run(
        tmp_path,
        "odd",
        [
            rec("meta", 1, meta("odd")),
            rec("message", 2, {"type": "hint", "text": "h", "extra": [1]}),
            rec("result", 3, {"code": 0}),
        ],
    )
    store = MemoryStore()
    run_migration(store, tmp_path)
    message = store.sessions.load("odd").messages[0]
    assert message.extra["runlog_type"] == "hint"
    assert message.extra["runlog_fields"] == {"extra": [1]}


def test_a_jsonl_file_without_meta_is_skipped_with_a_reason(tmp_path: Path) -> None:
    """A .jsonl whose first record is not meta is not a run log: skipped, not failed."""
    write_run(tmp_path, "nometa", [rec("message", 1, {"type": "user", "text": "x"})])
    report = run_migration(MemoryStore(), tmp_path, fmt="runlog")
    assert report.skipped["not_a_session"] == 1 and report.ok
    assert "meta" in report.items[0].detail


def test_symlinked_run_logs_are_not_followed(tmp_path: Path) -> None:
    """A symbolic link in the source is skipped with a reason, never read."""
    source = tmp_path / "src"
    source.mkdir()
    write_run(source, "real", [rec("meta", 1, meta("real")), rec("result", 2, {"code": 0})])
    outside = write_run(tmp_path, "outside", [rec("meta", 1, meta("outside"))])
    (source / "link.jsonl").symlink_to(outside)
    store = MemoryStore()
    report = run_migration(store, source)
    assert [s.id for s in store.sessions.list()] == ["real"]
    assert ("link.jsonl", "not_a_session") in [(i.item, i.outcome) for i in report.items]
