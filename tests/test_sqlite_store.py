"""SQLiteStore specifics: the file, the schema, pragmas, packaging and group commit."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
import pytest

import sqlstore
from sqlstore import Event, Kind, Principal, Session, SQLiteStore, ToolCallRecord
from sqlstore.errors import (
    ForeignDatabase,
    InvalidEvent,
    InvalidSessionId,
    SchemaTooNew,
    SessionAlreadyExists,
    StoreClosed,
    StoreCorrupt,
    StoreMissing,
    UnsafePath,
)
from sqlstore.sqlite.connection import APPLICATION_ID, SCHEMA_VERSION, schema_sql

ROOT = Path(__file__).resolve().parents[1]


def _digest(path: Path) -> bytes:
    return path.read_bytes()


def test_packaged_schema_equals_root_file(tmp_path: Path) -> None:
    """The wheel carries sqlstore/schema.sql byte-identical to the root schema.sql, and no tests."""
    out = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "hatchling", "build", "-t", "wheel", "-d", str(out)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    (wheel,) = out.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        assert archive.read("sqlstore/schema.sql") == (ROOT / "schema.sql").read_bytes()
    assert not [n for n in names if n.startswith("tests/")]
    assert "sqlstore/py.typed" in names


def test_schema_loader_reads_root_schema() -> None:
    """The schema text the store applies is the root schema.sql."""
    assert schema_sql() == (ROOT / "schema.sql").read_text(encoding="utf-8")


def test_new_file_is_wal_incremental_and_stamped(tmp_path: Path) -> None:
    """A new store file is WAL with incremental auto-vacuum, our application id and version."""
    path = tmp_path / "s.db"
    SQLiteStore(path).close()
    conn = apsw.Connection(str(path))
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert conn.execute("PRAGMA auto_vacuum").fetchone() == (2,)
    assert conn.execute("PRAGMA application_id").fetchone() == (APPLICATION_ID,)
    assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    conn.close()


def test_file_and_directory_modes(tmp_path: Path) -> None:
    """The database, -wal and -shm files are 0600 and a created directory is 0700."""
    old = os.umask(0)
    try:
        path = tmp_path / "new-dir" / "s.db"
        with SQLiteStore(path) as store:
            store.sessions.save(Session.new("a"))
            for name in ("s.db", "s.db-wal", "s.db-shm"):
                assert (path.parent / name).stat().st_mode & 0o777 == 0o600, name
        assert path.parent.stat().st_mode & 0o777 == 0o700
    finally:
        os.umask(old)


def test_symlink_path_is_refused(tmp_path: Path) -> None:
    """A path whose final component is a symlink raises UnsafePath and creates nothing."""
    target = tmp_path / "real.db"
    link = tmp_path / "link.db"
    link.symlink_to(target)
    with pytest.raises(UnsafePath, match="symbolic link"):
        SQLiteStore(link)
    assert not target.exists()


def test_missing_file_with_create_false(tmp_path: Path) -> None:
    """create=False on a missing file raises StoreMissing with a hint and creates nothing."""
    path = tmp_path / "nope.db"
    with pytest.raises(StoreMissing) as info:
        SQLiteStore(path, create=False)
    assert "sqlstore init" in info.value.hint
    assert not path.exists()


def test_foreign_sqlite_file_is_refused_unchanged(tmp_path: Path) -> None:
    """Another application's SQLite file raises ForeignDatabase and is not modified."""
    path = tmp_path / "other.db"
    conn = apsw.Connection(str(path))
    conn.execute("CREATE TABLE t (x); INSERT INTO t VALUES (1)")
    conn.close()
    before = _digest(path)
    with pytest.raises(ForeignDatabase) as info:
        SQLiteStore(path)
    assert info.value.hint
    assert _digest(path) == before
    assert not (tmp_path / "other.db-wal").exists()


def test_newer_schema_is_refused_unchanged(tmp_path: Path) -> None:
    """A file stamped with a newer user_version raises SchemaTooNew and is not modified."""
    path = tmp_path / "s.db"
    SQLiteStore(path).close()
    conn = apsw.Connection(str(path))
    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    conn.close()
    before = _digest(path)
    with pytest.raises(SchemaTooNew, match="schema version"):
        SQLiteStore(path)
    assert _digest(path) == before


