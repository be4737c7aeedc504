"""openzot run logs: writing, tolerant reading and listing (JSONL-FORMATS.md §1)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from freezegun import freeze_time
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlstore import runlog

META = {"task": "fix the flaky test", "model": "glm-5.2", "provider": "zai", "driver": "openai"}


def test_create_writes_meta_first_with_kind_first_and_mode_0600(tmp_path: Path) -> None:
    """A created run log is 0600, its meta carries the id, and every line starts with kind."""
    with runlog.create(tmp_path, "run-1", dict(META)) as writer:
        writer.message({"type": "user", "text": "hi"})
        writer.event({"kind": "tool", "tool": "bash"})
    path = tmp_path / "run-1.jsonl"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    lines = path.read_bytes().splitlines()
    assert all(line.startswith(b'{"kind":') for line in lines)
    first = json.loads(lines[0])
    assert first["kind"] == "meta" and first["meta"]["id"] == "run-1"
    assert first["meta"]["task"] == META["task"]


def test_create_refuses_an_existing_id(tmp_path: Path) -> None:
    """Creating a run log whose id exists raises FileExistsError and leaves the file alone."""
    runlog.create(tmp_path, "same", dict(META)).close()
    before = (tmp_path / "same.jsonl").read_bytes()
    with pytest.raises(FileExistsError):
        runlog.create(tmp_path, "same", dict(META))
    assert (tmp_path / "same.jsonl").read_bytes() == before


def test_start_derives_the_id_from_utc_time_then_numbers_collisions(tmp_path: Path) -> None:
    """start() uses YYYYMMDD-HHMMSS in UTC at call time, then -2, -3 for the same second."""
    with freeze_time("2026-11-29T14:05:01Z"):
        ids = [runlog.start(tmp_path, dict(META)) for _ in range(3)]
    for writer in ids:
        writer.close()
    assert [w.id for w in ids] == ["20261129-140501", "20261129-140501-2", "20261129-140501-3"]
    with freeze_time("2026-11-29T14:05:02Z"):
        later = runlog.start(tmp_path, dict(META))
    later.close()
    assert later.id == "20261129-140502"


def test_start_gives_up_after_99_ids_in_one_second(tmp_path: Path) -> None:
    """When the base id and -2 … -99 all exist, start() raises FileExistsError."""
    (tmp_path / "20261129-140501.jsonl").write_text("")
    for number in range(2, 100):
        (tmp_path / f"20261129-140501-{number}.jsonl").write_text("")
    with freeze_time("2026-11-29T14:05:01Z"), pytest.raises(FileExistsError):
        runlog.start(tmp_path, dict(META))


def test_writer_drops_token_events_and_reset_moves_messages(tmp_path: Path) -> None:
    """token/reasoningToken events are not written; reset moves current messages to discarded."""
    with runlog.create(tmp_path, "r", dict(META)) as writer:
        writer.message({"type": "user", "text": "one"})
        assert writer.event({"kind": "token", "text": "x"}) is False
        assert writer.event({"kind": "reasoningToken", "text": "y"}) is False
        assert writer.event({"kind": "tool", "tool": "bash"}) is True
        writer.reset()
        writer.message({"type": "checkpoint", "text": "summary"})
        assert [m["text"] for m in writer.log.discarded] == ["one"]
        writer.finish({"reason": "done", "code": 0})
    log = runlog.load(tmp_path / "r.jsonl")
    assert [e["kind"] for e in log.events] == ["tool"]
    assert [m["text"] for m in log.discarded] == ["one"]
    assert [m["text"] for m in log.messages] == ["summary"]
    assert log.result == {"reason": "done", "code": 0}
    assert not log.truncated and log.torn == 0
    assert log.started is not None and log.ended is not None and log.started <= log.ended


def test_every_record_is_on_disk_when_the_call_returns(tmp_path: Path) -> None:
    """A second reader sees each record as soon as the writer's call returns."""
    with runlog.create(tmp_path, "live", dict(META)) as writer:
        writer.message({"type": "user", "text": "a"})
        assert len(runlog.load(writer.path).messages) == 1
        writer.message({"type": "bot", "text": "b"})
        assert len(runlog.load(writer.path).messages) == 2


