"""``sqlstore export`` on hostile stored content and paths (issue 20, items 1, 6 and 9).

Stored sessions are untrusted: names an export writes come from us (a blob's
file name is the sha256 of its bytes), never from the session, and nothing is
written outside ``--out``. One session that cannot be decoded is reported as
failed and the rest are exported. A relative ``--out`` works.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import apsw
import pytest
from reliability.helpers import save_hostile_blobs

from sqlstore import Event, Session, SQLiteStore
from sqlstore.errors import MigrationError
from sqlstore.migrate import export_sessions, run_migration

SQLSTORE = Path(sys.executable).with_name("sqlstore")
"""The installed console script of this venv."""

HOSTILE_BLOB_NAMES = [
    "../../escaped.txt",
    "/tmp/absolute-escape.txt",
    "..",
    ".",
    "",
    "a/b.png",
    "x\x00y.png",
    "n" * 300 + ".png",
    "\x1b[31m.png",
]


def _files_under(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def test_blob_names_from_the_session_never_leave_out_dir(tmp_path: Path) -> None:
    """Absolute and ``..`` blob names stored in a session are replaced by digest names."""
    db = tmp_path / "s.db"
    data = save_hostile_blobs(db, HOSTILE_BLOB_NAMES)
    out = tmp_path / "a" / "b" / "out"
    before = _files_under(tmp_path)
    with SQLiteStore(db, readonly=True) as store:
        report = export_sessions(store, "runlog", out)
    assert report.exported == ["evil"], report.failed
    new = _files_under(tmp_path) - before
    assert all(p in ("a", "a/b") or p.startswith(("a/b/out", "s.db")) for p in new), new
    assert not Path("/tmp/absolute-escape.txt").exists()
    blobs = sorted((out / "evil.blobs").iterdir())
    digest = hashlib.sha256(data).hexdigest()
    assert [p.name for p in blobs] == [f"{digest}.bin", f"{digest}.png", f"{digest}.txt"]
    assert all(p.read_bytes() == data for p in blobs)


def test_console_script_export_of_hostile_blob_names_stays_inside(tmp_path: Path) -> None:
    """Through the installed script: ``../../x`` as a blob name writes only under --out."""
    db = tmp_path / "s.db"
    save_hostile_blobs(db, ["../../escaped.txt"])
    (tmp_path / "a" / "b").mkdir(parents=True)
    done = subprocess.run(
        [
            str(SQLSTORE),
            "--db",
            str(db),
            "export",
            "--format",
            "runlog",
            "--out",
            "a/b/out",
            "--all",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "a" / "escaped.txt").exists()
    assert not (tmp_path / "a" / "b" / "escaped.txt").exists()
    assert len(list((tmp_path / "a" / "b" / "out" / "evil.blobs").iterdir())) == 1


def test_an_existing_symlink_for_the_blob_folder_is_not_followed(tmp_path: Path) -> None:
    """A symlink named ``<id>.blobs`` inside --out fails that session; nothing lands elsewhere."""
    db = tmp_path / "s.db"
    save_hostile_blobs(db, ["x.png"])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "evil.blobs").symlink_to(elsewhere)
    with SQLiteStore(db, readonly=True) as store:
        report = export_sessions(store, "runlog", out)
    assert [sid for sid, _ in report.failed] == ["evil"]
    assert list(elsewhere.iterdir()) == []
    assert not (out / "evil.jsonl").exists()  # the half-written session is removed


def test_an_existing_symlink_for_sid_v2_is_refused(tmp_path: Path) -> None:
    """A mecatl export into --out whose ``sid-v2`` is a symlink is refused before writing."""
    db = tmp_path / "s.db"
    save_hostile_blobs(db, ["x.png"])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "sid-v2").symlink_to(elsewhere)
    with SQLiteStore(db, readonly=True) as store, pytest.raises(MigrationError) as info:
        export_sessions(store, "mecatl", out)
    assert "symbolic link" in str(info.value) and info.value.hint
    assert list(elsewhere.iterdir()) == []


def test_exported_blobs_round_trip_under_their_digest_names(tmp_path: Path) -> None:
    """Blobs written under derived names import back as the same image parts."""
    db = tmp_path / "s.db"
    data = save_hostile_blobs(db, ["../up.png"])
    out = tmp_path / "out"
    with SQLiteStore(db, readonly=True) as store:
        export_sessions(store, "runlog", out)
    digest = hashlib.sha256(data).hexdigest()
    assert (out / "evil.blobs" / f"{digest}.png").read_bytes() == data
    with SQLiteStore(tmp_path / "back.db") as back:
        report = run_migration(back, out)
        assert report.imported == 1, report.items
        assert back.sessions.load("evil").messages[0].text == "see"


def _corrupt_state(db: Path, session_id: str) -> None:
    """Rewrite one stored snapshot so its state is ``bogus`` (as a foreign writer could)."""
    conn = apsw.Connection(os.fspath(db))
    try:
        (body,) = conn.execute("SELECT body FROM snapshots WHERE id = ?", (session_id,)).fetchone()
        bad = bytes(body).replace(b'"state":"idle"', b'"state":"bogus"')
        assert bad != bytes(body)
        conn.execute("UPDATE snapshots SET body = ? WHERE id = ?", (bad, session_id))
    finally:
        conn.close()


@pytest.mark.parametrize("fmt", ["runlog", "mecatl"])
def test_one_undecodable_snapshot_fails_only_that_session(tmp_path: Path, fmt: str) -> None:
    """Through the script: ``export --all`` reports the bad session, exports the rest, exits 1."""
    db = tmp_path / "s.db"
    with SQLiteStore(db) as store:
        for sid in ("a", "b", "c"):
            store.sessions.save(Session.new(sid))
            store.events.append_event(sid, Event("message", text=sid))
    _corrupt_state(db, "b")
    out = tmp_path / "out"
    done = subprocess.run(
        [SQLSTORE, "--db", db, "export", "--format", fmt, "--out", out, "--all"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert "Exported 2 session(s)" in done.stdout
    assert "failed: b: cannot be read: unknown state 'bogus'" in done.stdout
    assert "Hint:" in done.stdout
    with SQLiteStore(tmp_path / "back.db") as back:
        report = run_migration(back, out)
        assert sorted(s.id for s in back.sessions.list()) == ["a", "c"], report.items


@pytest.mark.parametrize("out", ["exported", "./exported", "a/b/exported", "exported/"])
def test_relative_out_directories_work(tmp_path: Path, out: str) -> None:
    """Through the script: a relative ``--out`` (the documented ``./exported``) exports, no hang."""
    db = tmp_path / "s.db"
    with SQLiteStore(db) as store:
        store.sessions.save(Session.new("one"))
    done = subprocess.run(
        [SQLSTORE, "--db", db, "export", "--format", "runlog", "--out", out, "--all"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / out / "one.jsonl").is_file()
    assert (tmp_path / out).stat().st_mode & 0o777 == 0o700