def test_non_sqlite_file_is_refused_unchanged(tmp_path: Path) -> None:
    """A file that is not SQLite raises StoreCorrupt naming the problem, unchanged."""
    path = tmp_path / "notes.db"
    path.write_bytes(b"hello, this is not a database\n" * 100)
    before = _digest(path)
    with pytest.raises(StoreCorrupt, match="not a SQLite database"):
        SQLiteStore(path)
    assert _digest(path) == before


def test_open_urls(tmp_path: Path) -> None:
    """sqlstore.open accepts memory:, sqlite:/// URLs and plain paths, and rejects other schemes."""
    assert isinstance(sqlstore.open("memory:"), sqlstore.MemoryStore)
    with sqlstore.open(f"sqlite:///{tmp_path}/a.db") as store:
        assert isinstance(store, SQLiteStore)
        assert Path(store.path) == tmp_path / "a.db"
    with sqlstore.open(str(tmp_path / "b.db"), durability="normal") as store:
        assert store.db.durability == "normal"
    with pytest.raises(ValueError, match="scheme"):
        sqlstore.open("postgres://x")


def test_bad_durability_is_rejected(tmp_path: Path) -> None:
    """An unknown durability mode raises ValueError."""
    with pytest.raises(ValueError, match="durability"):
        SQLiteStore(tmp_path / "a.db", durability="sometimes")  # type: ignore[arg-type]


def test_closed_store_raises(tmp_path: Path) -> None:
    """Using a closed store raises StoreClosed; close is idempotent."""
    store = SQLiteStore(tmp_path / "a.db")
    store.close()
    store.close()
    with pytest.raises(StoreClosed):
        store.sessions.save(Session.new("a"))
    with pytest.raises(StoreClosed):
        store.sessions.load("a")


def test_invalid_inputs_write_nothing(tmp_path: Path) -> None:
    """Invalid ids and unserialisable events raise documented errors and store nothing."""
    with SQLiteStore(tmp_path / "a.db") as store:
        with pytest.raises(InvalidSessionId):
            store.events.append_event("", Event("x"))
        with pytest.raises(InvalidEvent, match="JSON"):
            store.events.append_event("a", Event("x", data={"bad": object()}))
        with pytest.raises(InvalidEvent, match="JSON"):
            store.events.append_event("a", Event("x", data={"nan": float("nan")}))
        assert list(store.events.read_after("a")) == []


def test_sixteen_mib_event_round_trips(tmp_path: Path) -> None:
    """An event of 16 MiB is stored and read back intact."""
    text = "x" * (16 * 1024 * 1024)
    with SQLiteStore(tmp_path / "a.db") as store:
        store.events.append("big", Event("blob", text=text))
        (event,) = store.events.read("big")
        assert event.text == text


def test_group_commit_keeps_each_threads_order(tmp_path: Path) -> None:
    """Eight threads appending at once each find all their events, in their order."""
    per_thread = 60
    with SQLiteStore(tmp_path / "a.db") as store:

        def work(n: int) -> None:
            for k in range(per_thread):
                store.events.append("shared", Event("e", seq=k, run_id=str(n)))

        threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        events = list(store.events.read("shared"))
        assert len(events) == 8 * per_thread
        for n in range(8):
            assert [e.seq for e in events if e.run_id == str(n)] == list(range(per_thread))


