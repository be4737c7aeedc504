"""Overlapping runs of the same ``sqlstore migrate`` end exactly like one (issue 20, item 4).

Three real ``sqlstore migrate`` processes (batches of 1 to 3, so their
transactions interleave) import the same 60 run logs at the same time, twice
over. Afterwards the store equals one clean import (same ids, snapshots and
logs), every checkpoint row is ``imported``, nothing failed; after ``rm`` of a
third of the sessions, further overlapping runs bring none of them back.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import apsw

from sqlstore import SQLiteStore
from sqlstore.migrate import run_migration

from .helpers import REPO

SQLSTORE = Path(sys.executable).with_name("sqlstore")
RUNS = 60


def _source(folder: Path) -> list[str]:
    folder.mkdir()
    template = (REPO / "examples" / "runlogs" / "20261128-090000.jsonl").read_text()
    ids = [f"20261201-{n:06d}" for n in range(RUNS)]
    for run_id in ids:
        (folder / f"{run_id}.jsonl").write_text(template.replace("20261128-090000", run_id))
    return ids


def _race(db: Path, source: Path) -> None:
    procs = [
        subprocess.Popen(
            [SQLSTORE, "--db", db, "migrate", source, "--batch", str(batch), "--json"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for batch in (1, 2, 3)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        assert "Traceback" not in err


def _ids(db: Path) -> set[str]:
    with SQLiteStore(db, readonly=True) as store:
        return {s.id for s in store.sessions.list()}


def _outcomes(db: Path) -> set[str]:
    conn = apsw.Connection(os.fspath(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return {str(row[0]) for row in conn.execute("SELECT outcome FROM migration_items")}
    finally:
        conn.close()


def test_racing_imports_end_like_one_and_never_resurrect(tmp_path: Path) -> None:
    """Three racing processes, twice, equal one import; deleted sessions stay deleted."""
    source = tmp_path / "runs"
    ids = _source(source)
    clean = tmp_path / "clean.db"
    with SQLiteStore(clean) as store:
        assert run_migration(store, source).imported == RUNS
    db = tmp_path / "raced.db"
    _race(db, source)
    _race(db, source)
    assert _outcomes(db) == {"imported"}
    assert _ids(db) == _ids(clean) == set(ids)
    with SQLiteStore(db) as a, SQLiteStore(clean, readonly=True) as b:
        for sid in ids:
            assert a.sessions.load(sid) == b.sessions.load(sid)
            assert [r.event for r in a.events.read_after(sid)] == [
                r.event for r in b.events.read_after(sid)
            ]
        deleted = ids[::3]
        for sid in deleted:
            a.sessions.delete(sid)
    _race(db, source)
    assert _outcomes(db) == {"imported"}
    assert _ids(db) == set(ids) - set(deleted)
