"""CliRunner tests of the maintenance commands (check, stats, vacuum, backup) and their library."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import apsw
import pytest
from click.testing import CliRunner, Result
from freezegun import freeze_time

from cli.main import cli
from sqlstore import Event, Kind, Relationship, Session, SQLiteStore, ToolCallRecord
from sqlstore.errors import UnsafePath
from sqlstore.sqlite import maintenance
from sqlstore.sqlite.connection import SCHEMA_VERSION

PAD = "x" * 8_000


def run(*args: str) -> Result:
    """Invoke the CLI in-process."""
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def fill(path: Path, count: int, *, pad: str = "") -> None:
    """Save ``count`` sessions (optionally padded), each with two events and one audit row."""
    with SQLiteStore(path) as store:
        for i in range(count):
            s = Session.new(f"s{i:03d}", title=f"session {i}")
            s.labels["pad"] = pad
            store.sessions.save(s)
            store.events.append_event(s.id, Event(type="turn.start"))
            store.events.append_event(s.id, Event(type="result", data={"stop": "end_turn"}))
            store.audit.record(ToolCallRecord(s.id, call_id="c", tool="bash"))


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A store with three sessions of different kinds and states."""
    path = tmp_path / "s.db"
    with freeze_time("2025-03-01T10:00:00Z"), SQLiteStore(path) as store:
        store.sessions.save(Session.new("m1"))
        store.events.append_event("m1", Event(type="turn.start"))
        store.events.append_gap("m1", "lost")
        store.audit.record(ToolCallRecord("m1", call_id="a", tool="bash", is_error=True))
    with freeze_time("2025-03-02T10:00:00Z"), SQLiteStore(path) as store:
        done = Session.new("m2")
        done.complete()
        store.sessions.save(done)
        child = Session.new(
            "c1", kind=Kind.SUBAGENT, relationship=Relationship(parent_session_id="m1", call_id="x")
        )
        store.sessions.save(child)
    return path


# -- check ---------------------------------------------------------------------------------


