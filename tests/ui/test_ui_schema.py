"""The viewer's indexes (schema version 3): a version-2 file gains them on upgrade, and
the counts and children queries are planned on them instead of scanning sessions."""

from __future__ import annotations

import re
from pathlib import Path

import apsw

from sqlstore import Kind, Relationship, Session, SQLiteStore
from sqlstore.sqlite import browse
from sqlstore.sqlite.connection import _UPGRADES, SCHEMA_VERSION

VIEWER_INDEXES = {"sessions_by_state_kind", "sessions_by_parent"}


def indexes(path: Path) -> set[str]:
    """Return the index names of a database file."""
    conn = apsw.Connection(str(path))
    try:
        return {
            str(r[0]) for r in conn.execute("SELECT name FROM sqlite_schema WHERE type='index'")
        }
    finally:
        conn.close()


def plan(path: Path, sql: str, args: tuple[object, ...] = ()) -> str:
    """Return SQLite's query plan of ``sql`` as one string."""
    conn = apsw.Connection(str(path))
    try:
        return " ".join(str(r[-1]) for r in conn.execute(f"EXPLAIN QUERY PLAN {sql}", args))
    finally:
        conn.close()


def as_version_2(path: Path) -> None:
    """Turn a current file into a version-2 one: drop what the 2 -> 3 step creates."""
    created = re.findall(r"CREATE (?:UNIQUE )?(INDEX|TABLE)(?: IF NOT EXISTS)? (\w+)", _UPGRADES[2])
    drops = [f"DROP {kind} {name};" for kind, name in sorted(created)]  # indexes first
    conn = apsw.Connection(str(path))
    conn.execute(f"BEGIN IMMEDIATE; {' '.join(drops)} PRAGMA user_version = 2; COMMIT")
    conn.close()


def test_version_2_file_gains_the_viewer_indexes(tmp_path: Path) -> None:
    """Opening a version-2 file read-write adds both indexes and keeps every row."""
    path = tmp_path / "v2.db"
    with SQLiteStore(path) as store:
        store.sessions.save(Session.new("p"))
        rel = Relationship(parent_session_id="p", call_id="c")
        store.sessions.save(Session.new("c", kind=Kind.SUBAGENT, relationship=rel))
    as_version_2(path)
    assert not VIEWER_INDEXES & indexes(path)
    with SQLiteStore(path) as store:
        assert [m.id for m in browse.children(store.db, "p", limit=10)] == ["c"]
    assert indexes(path) >= VIEWER_INDEXES
    conn = apsw.Connection(str(path))
    assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    conn.close()


def test_counts_and_children_read_the_indexes(tmp_path: Path) -> None:
    """Counts by state and kind scan the covering index; children seek the parent index."""
    path = tmp_path / "a.db"
    SQLiteStore(path).close()
    counts = plan(path, "SELECT state, kind, count(*) FROM sessions GROUP BY state, kind")
    assert "COVERING INDEX sessions_by_state_kind" in counts
    children = plan(
        path,
        "SELECT id FROM sessions WHERE json_extract(relationship, '$.parent_session_id') = ? "
        "AND kind IN ('subagent', 'parallel_branch', 'team_member')",
        ("p",),
    )
    assert "INDEX sessions_by_parent" in children
