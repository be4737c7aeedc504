"""copy_store: SQLite → Redis and back, bounded batches, resumable, times/generations kept."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from freezegun import freeze_time
from redis_server import redis_server, redis_url  # noqa: F401  (fixtures)

from sqlstore import Event, MemoryStore, Session, SQLiteStore, ToolCallRecord
from sqlstore.conformance.fixtures import ALICE, assert_same_session, representative_session
from sqlstore.errors import MigrationError
from sqlstore.ports import Store
from sqlstore.redis import RedisStore, copy_store

T0 = datetime(2026, 2, 1, 8, 0, tzinfo=UTC)


@pytest.fixture
def redis_store(redis_url: str) -> Iterator[RedisStore]:  # noqa: F811
    """A RedisStore on a private prefix of the shared test server."""
    with RedisStore(redis_url) as opened:
        yield opened


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[SQLiteStore]:
    """A SQLiteStore on a new file."""
    with SQLiteStore(tmp_path / "src.db") as opened:
        yield opened


def fill(store: Store, count: int) -> list[str]:
    """Write ``count`` sessions a minute apart, each with events, a gap and an audit row."""
    ids = []
    with freeze_time(T0) as frozen:
        for index in range(count):
            sid = f"s-{index:03d}"
            session = representative_session(sid) if index == 0 else Session.new(sid, owner=ALICE)
            store.sessions.save(session)
            store.events.append(sid, Event(type="note", text=f"{sid}-1"))
            store.events.append_gap(sid, "lost one")
            store.events.append(sid, Event(type="note", text=f"{sid}-2"))
            store.audit.record(ToolCallRecord(session_id=sid, call_id="c", tool="Bash"))
            frozen.tick(timedelta(minutes=1))
            ids.append(sid)
    return ids


def assert_same_contents(src: Store, dst: Store, *, replaced: frozenset[str] = frozenset()) -> None:
    """Both stores hold the same sessions, rows (but version), logs with cursors, and audit.

    A log in ``replaced`` was overwritten in ``dst``: it got a new generation, so
    its records are compared without their cursors.
    """
    src_rows = list(src.sessions.iter_meta())
    dst_rows = list(dst.sessions.iter_meta())
    assert [m.id for m in dst_rows] == [m.id for m in src_rows]
    for a, b in zip(src_rows, dst_rows, strict=True):
        assert (a.modified_at, a.state, a.kind, a.owner, a.title, a.turns) == (
            b.modified_at,
            b.state,
            b.kind,
            b.owner,
            b.title,
            b.turns,
        )
        assert_same_session(dst.sessions.load(a.id), src.sessions.load(a.id))
        got, want = list(dst.events.read_after(a.id)), list(src.events.read_after(a.id))
        if a.id in replaced:
            assert [(r.kind, r.event) for r in got] == [(r.kind, r.event) for r in want]
            assert {r.cursor for r in got}.isdisjoint(r.cursor for r in want)
        else:
            assert got == want
        assert dst.audit.list(a.id) == src.audit.list(a.id)
    assert [m.id for m in dst.sessions.page(100).sessions] == [
        m.id for m in src.sessions.page(100).sessions
    ]


def test_sqlite_to_redis_and_back(
    sqlite_store: SQLiteStore, redis_store: RedisStore, tmp_path: Path
) -> None:
    """Everything survives SQLite → Redis → SQLite, including modified_at and event cursors."""
    fill(sqlite_store, 7)
    report = copy_store(sqlite_store, redis_store, batch=3)
    assert (report.copied, report.events, report.audit_rows, report.ok) == (7, 21, 7, True)
    assert_same_contents(sqlite_store, redis_store)
    cursor = sqlite_store.events.append_event("s-001", Event(type="note", text="src-only"))
    redis_store.events.append("s-001", Event(type="note", text="dst-only"))
    first_cursor = next(iter(sqlite_store.events.read_after("s-001"))).cursor
    assert [r.cursor for r in redis_store.events.read_after("s-001", first_cursor)][-1] == cursor
    with SQLiteStore(tmp_path / "back.db") as back:
        again = copy_store(redis_store, back)
        assert again.copied == 7
        assert_same_contents(redis_store, back)


def test_copy_resumes_after_interruption(
    sqlite_store: SQLiteStore, redis_store: RedisStore
) -> None:
    """An interrupted copy keeps its finished batches; the next run copies only the rest."""
    fill(sqlite_store, 10)

    class Interrupted(Exception):
        """Stands in for a crash after the first batch."""

    def crash(done: int) -> None:
        raise Interrupted(done)

    with pytest.raises(Interrupted):
        copy_store(sqlite_store, redis_store, batch=4, progress=crash)
    assert len(redis_store.sessions.list()) == 4
    report = copy_store(sqlite_store, redis_store, batch=4)
    assert report.copied == 6
    assert report.skipped["already_imported"] == 4
    assert_same_contents(sqlite_store, redis_store)
    rerun = copy_store(sqlite_store, redis_store)
    assert (rerun.copied, rerun.skipped["already_imported"]) == (0, 10)


def test_existing_and_changed_sessions(sqlite_store: SQLiteStore, redis_store: RedisStore) -> None:
    """An existing id is kept, and a changed source re-copied, only with overwrite."""
    fill(sqlite_store, 3)
    redis_store.sessions.save(Session.new("s-002", title="already in redis"))
    report = copy_store(sqlite_store, redis_store)
    assert (report.copied, report.skipped["exists"]) == (2, 1)
    assert redis_store.sessions.load("s-002").title == "already in redis"
    changed = sqlite_store.sessions.load("s-001")
    changed.title = "changed in sqlite"
    sqlite_store.sessions.save(changed)
    again = copy_store(sqlite_store, redis_store)
    assert (again.copied, again.skipped["changed"]) == (0, 1)
    forced = copy_store(sqlite_store, redis_store, overwrite=True)
    assert forced.copied == 2  # s-001 (changed) and s-002 (existed)
    # s-001's log was replaced: a replaced log never keeps its generation (ImportTarget).
    assert_same_contents(sqlite_store, redis_store, replaced=frozenset({"s-001"}))


def test_redis_import_target_keeps_job_rows(redis_store: RedisStore) -> None:
    """The Redis import target records the job and its checkpoint rows under the prefix."""
    source = MemoryStore()
    fill(source, 2)
    report = copy_store(source, redis_store)
    rows = redis_store.imports.load_items(report.job_id)
    assert sorted(rows) == ["session:s-000", "session:s-001"]
    assert {row.outcome for row in rows.values()} == {"imported"}
    job = redis_store.conn.client.hget(f"{redis_store.prefix}migrate-jobs", report.job_id)
    assert job is not None and b'"state":"done"' in job


def test_bad_arguments_are_refused(redis_store: RedisStore) -> None:
    """A batch size out of range or a copy onto itself raises MigrationError."""
    with pytest.raises(MigrationError):
        copy_store(MemoryStore(), redis_store, batch=0)
    with pytest.raises(MigrationError):
        copy_store(redis_store, redis_store)


CHILD = """
import sys
from sqlstore import SQLiteStore
from sqlstore.redis import RedisStore, copy_store