def test_check_healthy_file(db: Path) -> None:
    """`check` on a healthy store exits 0 and reports version, WAL mode and counts."""
    result = run("--db", str(db), "check", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["ok"] is True and doc["problems"] == []
    assert doc["schema_version"] == doc["expected_schema_version"] == SCHEMA_VERSION
    assert doc["journal_mode"] == "wal"
    assert doc["integrity"] == ["ok"]
    assert doc["counts"]["sessions"] == 3
    assert doc["counts"]["events"] == 2
    assert doc["counts"]["tool_calls"] == 1
    assert doc["file_bytes"] == db.stat().st_size
    human = run("--db", str(db), "check")
    assert "status          ok" in human.stdout
    assert "wal size" in human.stdout


def test_check_reports_damaged_pages(tmp_path: Path) -> None:
    """Overwritten pages make `check` list integrity problems and exit 1."""
    path = tmp_path / "bad.db"
    fill(path, 60, pad=PAD)
    size = path.stat().st_size
    with open(path, "r+b") as handle:
        for offset in range(size // 3, size // 3 + 16 * 4096, 4096):
            handle.seek(offset + 100)
            handle.write(os.urandom(1500))
    result = run("--db", str(path), "--json", "check")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["ok"] is False
    assert doc["problems"]
    human = run("--db", str(path), "check")
    assert "PROBLEMS FOUND" in human.stdout and "problem:" in human.stdout
    assert run("--db", str(path), "check", "--quick").exit_code == 1


def test_check_quick_on_healthy_file(db: Path) -> None:
    """`check --quick` runs quick_check and passes on a healthy file."""
    result = run("--db", str(db), "--json", "check", "--quick")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["integrity"] == ["ok"]


def test_check_not_sqlite(tmp_path: Path) -> None:
    """`check` on a file that is not SQLite reports it and exits 1."""
    path = tmp_path / "junk.db"
    path.write_bytes(b"hello" * 1000)
    result = run("--db", str(path), "--json", "check")
    assert result.exit_code == 1
    assert "not a SQLite database" in json.loads(result.stdout)["problems"][0]


def test_check_foreign_database(tmp_path: Path) -> None:
    """`check` on another application's SQLite file reports it and exits 1."""
    path = tmp_path / "other.db"
    conn = apsw.Connection(str(path))
    conn.execute("CREATE TABLE t (x); PRAGMA application_id = 42")
    conn.close()
    result = run("--db", str(path), "--json", "check")
    assert result.exit_code == 1
    assert "not a sqlstore database" in json.loads(result.stdout)["problems"][0]


def test_schema_too_new(db: Path) -> None:
    """A newer schema fails `check` (exit 1) and other commands with Error and an upgrade hint."""
    conn = apsw.Connection(str(db))
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    doc = json.loads(run("--db", str(db), "--json", "check").stdout)
    assert doc["ok"] is False and "newer" in doc["problems"][0]
    result = run("--db", str(db), "ls")
    assert result.exit_code == 1
    assert "schema version 99" in result.stderr
    assert "Hint: Upgrade sqlstore" in result.stderr


def test_check_reports_journal_mode_not_wal(db: Path) -> None:
    """A sqlstore file switched out of WAL mode fails `check` with the mode named."""
    conn = apsw.Connection(str(db))
    conn.execute("PRAGMA journal_mode=DELETE").fetchall()
    conn.close()
    result = run("--db", str(db), "--json", "check")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["journal_mode"] == "delete"
    assert doc["problems"] == ["journal_mode is 'delete', expected 'wal'"]


def test_check_library_never_creates(tmp_path: Path) -> None:
    """`maintenance.check` on a missing path raises and creates nothing."""
    with pytest.raises(Exception, match="no database"):
        maintenance.check(tmp_path / "none.db")
    assert os.listdir(tmp_path) == []


# -- stats ---------------------------------------------------------------------------------


def test_stats_counts(db: Path) -> None:
    """`stats` counts sessions by kind and state, events, audit rows, and the age range."""
    result = run("--db", str(db), "stats", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["sessions"] == 3
    assert doc["by_kind"] == {"main": 2, "subagent": 1}
    assert doc["by_state"] == {"completed": 1, "idle": 2}
    assert doc["events"] == 2 and doc["event_logs"] == 1
    assert doc["audit_rows"] == 1
    assert doc["file_bytes"] == db.stat().st_size
    assert doc["oldest"].startswith("2025-03-01T10:00:00")
    assert doc["newest"].startswith("2025-03-02T10:00:00")
    human = run("--db", str(db), "stats").stdout
    assert "kind subagent" in human and "state completed" in human
    assert "oldest write  2025-03-01 10:00:00" in human


def test_stats_empty_store(tmp_path: Path) -> None:
    """`stats` on an empty store reports zeros and no age range."""
    path = tmp_path / "e.db"
    run("--db", str(path), "init")
    doc = json.loads(run("--db", str(path), "--json", "stats").stdout)
    assert doc["sessions"] == 0 and doc["oldest"] is None and doc["by_kind"] == {}


# -- vacuum --------------------------------------------------------------------------------


@pytest.mark.parametrize("incremental", [False, True])
def test_vacuum_shrinks_after_deletes(tmp_path: Path, incremental: bool) -> None:
    """After deleting most sessions, `vacuum` (full or --incremental) makes the file smaller."""
    path = tmp_path / "v.db"
    fill(path, 80, pad=PAD)
    with SQLiteStore(path) as store:
        for i in range(70):
            store.sessions.delete(f"s{i:03d}")
    args = ["--db", str(path), "--json", "vacuum"] + (["--incremental"] if incremental else [])
    result = run(*args)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["mode"] == ("incremental" if incremental else "full")
    assert doc["bytes_after"] < doc["bytes_before"] / 2
    assert doc["wal_bytes_after"] == 0
    assert path.stat().st_size == doc["bytes_after"]
    assert run("--db", str(path), "check").exit_code == 0
    with SQLiteStore(path) as store:
        assert len(store.sessions.list()) == 10


# -- backup --------------------------------------------------------------------------------


def test_backup_copy_opens_and_passes_check(db: Path, tmp_path: Path) -> None:
    """`backup DEST` writes a 0600 copy in WAL mode that passes `check` and holds the same data."""
    dest = tmp_path / "backups" / "copy.db"
    result = run("--db", str(db), "--json", "backup", str(dest))
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["check"]["ok"] is True
    assert doc["dest"] == str(dest)
    assert dest.stat().st_mode & 0o777 == 0o600
    assert run("--db", str(dest), "check").exit_code == 0
    with SQLiteStore(dest, create=False) as copy, SQLiteStore(db) as source:
        assert copy.sessions.list() == source.sessions.list()
        assert [r.cursor for r in copy.events.read_after("m1")] == [
            r.cursor for r in source.events.read_after("m1")
        ]
        assert copy.audit.list("m1") == source.audit.list("m1")


def test_backup_refuses_existing_destination(db: Path, tmp_path: Path) -> None:
    """`backup` never overwrites: an existing DEST is an error (exit 1) and stays unchanged."""
    dest = tmp_path / "exists.db"
    dest.write_bytes(b"keep me")
    result = run("--db", str(db), "backup", str(dest))
    assert result.exit_code == 1
    assert "already exists" in result.stderr and "Hint: " in result.stderr
    assert dest.read_bytes() == b"keep me"


def test_backup_refuses_symlink_destination(db: Path, tmp_path: Path) -> None:
    """A symlink as DEST is refused, whatever it points at."""
    link = tmp_path / "link.db"
    link.symlink_to(tmp_path / "nowhere.db")
    with SQLiteStore(db) as store, pytest.raises(UnsafePath):
        maintenance.backup(store, link)
    assert not (tmp_path / "nowhere.db").exists()


def test_backup_during_concurrent_appends(tmp_path: Path) -> None:
    """A backup taken while another store appends is a consistent copy that passes check."""
    path = tmp_path / "busy.db"
    fill(path, 20)
    stop = threading.Event()
    appended: list[int] = []

    def writer() -> None:
        with SQLiteStore(path, durability="normal") as store:
            while not stop.is_set():
                store.events.append_event("s000", Event(type="tick"))
                appended.append(1)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        while len(appended) < 20:
            stop.wait(0.01)
        with SQLiteStore(path) as store:
            report = maintenance.backup(store, tmp_path / "copy.db")
    finally:
        stop.set()
        thread.join()
    assert report.check.ok, report.check.problems
    with SQLiteStore(tmp_path / "copy.db", create=False) as copy:
        copied = list(copy.events.read_after("s000"))
    with SQLiteStore(path) as store:
        original = [r.cursor for r in store.events.read_after("s000")]
    assert len(copied) >= 20
    assert [r.cursor for r in copied] == original[: len(copied)]  # a prefix: one snapshot


def test_backup_of_a_damaged_file_keeps_no_copy(tmp_path: Path) -> None:
    """`backup` of a file with damaged pages exits 1 with Error and Hint and leaves no copy."""
    path = tmp_path / "bad.db"
    fill(path, 60, pad=PAD)
    conn = apsw.Connection(str(path))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the pages to damage are in the file now
    (first,) = conn.execute("SELECT min(pageno) FROM dbstat WHERE name = 'events'").fetchone()
    size = int(conn.execute("PRAGMA page_size").fetchone()[0])
    conn.close()
    with open(path, "r+b") as handle:
        handle.seek((first - 1) * size)
        handle.write(b"\xff" * size)
    dest = tmp_path / "copy.db"
    result = run("--db", str(path), "backup", str(dest))
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith("Error: ") and "failed its check" in result.stderr
    assert "Hint: " in result.stderr and "check" in result.stderr
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("copy.db")]


def test_backup_refuses_a_leftover_wal_beside_destination(db: Path, tmp_path: Path) -> None:
    """A stale DEST-wal (or -shm) is refused: SQLite would replay it into the new copy."""
    dest = tmp_path / "copy.db"
    stale = tmp_path / "copy.db-wal"
    stale.write_bytes(b"stale")
    result = run("--db", str(db), "backup", str(dest))
    assert result.exit_code == 1
    assert "leftover" in result.stderr and "Hint: " in result.stderr
    assert not dest.exists() and stale.read_bytes() == b"stale"


def test_backup_never_deletes_a_file_it_did_not_create(db: Path, tmp_path: Path) -> None:
    """The exclusive create refuses a DEST that appeared after the existence check."""
    from sqlstore import SQLiteStore as Store
    from sqlstore.sqlite.connection import prepare_path
    from sqlstore.sqlite.maintenance import BackupTargetExists

    dest = tmp_path / "late.db"
    dest.write_bytes(b"theirs")
    with pytest.raises(FileExistsError):
        prepare_path(str(dest), create=True, exclusive=True)
    with Store(db) as store, pytest.raises(BackupTargetExists):
        maintenance.backup(store, dest)
    assert dest.read_bytes() == b"theirs"
