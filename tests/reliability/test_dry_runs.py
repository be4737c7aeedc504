"""Every ``--dry-run`` (and read-only planning command) writes nothing at all (issue 20, item 3).

Each command runs through the installed console script against a directory
holding a populated database; afterwards every file in the directory has the
same bytes and no file was created or removed, whatever the flags combined
with ``--dry-run`` (``--overwrite``, ``--verify``, ``--to`` a new or existing
file, ``--from``).
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from freezegun import freeze_time

from sqlstore import Event, Session, SQLiteStore, clock

from .helpers import REPO

SQLSTORE = Path(sys.executable).with_name("sqlstore")
RUNLOGS = REPO / "examples" / "runlogs"
MECATL = REPO / "examples" / "mecatl-store"

DRY_RUNS = {
    "import": ["--db", "s.db", "migrate", RUNLOGS, "--dry-run"],
    "import-overwrite-verify": [
        "--db",
        "s.db",
        "migrate",
        RUNLOGS,
        "--dry-run",
        "--overwrite",
        "--verify",
    ],
    "import-mecatl": ["--db", "s.db", "migrate", MECATL, "--dry-run"],
    "import-missing-db": ["--db", "missing.db", "migrate", RUNLOGS, "--dry-run"],
    "import-to-new": ["migrate", RUNLOGS, "--to", "new.db", "--dry-run"],
    "import-to-existing": ["migrate", RUNLOGS, "--to", "s.db", "--dry-run", "--overwrite"],
    "copy-to-new": ["--db", "s.db", "migrate", "--to", "new.db", "--dry-run", "--verify"],
    "copy-to-url": ["--db", "s.db", "migrate", "--to", "sqlite:///other.db", "--dry-run"],
    "copy-overwrite": ["--db", "s.db", "migrate", "--to", "other.db", "--dry-run", "--overwrite"],
    "copy-from": ["migrate", "--from", "s.db", "--to", "other.db", "--dry-run"],
    "copy-from-into-db": ["--db", "other.db", "migrate", "--from", "s.db", "--dry-run"],
    "prune": ["--db", "s.db", "prune", "--older-than", "1d", "--dry-run", "--yes"],
    "retention-plan": ["--db", "s.db", "retention", "plan"],
    "retention-run": ["--db", "s.db", "retention", "run", "--dry-run"],
}


def _digests(folder: Path) -> dict[str, str]:
    """SHA-256 of every file; ``-shm`` (shared memory) and an empty ``-wal`` hold no data."""
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.iterdir())
        if p.is_file()
        and not p.name.endswith("-shm")
        and not (p.name.endswith("-wal") and p.stat().st_size == 0)
    }


def _populate(path: Path, ids: list[str], title: str) -> None:
    with freeze_time(clock.now() - timedelta(days=30)), SQLiteStore(path) as store:
        for sid in ids:
            session = Session.new(sid)
            session.title = title
            store.sessions.save(session)
            store.events.append_event(sid, Event("message", text=title))


@pytest.mark.parametrize("name", sorted(DRY_RUNS))
def test_dry_runs_write_nothing(tmp_path: Path, name: str) -> None:
    """A dry run leaves every file of the directory byte-identical and creates none."""
    _populate(tmp_path / "s.db", ["20261128-090000", "a", "b"], "in s")
    _populate(tmp_path / "other.db", ["a", "20261129-140501"], "in other")
    before = _digests(tmp_path)
    done = subprocess.run(
        [SQLSTORE, *map(str, DRY_RUNS[name])],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert _digests(tmp_path) == before
