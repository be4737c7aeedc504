"""Two overlapping runs of one migrate job end exactly like one (issue 20, item 4).

The race is made deterministic: run A plans its items, and before its batch is
written a whole second run (B, a real ``sqlstore`` process) imports the same
source. A then finds every session taken. It used to overwrite B's ``imported``
checkpoint rows with ``exists``, so a later run re-imported sessions that ``rm``
or retention had deleted since. Now a job recognises what any run of it imported.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest
from redis_server import redis_server, redis_url  # noqa: F401  (fixtures)

import sqlstore
from sqlstore import MemoryStore, SQLiteStore
from sqlstore.migrate import run_migration

REPO = Path(__file__).resolve().parents[1]
SQLSTORE = Path(sys.executable).with_name("sqlstore")


@pytest.fixture
def source(tmp_path: Path) -> Path:
    """A run-log source with the shipped examples plus a few more runs."""
    folder = tmp_path / "runs"
    shutil.copytree(REPO / "examples" / "runlogs", folder)
    template = (folder / "20261128-090000.jsonl").read_text()
    for n in range(4):
        run_id = f"20261130-10000{n}"
        (folder / f"{run_id}.jsonl").write_text(template.replace("20261128-090000", run_id))
    return folder


def _script(*args: object) -> None:
    done = subprocess.run(
        [SQLSTORE, *map(str, args)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr


def _overlapped(store: Any, source: Path, other_run: Iterator[None] | Any) -> Any:
    """Run the import on ``store``; the whole ``other_run`` happens after A planned item one."""
    started: list[bool] = []

    def progress(done: int, total: int) -> None:
        if not started:
            started.append(True)
            other_run()

    return run_migration(store, source, progress=progress)


def _runs(source: Path) -> int:
    return len(list(source.glob("*.jsonl")))


def _only_already_imported(report: Any, source: Path) -> bool:
    """True when every run log of ``source`` was ``already_imported`` (no ``exists``)."""
    skipped = dict(report.skipped)
    skipped.pop("not_a_session", None)  # README.txt
    return report.failed == 0 and skipped == {"already_imported": _runs(source)}


def _rows(db: Path) -> dict[str, str]:
    conn = apsw.Connection(os.fspath(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return {
            str(i): str(o) for i, o in conn.execute("SELECT item, outcome FROM migration_items")
        }
    finally:
        conn.close()


def test_overlapping_runs_end_like_one_and_deleted_sessions_stay_deleted(
    tmp_path: Path, source: Path
) -> None:
    """A second ``sqlstore migrate`` process racing the first leaves every row ``imported``."""
    db = tmp_path / "s.db"
    with SQLiteStore(db) as store:
        report = _overlapped(store, source, lambda: _script("--db", db, "migrate", source))
    assert report.failed == 0
    assert report.imported == 0 and _only_already_imported(report, source)
    assert set(_rows(db).values()) == {"imported"}
    _script("--db", db, "rm", "--yes", "20261130-100001")
    again = subprocess.run(
        [SQLSTORE, "--db", db, "migrate", source, "--json"], capture_output=True, text=True
    )
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["imported"] == 0
    with SQLiteStore(db, readonly=True) as store:
        ids = {s.id for s in store.sessions.list()}
    assert "20261130-100001" not in ids and len(ids) == _runs(source) - 1


def test_overlapping_runs_on_a_memory_store(source: Path) -> None:
    """The memory import target recognises another run's imports the same way."""
    store = MemoryStore()
    report = _overlapped(store, source, lambda: run_migration(store, source))
    assert report.imported == 0 and _only_already_imported(report, source)
    store.sessions.delete("20261130-100002")
    assert run_migration(store, source).imported == 0
    assert "20261130-100002" not in {s.id for s in store.sessions.list()}


def test_overlapping_runs_into_redis(source: Path, redis_url: str) -> None:  # noqa: F811
    """Into Redis, a racing ``sqlstore migrate --to redis://`` process is recognised too."""
    with sqlstore.open(redis_url) as store:
        report = _overlapped(store, source, lambda: _script("migrate", source, "--to", redis_url))
        assert report.imported == 0 and _only_already_imported(report, source)
        store.sessions.delete("20261130-100003")
        assert run_migration(store, source).imported == 0
        assert "20261130-100003" not in {s.id for s in store.sessions.list()}


def test_a_changed_item_is_not_taken_over_by_a_racing_run(tmp_path: Path, source: Path) -> None:
    """An item the racing run imported, then changed, is ``changed`` (not replaced) without
    --overwrite, and is re-imported with it."""
    db = tmp_path / "s.db"
    _script("--db", db, "migrate", source)
    path = source / "20261130-100000.jsonl"
    path.write_text(path.read_text().replace("list the python files", "list the rust files"))
    with SQLiteStore(db) as store:
        report = run_migration(store, source)
        assert report.skipped.get("changed") == 1 and report.imported == 0
        again = run_migration(store, source, overwrite=True)
        assert again.imported == 1
