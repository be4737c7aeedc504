"""Orphans: events and audit rows under an id with no snapshot (issue 20, item 7).

Another process appends to a session after `rm` (its clock frozen where the test
needs an old write); the installed console script must then show the orphan
(`ls` says so, `ls --orphans` lists it), remove it (`rm`), prune it by its last
write (`prune`), and `migrate --to` / `export --all` must report it instead of
silently leaving it behind. Every step checks the rows really went.
"""

from __future__ import annotations

import json
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest

from sqlstore import Event, Session, SQLiteStore, clock

from .helpers import run_child

TIMEOUT_S = 60.0
"""Upper bound for a child process (never a timing assertion)."""


def _exe() -> str:
    from tests.test_cli_process import console_script

    return console_script()


def _run(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_exe(), "--db", str(db), *args], capture_output=True, text=True, timeout=TIMEOUT_S
    )


def _stored(db: Path) -> tuple[int, int]:
    """Return (events, audit rows) as `sqlstore stats --json` counts them."""
    done = _run(db, "stats", "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    return int(doc["events"]), int(doc["audit_rows"])


def _orphan_after_rm(db: Path, session_id: str, at: str) -> None:
    with SQLiteStore(db) as store:
        store.sessions.save(Session.new(session_id))
        store.events.append_event(session_id, Event("message", text="first"))
    done = _run(db, "rm", session_id, "--yes")
    assert done.returncode == 0, done.stderr
    assert run_child("orphaner", str(db), session_id, "3", at) == "DONE\n"


def test_orphan_is_listed_and_removed_through_the_console_script(tmp_path: Path) -> None:
    """An append by another process after `rm` is shown by `ls`, listed by --orphans, and rm'd."""
    db = tmp_path / "o.db"
    with SQLiteStore(db) as store:
        store.sessions.save(Session.new("kept"))
    _orphan_after_rm(db, "gone", clock.format_rfc3339(clock.now()))
    plain = _run(db, "ls")
    assert plain.returncode == 0, plain.stderr
    assert "1 more id(s) hold events or audit rows but no snapshot" in plain.stdout
    listed = _run(db, "ls", "--orphans", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert [(r["id"], r["records"], r["audit_rows"]) for r in rows] == [("gone", 3, 1)]
    assert "gone" in _run(db, "ls", "--orphans").stdout
    assert _stored(db) == (3, 1)
    removed = _run(db, "rm", "gone", "--yes")
    assert removed.returncode == 0, removed.stderr
    assert json.loads(_run(db, "ls", "--orphans", "--json").stdout) == []
    assert _stored(db) == (0, 0)
    assert [m["id"] for m in json.loads(_run(db, "ls", "--json").stdout)] == ["kept"]


def test_prune_deletes_orphans_by_their_last_write(tmp_path: Path) -> None:
    """`prune --older-than 30d` deletes an orphan last written 40 days ago, keeps a fresh one."""
    db = tmp_path / "p.db"
    old = clock.format_rfc3339(clock.now() - timedelta(days=40))
    _orphan_after_rm(db, "old-orphan", old)
    _orphan_after_rm(db, "new-orphan", clock.format_rfc3339(clock.now() - timedelta(days=1)))
    dry = _run(db, "prune", "--older-than", "30d", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    assert [o["id"] for o in json.loads(dry.stdout)["orphans"]] == ["old-orphan"]
    capped = _run(db, "prune", "--keep", "1", "--dry-run", "--json")
    assert json.loads(capped.stdout)["orphans"] == []  # count caps never prune orphans
    pruned = _run(db, "prune", "--older-than", "30d", "--yes", "--json")
    assert pruned.returncode == 0, pruned.stderr
    report = json.loads(pruned.stdout)["report"]
    assert (report["deleted"], report["orphans"]) == (1, 1)
    with SQLiteStore(db, readonly=True) as store:
        assert [o.id for o in store.sessions.orphans()] == ["new-orphan"]
        assert list(store.events.read("old-orphan")) == []
        assert store.audit.list("old-orphan") == []


def test_migrate_to_and_export_report_orphans(tmp_path: Path) -> None:
    """`migrate --to` counts an orphan as skipped `orphan`; `export --all` says it left one."""
    db = tmp_path / "m.db"
    with SQLiteStore(db) as store:
        store.sessions.save(Session.new("kept"))
    _orphan_after_rm(db, "gone", clock.format_rfc3339(clock.now()))
    copied = _run(db, "migrate", "--to", str(tmp_path / "copy.db"), "--json")
    assert copied.returncode == 0, copied.stderr
    doc = json.loads(copied.stdout)
    assert (doc["copied"], doc["skipped"]) == (1, {"orphan": 1})
    exported = _run(db, "export", "--format", "mecatl", "--out", str(tmp_path / "x"), "--all")
    assert exported.returncode == 0, exported.stderr
    assert "not exported: 1 orphan(s)" in exported.stdout


@pytest.mark.parametrize("target", ["memory", "sqlite"])
def test_sweep_keeps_an_orphan_written_after_planning(tmp_path: Path, target: str) -> None:
    """An orphan appended to between plan and sweep is kept (changed), on memory and SQLite."""
    import retention
    import sqlstore

    store = sqlstore.MemoryStore() if target == "memory" else SQLiteStore(tmp_path / "s.db")
    with store:
        store.events.append_event("o", Event("x"))
        policy = retention.Policy(child=retention.Rule(max_age=timedelta(days=1)))
        plan = retention.plan(store, policy, now=clock.now() + timedelta(days=2))
        assert [o.id for o in plan.orphans] == ["o"]
        store.events.append_event("o", Event("y"))
        report = retention.sweep(store, plan)
        assert (report.deleted, report.changed) == (0, 1)
        assert [o.records for o in store.sessions.orphans()] == [2]
