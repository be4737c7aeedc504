"""OS errors on the paths the CLI takes give ``Error:`` and ``Hint:`` (issue 20, item 13).

Through the installed script: a name longer than 255 bytes for ``init``,
``backup``, ``export --out`` and ``migrate --to``; ``--db`` naming a FIFO (which
used to hang ``ls`` and ``check`` forever); ``--db ""`` (which said ". is a
directory"); a ``--db`` that is not UTF-8; ``backup`` into a missing directory.
Each exits 1 (2 for the empty flag) without a traceback and creates nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sqlstore import Session, SQLiteStore

SQLSTORE = Path(sys.executable).with_name("sqlstore")
LONG = "n" * 300


def _run(cwd: Path, *args: str | bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [os.fsencode(SQLSTORE), *(os.fsencode(a) for a in args)],
        cwd=cwd,
        capture_output=True,
        timeout=30,  # a FIFO opened for reading would block forever
        check=False,
    )


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    """A directory with one store ``s.db`` holding one session."""
    with SQLiteStore(tmp_path / "s.db") as store:
        store.sessions.save(Session.new("one"))
    return tmp_path


def _listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith("s.db"))


@pytest.mark.parametrize(
    "args",
    [
        ["--db", f"{LONG}.db", "init"],
        ["--db", f"{LONG}/x.db", "init"],
        ["--db", "s.db", "backup", f"{LONG}.db"],
        ["--db", "s.db", "backup", f"{LONG}/x.db"],
        ["--db", "s.db", "export", "--format", "runlog", "--all", "--out", f"{LONG}/x"],
        ["--db", "s.db", "migrate", "--to", f"{LONG}.db"],
        ["--db", "s.db/x.db", "init"],
    ],
    ids=["init", "init-dir", "backup", "backup-dir", "export", "migrate-to", "init-through-file"],
)
def test_names_the_os_refuses_give_a_clear_error(cwd: Path, args: list[str]) -> None:
    """A name over 255 bytes (or a path through a file) is ``Error:`` + ``Hint:``, exit 1."""
    before = _listing(cwd)
    done = _run(cwd, *args)
    assert done.returncode == 1, done.stderr
    assert b"Traceback" not in done.stderr
    assert done.stderr.startswith(b"Error: ") and b"\nHint: " in done.stderr, done.stderr
    assert _listing(cwd) == before


@pytest.mark.parametrize("command", [["ls"], ["check"], ["stats"], ["show", "one"], ["init"]])
def test_a_fifo_as_db_is_refused_without_hanging(cwd: Path, command: list[str]) -> None:
    """``--db`` naming a FIFO is refused at once (never opened), with a hint."""
    os.mkfifo(cwd / "f.db")
    done = _run(cwd, "--db", "f.db", *command)
    assert done.returncode == 1, done.stderr
    assert b"not a regular file" in done.stderr and b"Hint:" in done.stderr


def test_an_empty_db_is_a_usage_error(cwd: Path) -> None:
    """``--db ""`` (before or after the command) says the value is empty, not ". is a directory"."""
    for args in (["--db", "", "ls"], ["ls", "--db", ""]):
        done = _run(cwd, *args)
        assert done.returncode == 2, done.stderr
        assert b"is empty" in done.stderr and b"is a directory" not in done.stderr


def test_a_db_path_that_is_not_utf8_is_refused_and_nothing_is_created(cwd: Path) -> None:
    """``--db`` with bytes that are not UTF-8 is ``UnsafePath`` before any file is made."""
    before = _listing(cwd)
    for command in (["init"], ["ls"], ["migrate", "--to", b"x\xff.db"]):
        db = b"s.db" if command[0] == "migrate" else b"bad\xff.db"
        done = _run(cwd, "--db", db, *command)
        assert done.returncode == 1, done.stderr
        assert b"not a valid UTF-8 path" in done.stderr and b"Hint:" in done.stderr
    assert _listing(cwd) == before


def test_backup_into_a_missing_directory_creates_it(cwd: Path) -> None:
    """``backup`` into directories that do not exist yet creates them 0700 and succeeds."""
    done = _run(cwd, "--db", "s.db", "backup", "new/dir/copy.db")
    assert done.returncode == 0, done.stderr
    assert (cwd / "new" / "dir" / "copy.db").is_file()
    assert (cwd / "new").stat().st_mode & 0o777 == 0o700
