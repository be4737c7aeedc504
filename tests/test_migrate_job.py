"""The migration job: resumable, idempotent, bounded batches, collisions, bad input (§6)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import apsw
import pytest

from sqlstore import MemoryStore, Session, SQLiteStore, clock
from sqlstore.errors import MigrationError
from sqlstore.migrate import job_id_for, run_migration

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """Each test runs on MemoryStore and on a SQLiteStore file."""
    if request.param == "memory":
        yield MemoryStore()
        return
    with SQLiteStore(tmp_path / "store.db") as opened:
        yield opened


def copy_examples(tmp_path: Path, name: str) -> Path:
    """Copy one example source into tmp_path, keeping mtimes."""
    target = tmp_path / name
    shutil.copytree(EXAMPLES / name, target)
    return target


def snapshot_tree(root: Path) -> dict[str, tuple[str, int, int]]:
    """Hash, mode and mtime of every file and directory under root."""
    out: dict[str, tuple[str, int, int]] = {}
    for path in sorted(root.rglob("*")):
        st = path.stat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
        out[str(path.relative_to(root))] = (digest, st.st_mode, st.st_mtime_ns)
    return out


def counts(store: Any) -> dict[str, tuple[int, int, int]]:
    """Per session: messages, log records (gaps included) and audit rows."""
    return {
        s.id: (
            len(store.sessions.load(s.id).messages),
            sum(1 for _ in store.events.read_after(s.id)),
            len(store.audit.list(s.id)),
        )
        for s in store.sessions.list()
    }


@pytest.mark.parametrize("name", ["runlogs", "mecatl-store"])
def test_the_source_directory_is_never_modified(tmp_path: Path, store: Any, name: str) -> None:
    """Every file's bytes, mode and mtime are the same after an import and an overwrite run."""
    source = copy_examples(tmp_path, name)
    before = snapshot_tree(source)
    run_migration(store, source, verify=True)
    run_migration(store, source, overwrite=True)
    assert snapshot_tree(source) == before


def test_rerun_imports_nothing_and_duplicates_nothing(tmp_path: Path, store: Any) -> None:
    """Running the same import again reports already_imported and changes no session."""
    source = copy_examples(tmp_path, "runlogs")
    first = run_migration(store, source)
    before = counts(store)
    metas = {s.id: store.sessions.meta(s.id) for s in store.sessions.list()}
    second = run_migration(store, source)
    assert first.imported == 4 and second.imported == 0
    assert second.skipped["already_imported"] == 4
    assert counts(store) == before
    assert {s.id: store.sessions.meta(s.id) for s in store.sessions.list()} == metas


def test_changed_item_is_reported_and_overwrite_reimports_it(tmp_path: Path, store: Any) -> None:
    """An item edited after import is 'changed'; --overwrite replaces it without duplicates."""
    source = copy_examples(tmp_path, "runlogs")
    run_migration(store, source)
    path = source / "20261129-153000.jsonl"
    data = path.read_bytes()
    path.write_bytes(
        data[: data.rindex(b"\n") + 1] + b'{"kind":"result","at":"2026-11-29T15:31:00Z",'
        b'"result":{"reason":"done","code":0}}\n'
    )
    changed = run_migration(store, source)
    assert changed.skipped["changed"] == 1 and changed.imported == 0 and changed.ok
    assert store.sessions.load("20261129-153000").state == "failed"
    again = run_migration(store, source, overwrite=True)
    assert again.imported == 1 and again.skipped["already_imported"] == 3
    assert store.sessions.load("20261129-153000").state == "completed"
    assert counts(store)["20261129-153000"] == (2, 2, 0)


def test_existing_session_is_skipped_unless_overwrite(tmp_path: Path, store: Any) -> None:
    """A session id saved by someone else is skipped as 'exists'; --overwrite replaces it."""
    source = copy_examples(tmp_path, "runlogs")
    store.sessions.save(Session.new("20261128-090000", title="mine"))
    report = run_migration(store, source)
    assert report.skipped["exists"] == 1 and report.imported == 3 and report.ok
    assert store.sessions.load("20261128-090000").title == "mine"
    assert run_migration(store, source).skipped["exists"] == 1
    replaced = run_migration(store, source, overwrite=True)
    assert replaced.imported == 1
    assert store.sessions.load("20261128-090000").title == "list the python files in src/"


def test_dry_run_writes_nothing(tmp_path: Path, store: Any) -> None:
    """--dry-run reports what would happen and leaves the store empty."""
    source = copy_examples(tmp_path, "mecatl-store")
    report = run_migration(store, source, dry_run=True)
    assert report.dry_run and report.imported == 3
    assert store.sessions.list() == []
    assert run_migration(store, source).imported == 3


def test_verify_loads_every_session_back(tmp_path: Path, store: Any) -> None:
    """--verify compares message, record and audit counts of every imported session."""
    report = run_migration(store, copy_examples(tmp_path, "mecatl-store"), verify=True)
    assert report.verified == 3 and report.ok


def test_modified_at_comes_from_the_source(tmp_path: Path, store: Any) -> None:
    """Envelope modified_at (sid-v2) and file mtime (sid-v1, run logs) become modified_at."""
    source = copy_examples(tmp_path, "mecatl-store")
    run_migration(store, source)
    meta = store.sessions.meta("sess-2026-11-29-review")
    assert meta.modified_at == clock.parse_rfc3339("2026-11-29T10:04:12.500000Z")
    v1 = next((source / "sid-v1").iterdir())
    assert store.sessions.meta("nightly-deps-2026-10-01").modified_at == clock.from_ns(
        v1.stat().st_mtime_ns
    )


