"""Opening and creating a store under pressure: racing creators, full disks, odd paths.

* Several processes open the same not-yet-existing file at the same instant (an
  agent, the CLI and the retention daemon starting together): every one succeeds,
  the schema is created once, and every write lands.
* A disk that fills up while the schema is being created gives a clear error, and
  the half-created file is initialised normally by the next open.
* Paths with spaces, ``?``, ``#``, ``%``, ``file:`` prefixes and non-ASCII text are
  plain file names: the store creates exactly that file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sqlstore import Event, Session, SQLiteStore

from .helpers import integrity, run_child, spawn

OPENERS = 6


def test_processes_creating_the_same_new_store_at_once_all_succeed(tmp_path: Path) -> None:
    """Racing creators of one new file all open it and write; the schema is created once."""
    db = tmp_path / "new" / "race.db"
    go = tmp_path / "go"
    procs = [spawn("opener", str(db), str(go)) for _ in range(OPENERS)]
    for proc in procs:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "WAITING\n"
    go.touch()
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        results.append(out.strip() or err)
    assert results == ["OK"] * OPENERS, results
    assert integrity(db) == ["ok"]
    with SQLiteStore(db) as store:
        assert len(store.sessions.list()) == OPENERS
        assert len(list(store.events.read("shared"))) == OPENERS


@pytest.mark.parametrize("limit", [0, 4096, 20_000])
def test_disk_full_while_creating_the_schema(tmp_path: Path, limit: int) -> None:
    """A file-size limit hit during schema creation gives a clear error; the next open works."""
    db = tmp_path / "init.db"
    kind, message, hint = json.loads(run_child("init_full", str(db), str(limit)).splitlines()[-1])
    assert kind in ("StoreFull", "StoreIOError", "ok"), (kind, message)
    if kind != "ok":
        assert hint
    with SQLiteStore(db) as store:
        store.sessions.save(Session.new("after"))
        store.events.append_event("after", Event("e"))
        assert store.sessions.load("after").id == "after"
    assert integrity(db) == ["ok"]


@pytest.mark.parametrize(
    "name",
    [
        "with space.db",
        "what?mode=ro.db",
        "hash#frag.db",
        "pct%20.db",
        "file:uri.db",
        "file:uri.db?mode=memory&cache=shared",
        ":memory:.db",
        "ünï©ødé-😀.db",
        "-dash.db",
    ],
)
def test_odd_file_names_are_plain_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """A database name that looks like a URI or option is used literally as a file name."""
    monkeypatch.chdir(tmp_path)
    with SQLiteStore(name) as store:
        store.sessions.save(Session.new("x"))
    assert (tmp_path / name).is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]
    with SQLiteStore(tmp_path / name, create=False) as store:
        assert store.sessions.load("x").id == "x"
