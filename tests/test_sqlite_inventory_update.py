"""A conditional snapshot write updates an existing inventory row and every index over it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import apsw

import sqlstore
from sqlstore.model import Kind, Principal, Relationship, State
from sqlstore.session import Session


def _index_rows(path: Path, sql: str) -> list[tuple[object, ...]]:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return list(conn.execute(sql))
    finally:
        conn.close()


def test_changed_listing_columns_reach_their_indexes(tmp_path: Path) -> None:
    """State, kind, relationship and owner changed by apply(expected_version=) are indexed."""
    path = tmp_path / "s.db"
    with sqlstore.open(str(path)) as store:
        store.sessions.save(Session.new("parent"))
        base = Session.new("child", title="first")
        version = store.sessions.save(base)
        changed = replace(
            base,
            state=State.RUNNING,
            kind=Kind.SUBAGENT,
            relationship=Relationship(parent_session_id="parent", call_id="c1"),
            owner=Principal(subject="ann"),
            title="second",
        )
        applied = store.apply("child", snapshot=changed, expected_version=version)
        assert applied.version > version
        meta = store.sessions.meta("child")
        assert (meta.state, meta.kind, meta.title) == (State.RUNNING, Kind.SUBAGENT, "second")
        owned = store.sessions.inventory(owner=Principal(subject="ann"), enforce_owner=True)
        assert [m.id for m in owned.sessions] == ["child"]
        # Same values again: the row is rewritten, its listing columns stay indexed.
        again = replace(changed, title="third")
        store.apply("child", snapshot=again, expected_version=applied.version)
        assert store.sessions.load("child").title == "third"
    assert _index_rows(path, "PRAGMA integrity_check") == [("ok",)]
    by_state = _index_rows(
        path, "SELECT id FROM sessions INDEXED BY sessions_by_state_kind WHERE state = 'running'"
    )
    assert by_state == [("child",)]
    by_parent = _index_rows(
        path,
        "SELECT id FROM sessions INDEXED BY sessions_by_parent "
        "WHERE json_extract(relationship, '$.parent_session_id') = 'parent' "
        "AND kind IN ('subagent', 'parallel_branch', 'team_member')",
    )
    assert by_parent == [("child",)]