def test_failed_write_in_a_batch_rolls_back_only_itself(tmp_path: Path) -> None:
    """A colliding create batched with appends fails alone; the appends commit."""
    with SQLiteStore(tmp_path / "a.db") as store:
        store.sessions.create(Session.new("taken"))
        errors: list[BaseException] = []
        barrier = threading.Barrier(6)

        def collide() -> None:
            barrier.wait()
            try:
                store.sessions.create(Session.new("taken", kind=Kind.MAIN))
            except SessionAlreadyExists as exc:
                errors.append(exc)

        def append(n: int) -> None:
            barrier.wait()
            for k in range(20):
                store.events.append(f"log-{n}", Event("e", seq=k))

        threads = [threading.Thread(target=collide)]
        threads += [threading.Thread(target=append, args=(n,)) for n in range(5)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(errors) == 1
        for n in range(5):
            assert [e.seq for e in store.events.read(f"log-{n}")] == list(range(20))


def test_version_never_reused_after_recreate(tmp_path: Path) -> None:
    """A session deleted and re-created gets a version its old rows never had."""
    with SQLiteStore(tmp_path / "a.db") as store:
        store.sessions.save(Session.new("a"))
        old = store.sessions.meta("a")
        store.sessions.delete("a")
        store.sessions.save(Session.new("a"))
        assert store.sessions.meta("a").version > old.version
        assert store.sessions.delete_if_unchanged(old) is False


def test_owner_paging_uses_identity_only(tmp_path: Path) -> None:
    """Owner scoping matches (issuer, subject) and ignores grant type and display name."""
    with SQLiteStore(tmp_path / "a.db") as store:
        store.sessions.save(Session.new("a", owner=Principal("iss", "alice", "code", "Alice")))
        store.sessions.save(Session.new("b", owner=Principal("iss", "bob")))
        page = store.sessions.page(
            10, owner=Principal("iss", "alice", "other", "A."), enforce_owner=True
        )
        assert [m.id for m in page.sessions] == ["a"]
        assert page.total == 1
        assert store.sessions.page(10, owner=None, enforce_owner=True).total == 0


def test_iter_meta_streams_oldest_first(tmp_path: Path) -> None:
    """iter_meta yields every row oldest first across several internal pages."""
    from sqlstore.sqlite import sessions as sessions_module

    with SQLiteStore(tmp_path / "a.db") as store:
        for n in range(25):
            store.sessions.save(Session.new(f"s{n:02d}"))
        old = sessions_module.ITER_META_PAGE_ROWS
        sessions_module.ITER_META_PAGE_ROWS = 7
        try:
            ids = [m.id for m in store.sessions.iter_meta()]
        finally:
            sessions_module.ITER_META_PAGE_ROWS = old
        assert ids == [f"s{n:02d}" for n in range(25)]


def test_readonly_store_reads_and_refuses_writes(tmp_path: Path) -> None:
    """readonly=True reads an existing store, raises StoreReadOnly on writes, changes nothing."""
    from sqlstore.errors import StoreError, StoreReadOnly

    path = tmp_path / "a.db"
    with SQLiteStore(path) as store:
        store.sessions.save(Session.new("a"))
    before = _digest(path)
    with SQLiteStore(path, readonly=True) as store:
        assert store.sessions.load("a").id == "a"
        with pytest.raises(StoreReadOnly):
            store.sessions.save(Session.new("b"))
    assert _digest(path) == before
    empty = tmp_path / "empty.db"
    empty.touch()
    with pytest.raises(StoreError, match="no sqlstore database") as info:
        SQLiteStore(empty, readonly=True)
    assert "sqlstore init" in info.value.hint
    assert empty.read_bytes() == b""
    with pytest.raises(StoreMissing):
        SQLiteStore(tmp_path / "missing.db", readonly=True)


SCHEMA_3_TABLES = ("scoped_state", "orphans", "deletions")
"""Tables schema version 3 added (each second-stage feature adds its own)."""


def _as_schema_2(path: Path) -> None:
    """Rewrite a current store file into what schema version 2 looked like."""
    conn = apsw.Connection(str(path))
    drops = "".join(f"DROP TABLE {table}; " for table in SCHEMA_3_TABLES)
    conn.execute(f"BEGIN IMMEDIATE; {drops}PRAGMA user_version = 2; COMMIT")
    conn.close()


def _as_schema_1(path: Path) -> None:
    """Rewrite a current store file into what schema version 1 looked like."""
    _as_schema_2(path)
    conn = apsw.Connection(str(path))
    conn.execute(
        "BEGIN IMMEDIATE; DROP INDEX sessions_by_owner; "
        "CREATE INDEX sessions_by_owner ON sessions (owner_key, modified_at_ns, id); "
        # Tables of schema version 3 (LangGraph checkpoints, issue 17).
        "DROP TABLE checkpoints; DROP TABLE checkpoint_blobs; DROP TABLE checkpoint_writes; "
        "PRAGMA user_version = 1; COMMIT"
    )
    conn.close()


def test_schema_2_file_is_upgraded_to_scoped_state(tmp_path: Path) -> None:
    """Opening a version-2 file adds the scoped-state table and keeps every row."""
    path = tmp_path / "v2.db"
    with SQLiteStore(path) as store:
        store.sessions.save(Session.new("a"))
        store.events.append_event("a", Event("message", 1, 1, "hi", "r"))
    _as_schema_2(path)
    with SQLiteStore(path) as store:
        assert [e.text for e in store.events.read("a")] == ["hi"]
        store.scopes.merge("app", {"k": 1})
        assert store.scopes.get("app") == {"k": 1}
    conn = apsw.Connection(str(path))
    assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,) == (3,)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    conn.close()


