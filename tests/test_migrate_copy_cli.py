"""`sqlstore migrate --to/--from`: copying every session between two stores."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from cli.main import cli
from sqlstore import Event, Session, SQLiteStore, ToolCallRecord


def _fill(path: Path, count: int) -> None:
    with SQLiteStore(path) as store:
        for n in range(count):
            sid = f"s{n}"
            store.sessions.save(Session.new(sid, title=f"run {n}"))
            store.events.append(sid, Event("turn.start", seq=n))
            store.events.append_gap(sid, "lost one")
            store.audit.record(ToolCallRecord(session_id=sid, call_id="c", tool="bash"))


def test_copy_to_another_file_and_back_is_complete_and_resumable(tmp_path: Path) -> None:
    """--to copies every session with events, gaps and audit; a rerun copies nothing again."""
    src, dst = tmp_path / "a.db", tmp_path / "b.db"
    _fill(src, 5)
    runner = CliRunner()
    first = runner.invoke(cli, ["--db", str(src), "migrate", "--to", str(dst), "--json"])
    assert first.exit_code == 0, first.output
    assert json.loads(first.output)["copied"] == 5
    with SQLiteStore(src) as a, SQLiteStore(dst) as b:
        for n in range(5):
            sid = f"s{n}"
            assert b.sessions.load(sid) == a.sessions.load(sid)
            assert [(r.kind, r.event, r.gap_reason) for r in b.events.read_after(sid)] == [
                (r.kind, r.event, r.gap_reason) for r in a.events.read_after(sid)
            ]
            assert b.audit.list(sid) == a.audit.list(sid)
            assert b.sessions.meta(sid).modified_at == a.sessions.meta(sid).modified_at
    again = runner.invoke(cli, ["--db", str(src), "migrate", "--to", str(dst), "--json"])
    assert again.exit_code == 0, again.output
    doc = json.loads(again.output)
    assert doc["copied"] == 0 and sum(doc["skipped"].values()) == 5
    back = tmp_path / "c.db"
    result = runner.invoke(cli, ["migrate", "--from", str(dst), "--to", str(back)])
    assert result.exit_code == 0, result.output
    assert "copied 5" in result.output
    with SQLiteStore(back) as c:
        assert sorted(s.id for s in c.sessions.list()) == [f"s{n}" for n in range(5)]


def test_migrate_without_source_or_target_is_a_usage_error(tmp_path: Path) -> None:
    """migrate with neither SOURCE nor --to/--from exits 2 and names the choice."""
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "a.db"), "migrate"])
    assert result.exit_code == 2
    assert "--to/--from" in result.output
    assert not (tmp_path / "a.db").exists()


def test_import_directory_into_another_store(tmp_path: Path) -> None:
    """SOURCE with --to imports into that store and leaves --db alone."""
    examples = Path(__file__).resolve().parents[1] / "examples" / "runlogs"
    target = tmp_path / "t.db"
    result = CliRunner().invoke(
        cli,
        ["--db", str(tmp_path / "unused.db"), "migrate", str(examples), "--to", str(target)],
    )
    assert result.exit_code == 0, result.output
    assert not (tmp_path / "unused.db").exists()
    with SQLiteStore(target) as store:
        assert store.sessions.list()


def test_copy_report_to_json_is_what_the_cli_prints(tmp_path: Path) -> None:
    """``CopyReport.to_json()`` gives the counts and failures, the same document as ``--json``."""
    from sqlstore import MemoryStore
    from sqlstore.migrate import copy_store

    _fill(tmp_path / "a.db", 3)
    with SQLiteStore(tmp_path / "a.db") as src, MemoryStore() as dst:
        dst.sessions.save(Session.new("s1", title="already here"))
        doc = copy_store(src, dst).to_json()
    assert json.loads(json.dumps(doc)) == doc
    assert (doc["copied"], doc["skipped"], doc["failed"]) == (2, {"exists": 1}, [])
    assert (doc["events"], doc["audit_rows"]) == (4, 2)
    assert isinstance(doc["job_id"], str) and doc["job_id"].startswith("copy-")
    cli_doc = json.loads(
        CliRunner()
        .invoke(
            cli,
            ["--db", str(tmp_path / "a.db"), "migrate", "--to", str(tmp_path / "b.db"), "--json"],
        )
        .output
    )
    assert set(cli_doc) == set(doc)
