"""The CLI on bad files: an ``Error:`` line and a ``Hint:``, exit 1, and the file untouched.

Every command that opens the database is run against truncated, damaged, foreign,
newer-schema, symlinked, directory and missing paths, and on a store whose file
is read-only. None may end in a traceback (a raw exception escaping the CLI), and
none may change a byte of the file or of its WAL.
"""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Callable
from pathlib import Path

import apsw
import pytest
from click.testing import CliRunner, Result

from cli.main import cli
from sqlstore import Event, Session, SQLiteStore, ToolCallRecord

from .helpers import chattr, file_digests

COMMANDS = [
    ["ls"],
    ["stats"],
    ["show", "s0"],
    ["events", "s0"],
    ["audit", "s0"],
    ["check"],
    ["rm", "s0", "--yes"],
    ["prune", "--older-than", "1d", "--yes"],
    ["vacuum"],
    ["backup", "{out}/copy.db"],
    ["export", "--format", "runlog", "--out", "{out}/export", "--all"],
]


def _store(path: Path) -> None:
    with SQLiteStore(path, durability="normal") as store:
        for i in range(30):
            sid = f"s{i}"
            store.sessions.create(Session.new(sid, title="x" * 200))
            for seq in range(10):
                store.events.append_event(sid, Event("e", seq=seq, text="y" * 100))
            store.audit.record(ToolCallRecord(session_id=sid, call_id="c", tool="t"))


def _truncated(path: Path) -> None:
    _store(path)
    os.truncate(path, os.path.getsize(path) // 2)


def _garbage(path: Path) -> None:
    _store(path)
    # Garbage over the first page of every table a command reads (dbstat knows
    # where they are), so every command meets the damage.
    conn = apsw.Connection(str(path))
    firsts = [
        int(pageno)
        for (pageno,) in conn.execute(
            "SELECT min(pageno) FROM dbstat WHERE name IN "
            "('sessions', 'snapshots', 'events', 'event_logs', 'tool_calls') GROUP BY name"
        )
    ]
    size = int(conn.execute("PRAGMA page_size").fetchone()[0])
    conn.close()
    rng = random.Random(7)
    with open(path, "r+b") as handle:
        for pageno in firsts:
            handle.seek((pageno - 1) * size)
            handle.write(rng.randbytes(size))


def _text(path: Path) -> None:
    path.write_text("just some notes\n" * 100)


def _foreign(path: Path) -> None:
    conn = apsw.Connection(str(path))
    conn.execute("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('mine')")
    conn.close()


def _foreign_wal(path: Path) -> None:
    src = path.with_name("src-" + path.name)
    conn = apsw.Connection(str(src))
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA wal_autocheckpoint=0")
    conn.execute("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('mine')")
    shutil.copy(src, path)
    shutil.copy(str(src) + "-wal", str(path) + "-wal")
    conn.close()


def _newer(path: Path) -> None:
    _store(path)
    conn = apsw.Connection(str(path))
    conn.execute("PRAGMA user_version = 42")
    conn.close()


def _symlink(path: Path) -> None:
    real = path.with_name("real.db")
    _store(real)
    path.symlink_to(real)


def _directory(path: Path) -> None:
    path.mkdir()


def _missing(path: Path) -> None:
    return None


BAD_FILES: dict[str, Callable[[Path], None]] = {
    "truncated": _truncated,
    "garbage": _garbage,
    "text": _text,
    "foreign": _foreign,
    "foreign-wal": _foreign_wal,
    "newer-schema": _newer,
    "symlink": _symlink,
    "directory": _directory,
    "missing": _missing,
}


def _run(db: Path, args: list[str]) -> Result:
    return CliRunner().invoke(cli, ["--db", str(db), *args], catch_exceptions=True)


def _snapshot_of(path: Path) -> object:
    if path.is_symlink():
        return ("link", os.readlink(path), file_digests(path.resolve()))
    if path.is_dir():
        return ("dir", sorted(p.name for p in path.iterdir()))
    if not path.exists():
        return ("missing", sorted(p.name for p in path.parent.iterdir()))
    return file_digests(path)


@pytest.mark.parametrize("kind", sorted(BAD_FILES))
def test_cli_reports_bad_files_without_traceback_or_change(tmp_path: Path, kind: str) -> None:
    """Each command on a bad file exits 1 with an Error and a Hint, and changes nothing."""
    db = tmp_path / "bad.db"
    BAD_FILES[kind](db)
    out = tmp_path / "out"
    out.mkdir()
    before = _snapshot_of(db)
    for template in COMMANDS:
        args = [arg.format(out=out) for arg in template]
        result = _run(db, args)
        where = f"{kind}: sqlstore {' '.join(args)}"
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            f"{where} raised {result.exception!r}"
        )
        assert "Traceback" not in result.output + result.stderr, where
        assert result.exit_code == 1, f"{where} exited {result.exit_code}: {result.output}"
        if args[0] != "check":
            assert result.stderr.startswith("Error: "), f"{where}: {result.stderr!r}"
            assert "Hint: " in result.stderr, f"{where}: no hint in {result.stderr!r}"
        assert _snapshot_of(db) == before, f"{where} changed the file"
        assert list(out.iterdir()) == [], f"{where} left {list(out.iterdir())} behind"


def test_cli_on_a_read_only_file_reads_and_refuses_writes_cleanly(tmp_path: Path) -> None:
    """On a read-only file, reading commands work and writing ones exit 1 with a hint."""
    db = tmp_path / "ro.db"
    _store(db)
    before = file_digests(db)
    if os.geteuid() == 0:
        if not chattr("+i", db):
            pytest.fail("running as root without chattr +i support: cannot make the file read-only")
    else:
        db.chmod(0o400)
    try:
        for args in (["ls"], ["stats"], ["show", "s0"], ["events", "s0"], ["audit", "s0"]):
            result = _run(db, args)
            assert result.exit_code == 0, f"sqlstore {' '.join(args)}: {result.stderr}"
        for args in (["rm", "s0", "--yes"], ["vacuum"]):
            result = _run(db, args)
            where = f"sqlstore {' '.join(args)}"
            assert result.exception is None or isinstance(result.exception, SystemExit), (
                f"{where} raised {result.exception!r}"
            )
            assert result.exit_code == 1, f"{where} exited {result.exit_code}: {result.output}"
            assert result.stderr.startswith("Error: ") and "Hint: " in result.stderr, where
    finally:
        chattr("-i", db)
        db.chmod(0o600)
    assert file_digests(db)[""] == before[""]
    with SQLiteStore(db) as store:
        assert store.sessions.load("s0").id == "s0"
