"""``migrate --dry-run`` writes nothing and ``--verify`` is honoured everywhere (issue 20, item 3).

Copies between stores (``--to``/``--from``) used to ignore both flags: a dry run
really copied, ``--overwrite --dry-run`` replaced the destination's sessions,
and ``migrate SOURCE --to NEW.db --dry-run`` created ``NEW.db``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner
from reliability.helpers import file_digests

from cli.main import cli
from sqlstore import Event, Session, SQLiteStore

REPO = Path(__file__).resolve().parents[1]
SQLSTORE = Path(sys.executable).with_name("sqlstore")
RUNLOGS = REPO / "examples" / "runlogs"


def _store(path: Path, ids: list[str], title: str) -> None:
    with SQLiteStore(path) as store:
        for sid in ids:
            session = Session.new(sid)
            session.title = title
            store.sessions.save(session)
            store.events.append_event(sid, Event("message", text=title))


def _script(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SQLSTORE, *map(str, args)], capture_output=True, text=True, timeout=120, check=False
    )


def test_copy_dry_run_writes_nothing_to_the_destination(tmp_path: Path) -> None:
    """Through the script: ``--from A --to B --dry-run`` (also with --overwrite) leaves B as is."""
    src, dst = tmp_path / "a.db", tmp_path / "b.db"
    _store(src, ["s1", "s2", "shared"], "from a")
    _store(dst, ["shared"], "kept in b")
    before = file_digests(dst)
    for extra in ([], ["--overwrite"]):
        done = _script("migrate", "--from", src, "--to", dst, "--dry-run", "--json", *extra)
        assert done.returncode == 0, done.stderr
        doc = json.loads(done.stdout)
        assert doc["dry_run"] is True
        assert doc["copied"] == (3 if extra else 2)
        assert file_digests(dst) == before
    with SQLiteStore(dst, readonly=True) as store:
        assert [s.id for s in store.sessions.list()] == ["shared"]
        assert store.sessions.load("shared").title == "kept in b"


def test_copy_dry_run_to_a_new_file_creates_nothing(tmp_path: Path) -> None:
    """``--db A migrate --to NEW.db --dry-run`` reports the plan and creates no file."""
    src, new = tmp_path / "a.db", tmp_path / "new.db"
    _store(src, ["s1", "s2"], "x")
    for target in (str(new), f"sqlite:///{new}"):
        result = CliRunner().invoke(cli, ["--db", str(src), "migrate", "--to", target, "--dry-run"])
        assert result.exit_code == 0, result.output
        assert "copied 2 (dry run" in result.output
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
            p.name for p in tmp_path.iterdir() if p.name.startswith("a.db")
        )


def test_import_dry_run_with_to_creates_nothing(tmp_path: Path) -> None:
    """``migrate SOURCE --to NEW.db --dry-run`` imports nothing and creates no NEW.db."""
    new = tmp_path / "new.db"
    done = _script("migrate", RUNLOGS, "--to", new, "--dry-run", "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["dry_run"] is True and doc["imported"] >= 1
    assert list(tmp_path.iterdir()) == []


def test_import_dry_run_into_an_existing_file_changes_nothing(tmp_path: Path) -> None:
    """A dry-run import into an existing --db (or --to the same file) leaves it byte-identical."""
    db = tmp_path / "s.db"
    _store(db, ["other"], "x")
    before = file_digests(db)
    for args in (["--db", db, "migrate", RUNLOGS], ["migrate", RUNLOGS, "--to", db]):
        done = _script(*args, "--dry-run")
        assert done.returncode == 0, done.stderr
        assert file_digests(db) == before


def test_copy_verify_loads_every_copied_session_back(tmp_path: Path) -> None:
    """``--verify`` on a copy compares every copied session and reports the count."""
    src, dst = tmp_path / "a.db", tmp_path / "b.db"
    _store(src, ["s1", "s2", "s3"], "x")
    done = _script("--db", src, "migrate", "--to", dst, "--verify", "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["copied"] == 3 and doc["verified"] == 3
    human = _script("--db", src, "migrate", "--to", tmp_path / "c.db", "--verify")
    assert "verified 3" in human.stdout