def _owner_index_sql(path: Path) -> str:
    conn = apsw.Connection(str(path))
    row = conn.execute("SELECT sql FROM sqlite_schema WHERE name = 'sessions_by_owner'").fetchone()
    conn.close()
    assert row is not None
    return str(row[0])


def test_new_file_uses_small_pages(tmp_path: Path) -> None:
    """New files get PAGE_SIZE pages (fewer WAL bytes per durable append)."""
    from sqlstore.sqlite.connection import PAGE_SIZE

    path = tmp_path / "s.db"
    SQLiteStore(path).close()
    conn = apsw.Connection(str(path))
    assert conn.execute("PRAGMA page_size").fetchone() == (PAGE_SIZE,)
    conn.close()


def test_schema_1_file_is_upgraded_in_place(tmp_path: Path) -> None:
    """Opening a version-1 file upgrades it to the current version, keeping every row."""
    path = tmp_path / "old.db"
    alice = Principal("iss", "alice")
    with SQLiteStore(path) as store:
        store.sessions.save(Session.new("a", owner=alice))
        store.sessions.save(Session.new("b"))
        store.events.append_event("a", Event("message", 1, 1, "hi", "r"))
    _as_schema_1(path)
    assert "WHERE" not in _owner_index_sql(path)
    with SQLiteStore(path) as store:
        assert {m.id for m in store.sessions.page(10).sessions} == {"a", "b"}
        page = store.sessions.page(10, owner=alice, enforce_owner=True)
        assert [m.id for m in page.sessions] == ["a"]
        assert [e.text for e in store.events.read("a")] == ["hi"]
    assert "WHERE owner_key IS NOT NULL" in _owner_index_sql(path)
    conn = apsw.Connection(str(path))
    assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    conn.close()


def test_schema_2_file_upgrade_lists_its_orphan_logs(tmp_path: Path) -> None:
    """A version-2 file holding logs and audit rows without a snapshot lists them after upgrade."""
    path = tmp_path / "v2.db"
    with SQLiteStore(path) as store:
        store.sessions.save(Session.new("kept"))
        store.events.append_event("kept", Event("e"))
        store.events.append_event("late", Event("e"))
        store.audit.record(ToolCallRecord(session_id="audited", call_id="c", tool="T"))
    _as_schema_2(path)
    with SQLiteStore(path) as store:
        found = {(o.id, o.records, o.audit_rows) for o in store.sessions.orphans()}
    assert found == {("late", 1, 0), ("audited", 0, 1)}


def test_schema_1_file_opened_readonly_is_refused_unchanged(tmp_path: Path) -> None:
    """A read-only open of a file that needs an upgrade is refused with a hint; bytes unchanged."""
    from sqlstore.errors import StoreError

    path = tmp_path / "old.db"
    with SQLiteStore(path) as store:
        store.sessions.save(Session.new("a"))
    _as_schema_1(path)
    before = _digest(path)
    with pytest.raises(StoreError, match="needs an upgrade") as info:
        SQLiteStore(path, readonly=True)
    assert "sqlstore init" in info.value.hint
    assert _digest(path) == before


def test_owner_paging_reads_the_partial_owner_index(tmp_path: Path) -> None:
    """The owner-scoped page query is planned on the partial sessions_by_owner index."""
    with SQLiteStore(tmp_path / "a.db") as store:
        store.sessions.save(Session.new("a", owner=Principal("iss", "alice")))
    conn = apsw.Connection(str(tmp_path / "a.db"))
    plan = " ".join(
        str(row[-1])
        for row in conn.execute(
            "EXPLAIN QUERY PLAN SELECT id FROM sessions WHERE owner_key = ? "
            "ORDER BY modified_at_ns DESC, id ASC LIMIT 10",
            ("k",),
        )
    )
    conn.close()
    assert "sessions_by_owner" in plan


def test_notifier_bump_without_waiters_does_not_take_the_lock() -> None:
    """bump() with no parked follower never blocks on the condition's lock."""
    from sqlstore.sqlite.database import Notifier

    notifier = Notifier()
    bumper = threading.Thread(target=notifier.bump)
    with notifier.cond:  # held by this thread: a bump that took the lock would hang
        bumper.start()
        bumper.join(30)
        assert not bumper.is_alive()
    assert notifier.count == 1


