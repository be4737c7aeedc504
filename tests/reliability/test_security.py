"""Security: file modes under any umask, bound parameters only, JSON only, exact deletes.

* Database, WAL and SHM files are 0600 and created directories 0700 even under
  umask 0 (checked in a child process that sets it).
* Every SQL statement the store runs is traced (``apsw.connection_hooks``): no
  session id or payload ever appears in SQL text, and hostile ids and payloads
  (quotes, ``--``, control characters, 4-byte UTF-8) round-trip byte for byte.
* The packages never use pickle, marshal, shelve, eval or exec.
* ``delete``, ``delete_if_unchanged`` and retention's prune never touch a session
  outside their arguments, however similar its id (prefixes, LIKE wildcards, case).
* ``sqlstore export`` never writes outside ``--out``, whatever the session ids.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import apsw
import pytest
from click.testing import CliRunner
from freezegun import freeze_time

import retention
from cli.main import cli
from sqlstore import Event, Principal, Session, SQLiteStore, ToolCallRecord
from sqlstore.errors import SessionNotFound

from .helpers import REPO, run_child

HOSTILE = [
    "q'uote",
    'd"ouble',
    "x'); DROP TABLE sessions; --",
    "-- comment",
    "/* open comment",
    "semi;colon",
    "ctl\x01\x02\x1b[31m\x7f",
    "tab\tnew\nline\rret",
    "emoji 😀 𝄞 𠜎",
    "%_wild%",
    "back\\slash",
    "\u2028\u2029\ufeff",
    " leading and trailing ",
    "?1 :name @x $y",
]
"""Hostile texts used as session ids, owners, payloads and audit fields."""

MARK = "ZQXJ"
"""A marker in every hostile value, so SQL text containing a value is easy to spot."""


@pytest.fixture
def traced_sql() -> Iterator[list[str]]:
    """Record the text of every SQL statement run on connections opened during the test."""
    statements: list[str] = []

    def tracer(_cursor: apsw.Cursor, sql: str, _bindings: object) -> bool:
        statements.append(sql)
        return True

    def hook(conn: apsw.Connection) -> None:
        conn.exec_trace = tracer

    apsw.connection_hooks.append(hook)
    try:
        yield statements
    finally:
        apsw.connection_hooks.remove(hook)


def test_files_are_private_under_umask_zero(tmp_path: Path) -> None:
    """Under umask 0 the created directories are 0700 and the db, -wal and -shm are 0600."""
    base = tmp_path / "base"
    base.mkdir()
    db = base / "x" / "y" / "z" / "s.db"
    modes = json.loads(run_child("umask", str(db), str(base)).strip().splitlines()[-1])
    expected = {
        "x": 0o700,
        "x/y": 0o700,
        "x/y/z": 0o700,
        "x/y/z/s.db": 0o600,
        "x/y/z/s.db-wal": 0o600,
        "x/y/z/s.db-shm": 0o600,
    }
    assert {k: oct(v) for k, v in modes.items()} == {k: oct(v) for k, v in expected.items()}


def test_hostile_ids_and_payloads_round_trip_and_never_reach_sql_text(
    tmp_path: Path, traced_sql: list[str]
) -> None:
    """Hostile ids and payloads round-trip exactly and never appear in any SQL statement."""
    values = [MARK + text for text in HOSTILE]
    with SQLiteStore(tmp_path / "s.db") as store:
        for value in values:
            owner = Principal(issuer=value, subject=value)
            store.sessions.create(
                Session.new(value, title=value, owner=owner, labels={value: value})
            )
            cursor = store.events.append_event(value, Event(value, text=value, data={value: value}))
            store.events.append_gap(value, value)
            store.audit.record(
                ToolCallRecord(value, call_id=value, tool=value, args=value, result=value)
            )
            store.leases.acquire(value, value, timedelta(minutes=5))
            assert cursor
        for value in values:
            loaded = store.sessions.load(value)
            assert (loaded.id, loaded.title, loaded.labels) == (value, value, {value: value})
            records = list(store.events.read_after(value))
            assert records[0].event is not None
            assert records[0].event.type == value
            assert records[0].event.data == {value: value}
            assert records[1].gap_reason == value
            rest = list(store.events.read_after(value, records[0].cursor))
            assert [r.gap_reason for r in rest] == [value]
            [rec] = store.audit.list(value)
            assert (rec.call_id, rec.tool, rec.args, rec.result) == (value,) * 4
            assert store.audit.query(tool=value) == [rec]
            owner = Principal(issuer=value, subject=value)
            page = store.sessions.page(50, owner=owner, enforce_owner=True)
            assert [m.id for m in page.sessions] == [value]
        assert sorted(s.id for s in store.sessions.list()) == sorted(values)
        assert store.leases.held() == set(values)
    assert traced_sql, "the tracer saw no SQL: the hook was not installed"
    leaked = [sql for sql in traced_sql if MARK in sql]
    assert leaked == [], f"values reached SQL text: {leaked[:3]}"
    conn = apsw.Connection(str(tmp_path / "s.db"))
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_schema WHERE type='table'")}
    conn.close()
    assert {"sessions", "events", "event_logs", "tool_calls", "leases"} <= tables


def _python_files() -> list[Path]:
    return sorted(p for pkg in ("sqlstore", "retention", "cli") for p in (REPO / pkg).rglob("*.py"))


FORBIDDEN_MODULES = {"pickle", "cPickle", "marshal", "shelve", "dill", "cloudpickle", "yaml"}
FORBIDDEN_CALLS = {"eval", "exec", "compile", "__import__"}


def test_packages_use_no_pickle_eval_or_exec() -> None:
    """No module of sqlstore, retention or cli imports pickle-like codecs or calls eval/exec."""
    files = _python_files()
    assert len(files) > 20, "the scan found too few files to be meaningful"
    findings: list[str] = []
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name.split(".")[0] for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module.split(".")[0]]
            if any(name in FORBIDDEN_MODULES for name in names):
                line = getattr(node, "lineno", 0)
                findings.append(f"{path.relative_to(REPO)}:{line}: imports {names}")
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in FORBIDDEN_CALLS
            ):
                findings.append(f"{path.relative_to(REPO)}:{node.lineno}: calls {node.func.id}")
    assert findings == []


NEIGHBOURS = [
    "abc",
    "abc%",
    "abc_",
    "ab_",
    "ab%",
    "ab",
    "abcd",
    "ABC",
    "abc ",
    " abc",
    "abc\t",
    "abç",
    "p" * 200 + "-one",
    "p" * 200 + "-two",
    "p" * 200,
    "L" * 1024,
    "L" * 1023 + "M",
]
"""Ids that a LIKE pattern, a prefix match, case folding or truncation would confuse."""


def _populate(store: SQLiteStore, ids: list[str]) -> None:
    for sid in ids:
        store.sessions.create(Session.new(sid, title=sid))
        store.events.append_event(sid, Event("e", text=sid))
        store.audit.record(ToolCallRecord(sid, call_id=sid, tool="t"))


def _assert_intact(store: SQLiteStore, ids: list[str]) -> None:
    for sid in ids:
        assert store.sessions.load(sid).title == sid, sid
        assert [e.text for e in store.events.read(sid)] == [sid], sid
        assert [r.call_id for r in store.audit.list(sid)] == [sid], sid


def _assert_gone(store: SQLiteStore, sid: str) -> None:
    with pytest.raises(SessionNotFound):
        store.sessions.load(sid)
    assert list(store.events.read(sid)) == []
    assert store.audit.list(sid) == []


@pytest.mark.parametrize("victim", ["abc", "abc%", "ab_", "p" * 200, "L" * 1024])
def test_delete_touches_only_its_argument(tmp_path: Path, victim: str) -> None:
    """delete and delete_if_unchanged remove exactly one session among look-alike ids."""
    with SQLiteStore(tmp_path / "s.db") as store:
        _populate(store, NEIGHBOURS)
        others = [sid for sid in NEIGHBOURS if sid != victim]
        store.sessions.delete(victim)
        _assert_gone(store, victim)
        _assert_intact(store, others)
        second = others[0] if victim != others[0] else others[1]
        assert store.sessions.delete_if_unchanged(store.sessions.meta(second))
        _assert_gone(store, second)
        _assert_intact(store, [sid for sid in others if sid != second])


def test_prune_touches_only_planned_sessions(tmp_path: Path) -> None:
    """Retention's plan and sweep delete only the stale sessions, not their look-alikes."""
    old = ["abc", "ab%", "p" * 200 + "-one"]
    start = datetime(2026, 1, 1, tzinfo=UTC)
    with SQLiteStore(tmp_path / "s.db") as store:
        with freeze_time(start):
            _populate(store, old)
        with freeze_time(start + timedelta(days=10)):
            _populate(store, [sid for sid in NEIGHBOURS if sid not in old])
        policy = retention.Policy(
            main=retention.Rule(max_age=timedelta(days=5)), acknowledge_main_deletion=True
        )
        with freeze_time(start + timedelta(days=11)):
            planned = retention.plan(store, policy)
            assert sorted(e.meta.id for e in planned.entries) == sorted(old)
            report = retention.sweep(store, planned)
        assert report.deleted == len(old)
        for sid in old:
            _assert_gone(store, sid)
        _assert_intact(store, [sid for sid in NEIGHBOURS if sid not in old])