def test_load_tolerates_blank_malformed_and_torn_lines(tmp_path: Path) -> None:
    """Blank lines are skipped, malformed lines set truncated, and a torn tail is counted."""
    path = tmp_path / "bad.jsonl"
    path.write_bytes(
        b'{"kind":"meta","at":"2026-11-29T14:05:01Z","meta":{"id":"bad","task":"t"}}\n'
        b"\n"
        b"{not json\n"
        b'{"kind":"message","at":"2026-11-29T14:05:02Z","message":{"type":"user","text":"x"}}\n'
        b'{"kind":"message","at":"2026-11-29T14:05:03Z","mess'
    )
    log = runlog.load(path)
    assert log.truncated is True
    assert log.torn == 1
    assert [m["text"] for m in log.messages] == ["x"]
    assert [p.line for p in log.problems] == [3, 5]
    assert str(log.problems[0]).startswith(f"{path}:3: malformed")


def test_torn_tail_alone_does_not_set_truncated(tmp_path: Path) -> None:
    """A torn final line is reported but is not a malformed line."""
    path = tmp_path / "torn.jsonl"
    path.write_bytes(b'{"kind":"meta","at":"2026-11-29T14:05:01Z","meta":{"id":"torn"}}\n{"ki')
    log = runlog.load(path)
    assert log.torn == 1 and log.truncated is False and log.meta == {"id": "torn"}


def test_list_runs_is_newest_first_and_decodes_only_meta_and_result(tmp_path: Path) -> None:
    """Listing sorts by id descending and does not choke on bad message lines."""
    for run_id in ("20261128-090000", "20261129-140501", "20261129-140501-2"):
        with runlog.create(tmp_path, run_id, dict(META)) as writer:
            writer.message({"type": "user", "text": "x"})
            if run_id != "20261128-090000":
                writer.finish({"reason": "done", "code": 0})
    with (tmp_path / "20261128-090000.jsonl").open("ab") as handle:
        handle.write(b'{"kind":"message","at":"x","message":{broken\n')
    (tmp_path / "notes.txt").write_text("not a run log")
    runs = runlog.list_runs(tmp_path)
    assert [r.id for r in runs] == ["20261129-140501-2", "20261129-140501", "20261128-090000"]
    assert runs[2].result is None and runs[0].result == {"reason": "done", "code": 0}
    assert runs[1].meta is not None and runs[1].meta["id"] == "20261129-140501"


_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20)


@settings(max_examples=40, deadline=None)
@given(
    texts=st.lists(_text, max_size=8),
    garbage=st.lists(st.binary(min_size=1, max_size=30), max_size=3),
)
def test_reader_keeps_every_valid_record_whatever_garbage_is_mixed_in(
    tmp_path_factory: pytest.TempPathFactory, texts: list[str], garbage: list[bytes]
) -> None:
    """Property: valid records survive interleaved garbage lines, in order."""
    folder = tmp_path_factory.mktemp("prop")
    with runlog.create(folder, "p", dict(META)) as writer:
        for text in texts:
            writer.message({"type": "user", "text": text})
    lines = (folder / "p.jsonl").read_bytes().splitlines(keepends=True)
    mixed = [lines[0]]
    for index, line in enumerate(lines[1:]):
        if index < len(garbage):
            mixed.append(garbage[index].replace(b"\n", b" ") + b"\n")
        mixed.append(line)
    (folder / "p.jsonl").write_bytes(b"".join(mixed))
    log = runlog.load(folder / "p.jsonl")
    assert [m["text"] for m in log.messages] == texts
    os.unlink(folder / "p.jsonl")


_values = st.recursive(
    st.none() | st.booleans() | st.integers() | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=5,
)


@settings(max_examples=80, deadline=None)
@given(
    lines=st.lists(st.one_of(_values.map(lambda v: ("ok", v)), st.just(("bad", None))), max_size=8),
    tail=st.sampled_from([b"", b"  ", b'{"torn', b"{}"]),
)
def test_jsonl_parser_keeps_valid_lines_with_numbers_and_flags_torn_tails(
    lines: list[tuple[str, object]], tail: bytes
) -> None:
    """Property: valid lines return in order with line numbers; bad lines and tails are reported."""
    from sqlstore.jsonl import dumps_line, parse_jsonl

    data = b"".join(dumps_line(v) if kind == "ok" else b"{bad\n" for kind, v in lines) + tail
    parsed = parse_jsonl(data, "f")
    expected = [(n, v) for n, (kind, v) in enumerate(lines, start=1) if kind == "ok"]
    assert parsed.lines == expected
    assert parsed.torn == bool(tail.strip())
    bad = [n for n, (kind, _) in enumerate(lines, start=1) if kind == "bad"]
    assert [p.line for p in parsed.problems] == bad + ([len(lines) + 1] if parsed.torn else [])