def test_notifier_wakes_a_parked_follower() -> None:
    """A follower parked in wait_for_change is woken by a bump from another thread."""
    from sqlstore.sqlite.database import Notifier

    notifier = Notifier()
    parked = threading.Event()
    outcome: list[bool] = []

    def follower() -> None:
        parked.set()
        outcome.append(notifier.wait_for_change(0, 3600.0))  # far past the join below

    thread = threading.Thread(target=follower, daemon=True)
    thread.start()
    parked.wait()
    while notifier.waiters == 0:  # parked inside the condition's wait
        threading.Event().wait(0.001)
    notifier.bump()
    thread.join(60)
    assert outcome == [True] and not thread.is_alive()


def _wait_until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in 30 s"
        time.sleep(0.001)


def test_leader_gathers_the_writers_of_the_last_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a batch of 4, the next leader waits for 4 queued writes and commits them at once.

    The wait bounds are raised to an hour so the test does not depend on thread
    timing: the leader can only move on because the fourth write arrived. The
    test holds the leader lock itself, and gives it back whatever happens, so a
    failure cannot leave ``close()`` waiting for it.
    """
    from sqlstore.sqlite import database

    monkeypatch.setattr(database, "GATHER_MAX_S", 3600.0)
    with SQLiteStore(tmp_path / "a.db") as store:
        db = store.db
        db._last_batch, db._last_batch_took = 4, 3600.0
        db._last_batch_end = time.monotonic()
        batches: list[int] = []
        real_commit = db._commit

        def counting_commit(batch: Any) -> bool:
            batches.append(len(batch))
            return real_commit(batch)

        monkeypatch.setattr(db, "_commit", counting_commit)

        def append(n: int) -> None:
            store.events.append_event(f"log-{n}", Event("e", seq=n))

        writers = [threading.Thread(target=append, args=(n,), daemon=True) for n in range(4)]
        leader = threading.Thread(target=db._commit_next_batch, daemon=True)
        db._leader.acquire()  # hold leadership so the writers queue up
        try:
            for thread in writers[:3]:
                thread.start()
            _wait_until(lambda: len(db._pending) == 3)
            leader.start()
            _wait_until(lambda: db._gather_target == 4)
            assert batches == []  # still gathering: three of four are queued
            writers[3].start()
            leader.join(timeout=60)
            assert not leader.is_alive(), "the fourth write did not end the gathering"
        finally:
            db._gathered.set()
            db._leader.release()
            db._hand_off()
        for thread in writers:
            thread.join(timeout=60)
        assert batches == [4]
        assert db._gather_skip == 0 and db._gather_backoff == 1
        assert all([e.seq for e in store.events.read(f"log-{n}")] == [n] for n in range(4))


def test_a_gathering_that_ends_short_backs_off(tmp_path: Path) -> None:
    """A wait that does not fill (its writer came back later than a commit takes) is not
    repeated for the next 1, 2, 4 ... queued batches, and the fast path comes back."""
    with SQLiteStore(tmp_path / "a.db") as store:
        db = store.db
        for expected_skip in (1, 2, 4):
            # The last batch held 2 writes and took no time: the wait bound is zero.
            db._last_batch, db._last_batch_took = 2, 0.0
            db._last_batch_end = time.monotonic()
            db._gather_skip = 0
            db._gather()
            assert db._gather_skip == expected_skip
            assert not db._batching()  # a lone writer may take the fast path again
        db._gather_skip = 0
        db._gather_backoff = 64
        db._gather()
        assert db._gather_backoff == 64  # capped at GATHER_BACKOFF_MAX


def test_no_gathering_for_a_lone_writer_or_after_a_pause(tmp_path: Path) -> None:
    """A single writer keeps the fast path; a batch long past does not make anyone wait."""
    from sqlstore.sqlite import database

    with SQLiteStore(tmp_path / "a.db") as store:
        db = store.db
        assert not db._batching()
        db._last_batch, db._last_batch_end = 8, time.monotonic() - 10 * database.GATHER_MAX_S
        assert not db._batching()
        db._last_batch_end = time.monotonic()
        db._last_batch = 1
        assert not db._batching()
        db._last_batch = 0
        store.events.append_event("solo", Event("e"))
        assert db._last_batch == 0  # committed on the fast path, not as a batch