def test_malformed_lines_are_warnings_with_file_and_line(tmp_path: Path, store: Any) -> None:
    """A malformed complete line is skipped and reported as file:line; the rest imports."""
    source = copy_examples(tmp_path, "runlogs")
    path = source / "20261128-090000.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join([*lines[:2], b"{oops\n", *lines[2:]]))
    report = run_migration(store, source)
    assert any(w.startswith(f"{path}:3: malformed") for w in report.warnings)
    assert report.ok and report.imported == 4


def test_checkpoint_rows_carry_fingerprints_and_outcomes(tmp_path: Path) -> None:
    """Each item has a migration_items row with size, mtime_ns, sha256, outcome and id."""
    source = copy_examples(tmp_path, "runlogs")
    with SQLiteStore(tmp_path / "s.db") as store:
        run_migration(store, source)
    conn = apsw.Connection(os.fspath(tmp_path / "s.db"))
    rows = conn.execute(
        "SELECT item, size, mtime_ns, sha256, outcome, session_id FROM migration_items "
        "WHERE job_id = ? ORDER BY item",
        (job_id_for(source),),
    ).fetchall()
    job = conn.execute("SELECT format, state FROM migrations").fetchall()
    conn.close()
    assert job == [("runlog", "done")]
    by_item = {r[0]: r for r in rows}
    run = source / "20261128-090000.jsonl"
    _, size, mtime_ns, sha, outcome, sid = by_item[run.name]
    assert (size, mtime_ns, outcome, sid) == (
        run.stat().st_size,
        run.stat().st_mtime_ns,
        "imported",
        "20261128-090000",
    )
    assert len(sha) == 64
    assert "README.txt" not in by_item  # not a source item: reported, never read


def test_job_id_is_32_hex_of_the_resolved_source_path(tmp_path: Path) -> None:
    """The same directory named two ways has one job id; another directory has another."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    job = job_id_for(tmp_path / "a")
    assert len(job) == 32 and int(job, 16) >= 0
    assert job_id_for(tmp_path / "b" / ".." / "a") == job
    assert job_id_for(tmp_path / "b") != job


@pytest.mark.parametrize("batch", [0, 101])
def test_batch_size_is_bounded(tmp_path: Path, batch: int) -> None:
    """Batches hold 1 to 100 sessions."""
    with pytest.raises(MigrationError):
        run_migration(MemoryStore(), EXAMPLES / "runlogs", batch_sessions=batch)


def test_unknown_source_layout_is_refused(tmp_path: Path) -> None:
    """A directory that is neither format raises MigrationError with a hint."""
    (tmp_path / "x.txt").write_text("?")
    with pytest.raises(MigrationError) as caught:
        run_migration(MemoryStore(), tmp_path)
    assert "--format" in caught.value.hint


def test_many_items_in_small_batches_all_import_once(tmp_path: Path, store: Any) -> None:
    """37 items in batches of 5 all import, with their events, exactly once."""
    source = tmp_path / "many"
    source.mkdir()
    template = (EXAMPLES / "runlogs" / "20261128-090000.jsonl").read_text()
    for index in range(37):
        run_id = f"20261201-{index:06d}"
        (source / f"{run_id}.jsonl").write_text(template.replace("20261128-090000", run_id))
    progress: list[tuple[int, int]] = []
    report = run_migration(
        store, source, batch_sessions=5, progress=lambda d, t: progress.append((d, t))
    )
    assert report.imported == 37 and report.events == 37 * 2 and report.audit_rows == 37
    assert progress[-1] == (37, 37) and len(progress) == 37
    assert set(counts(store).values()) == {(5, 2, 1)}


def test_report_json_is_serialisable(tmp_path: Path) -> None:
    """MigrationReport.to_json() is plain JSON with the summary fields."""
    report = run_migration(MemoryStore(), EXAMPLES / "runlogs")
    doc = json.loads(json.dumps(report.to_json()))
    assert doc["imported"] == 4 and doc["skipped"] == {"not_a_session": 1}
    assert doc["incomplete"] == 1 and doc["failed"] == 0


def test_an_id_with_only_an_event_log_counts_as_existing(tmp_path: Path, store: Any) -> None:
    """Events stored under an id without a snapshot are never replaced without --overwrite."""
    from sqlstore import Event

    source = copy_examples(tmp_path, "runlogs")
    store.events.append("20261128-090000", Event("note", text="mine"))
    report = run_migration(store, source)
    assert report.skipped["exists"] == 1
    assert [e.text for e in store.events.read("20261128-090000")] == ["mine"]


def test_overwriting_a_log_gives_it_a_new_generation(tmp_path: Path, store: Any) -> None:
    """Re-importing a changed item replaces its log; cursors of the old log expire."""
    from sqlstore.errors import CursorExpired

    source = copy_examples(tmp_path, "mecatl-store")
    run_migration(store, source)
    sid = "sess-2026-11-29-review"
    cursor = next(iter(store.events.read_after(sid))).cursor
    envelope_file = next((source / "sid-v2").glob("sid-v2-sess-2026-11-29-review-*.session.json"))
    envelope = json.loads(envelope_file.read_text())
    envelope["snapshot"]["title"] = "renamed"
    envelope_file.write_text(json.dumps(envelope))
    assert run_migration(store, source, overwrite=True).imported == 1
    assert store.sessions.load(sid).title == "renamed"
    with pytest.raises(CursorExpired):
        list(store.events.read_after(sid, cursor))