TRAVERSAL_IDS = ["../escape", "../../etc/passwd-x", "a/b", "/abs", "..", ".", "ok", ".hidden"]


@pytest.mark.parametrize("fmt", ["runlog", "mecatl"])
def test_export_never_writes_outside_its_directory(tmp_path: Path, fmt: str) -> None:
    """Exporting sessions whose ids look like paths writes only inside --out."""
    db = tmp_path / "store" / "s.db"
    with SQLiteStore(db) as store:
        for sid in TRAVERSAL_IDS:
            store.sessions.save(Session.new(sid))
            store.events.append_event(sid, Event("message", text="hi"))
    out = tmp_path / "deep" / "out"
    out.parent.mkdir()
    before = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    args = ["--db", str(db), "export", "--format", fmt, "--out", str(out), "--all"]
    result = CliRunner().invoke(cli, args, catch_exceptions=True)
    assert result.exception is None or isinstance(result.exception, SystemExit)
    after = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    outside = [
        p
        for p in after
        if p not in before and not p.startswith("deep/out") and not p.startswith("store/s.db")
    ]
    assert outside == [], f"export wrote outside --out: {outside}"
    written = [p for p in out.rglob("*") if p.is_file()]
    assert written, "nothing was exported"
    for path in written:
        assert path.resolve().is_relative_to(out.resolve())


def test_exports_and_backups_are_private_under_umask_zero(tmp_path: Path) -> None:
    """Under umask 0, export and backup create 0700 directories and 0600 files."""
    base = tmp_path / "base"
    base.mkdir()
    db = tmp_path / "s.db"
    done = json.loads(run_child("export_umask", str(db), str(base)).strip().splitlines()[-1])
    assert done["codes"] == {"runlog": 0, "mecatl": 0, "backup": 0}
    modes = {name: oct(mode) for name, mode in done["modes"].items()}
    assert len(modes) > 10
    wrong = {
        name: mode
        for name, mode in modes.items()
        if mode != ("0o700" if (base / name).is_dir() else "0o600")
    }
    assert wrong == {}, f"not private: {wrong}"