def progress(done):
    print(done, flush=True)

with SQLiteStore(sys.argv[1]) as src, RedisStore(sys.argv[2]) as dst:
    copy_store(src, dst, batch=1, progress=progress)
print("finished", flush=True)
"""


def test_copy_killed_mid_way_leaves_whole_sessions(
    sqlite_store: SQLiteStore,
    redis_store: RedisStore,
    redis_url: str,  # noqa: F811
) -> None:
    """A copy process killed with SIGKILL leaves only whole sessions; a rerun completes it."""
    import subprocess
    import sys

    fill(sqlite_store, 40)
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(sqlite_store.path), redis_url],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        first = child.stdout.readline()  # one session copied: kill it somewhere after that
        assert first.strip() == "1"
        child.kill()
    finally:
        child.wait(30)
        if child.stdout is not None:
            child.stdout.close()
    copied = {s.id for s in redis_store.sessions.list()}
    assert copied, "the first session was reported copied"
    for sid in copied:
        assert len(list(redis_store.events.read_after(sid))) == 3
        assert len(redis_store.audit.list(sid)) == 1
    report = copy_store(sqlite_store, redis_store)
    assert report.copied + report.skipped["already_imported"] == 40
    assert_same_contents(sqlite_store, redis_store)


def test_run_migration_into_redis(redis_store: RedisStore, tmp_path: Path) -> None:
    """A run-log import writes into Redis through store.imports and resumes as already imported."""
    import json
    import os

    from sqlstore.migrate import run_migration

    source = tmp_path / "runs"
    source.mkdir()
    for run_id in ("r1", "r2"):
        lines = [
            {"kind": "meta", "at": "2026-11-29T14:05:01Z", "meta": {"id": run_id, "task": "t"}},
            {"kind": "message", "at": "2026-11-29T14:05:02Z",
             "message": {"type": "user", "text": f"hello {run_id}"}},
        ]  # fmt: skip
        path = source / f"{run_id}.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
        os.utime(path, (1_795_961_115, 1_795_961_115))
    first = run_migration(redis_store, source)
    assert (first.imported, first.failed) == (2, 0)
    assert sorted(s.id for s in redis_store.sessions.list()) == ["r1", "r2"]
    assert redis_store.sessions.load("r1").messages[-1].text == "hello r1"
    again = run_migration(redis_store, source)
    assert (again.imported, sum(again.skipped.values())) == (0, 2)


def test_cli_migrate_to_redis_and_back(redis_url: str, tmp_path: Path) -> None:  # noqa: F811
    """`sqlstore migrate --to redis://…` and `--from redis://… --to file.db` round-trip a file."""
    from click.testing import CliRunner

    from cli.main import cli

    src, back = tmp_path / "src.db", tmp_path / "back.db"
    with SQLiteStore(src) as store:
        store.sessions.save(representative_session("cli-copy"))
        store.events.append("cli-copy", Event("turn.start"))
    runner = CliRunner()
    there = runner.invoke(cli, ["--db", str(src), "migrate", "--to", redis_url])
    assert there.exit_code == 0, there.output
    home = runner.invoke(cli, ["migrate", "--from", redis_url, "--to", str(back)])
    assert home.exit_code == 0, home.output
    with SQLiteStore(src) as a, SQLiteStore(back) as b:
        assert_same_session(b.sessions.load("cli-copy"), a.sessions.load("cli-copy"))
        assert list(b.events.read("cli-copy")) == list(a.events.read("cli-copy"))
