"""Bad files at the database path: each gives its documented error, with a hint, untouched.

Truncated or damaged databases → ``StoreCorrupt``; a file that is not SQLite →
``StoreCorrupt``; another application's SQLite file → ``ForeignDatabase``; a newer
schema → ``SchemaTooNew``; a symlink or a directory → ``UnsafePath``; a read-only
file or directory → ``StoreReadOnly``. Never a raw apsw exception, and the bytes of
the file (and of its WAL) are the same before and after.

Tests run as root here, and root ignores permission bits, so read-only cases use
``chattr +i`` as root and plain modes otherwise. As root on a file system without
``chattr +i`` they fail loudly rather than skip.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import apsw
import pytest

from sqlstore import Event, Principal, Session, SQLiteStore, ToolCallRecord
from sqlstore.errors import (
    ForeignDatabase,
    SchemaTooNew,
    SnapshotError,
    StoreCorrupt,
    StoreError,
    StoreMissing,
    UnsafePath,
)
from sqlstore.sqlite.connection import PAGE_SIZE as PAGE

from .helpers import CHILD, chattr, child_env, file_digests


def _build(path: Path, sessions: int = 40) -> None:
    with SQLiteStore(path, durability="normal") as store:
        for i in range(sessions):
            sid = f"s{i}"
            store.sessions.create(Session.new(sid, title="t" * 100))
            for seq in range(15):
                store.events.append_event(sid, Event("e", seq=seq, text="x" * 80))
            store.audit.record(ToolCallRecord(session_id=sid, call_id=str(i), tool="bash"))


@pytest.fixture(scope="module")
def sound_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A closed, checkpointed store of a few hundred KiB to damage in copies."""
    path = tmp_path_factory.mktemp("sound") / "sound.db"
    _build(path)
    assert not Path(str(path) + "-wal").exists()
    return path


def _read_everything(store: SQLiteStore) -> None:
    for stored in store.sessions.list():
        store.sessions.load(stored.id)
        list(store.events.read_after(stored.id))
        store.audit.list(stored.id)
    list(store.sessions.iter_meta())
    store.sessions.page(1000)
    store.audit.query()
    # Reads that go through each secondary index too, so no page is left unread.
    store.sessions.page(1000, owner=Principal("iss", "nobody"), enforce_owner=True)
    store.audit.query(tool="bash")
    store.audit.query(since=datetime(2000, 1, 1, tzinfo=UTC))


def assert_refused(path: Path, expected: type[StoreError]) -> StoreError:
    """Opening ``path`` raises ``expected`` with a hint and leaves the file's bytes unchanged."""
    before = file_digests(path)
    with pytest.raises(expected) as caught:
        SQLiteStore(path)
    after = file_digests(path)
    assert after == before, f"opening a refused file changed it: {before} -> {after}"
    assert caught.value.hint, f"{expected.__name__} must carry a hint"
    assert not isinstance(caught.value, apsw.Error)
    return caught.value


def _open_and_read(path: Path) -> StoreError | None:
    """Open and read everything; return the StoreError met (a raw error fails the test)."""
    try:
        with SQLiteStore(path) as store:
            _read_everything(store)
    except StoreError as exc:
        return exc
    return None


@pytest.mark.parametrize("keep", [0.9, 0.5, 0.2, 0.02])
def test_truncated_database_is_store_corrupt(sound_db: Path, tmp_path: Path, keep: float) -> None:
    """A database cut short is reported as StoreCorrupt (never raw) and is not modified."""
    path = tmp_path / "cut.db"
    shutil.copy(sound_db, path)
    os.truncate(path, int(os.path.getsize(path) * keep) // PAGE * PAGE + 100)
    before = file_digests(path)
    error = _open_and_read(path)
    assert isinstance(error, StoreCorrupt), error
    assert error.hint
    assert file_digests(path) == before


@pytest.mark.parametrize("seed", range(4))
def test_garbage_pages_in_the_middle_are_store_corrupt(
    sound_db: Path, tmp_path: Path, seed: int
) -> None:
    """Whole pages of garbage over session data give StoreCorrupt, file untouched."""
    path = tmp_path / "garbage.db"
    shutil.copy(sound_db, path)
    rng = random.Random(seed)
    # Aim at pages that hold sessions, snapshots, events or audit rows (dbstat knows
    # which); pages of tables no read touches (migration bookkeeping) prove nothing.
    conn = apsw.Connection(str(sound_db), flags=apsw.SQLITE_OPEN_READONLY)
    data_pages = [
        pageno
        for (pageno,) in conn.execute(
            "SELECT pageno FROM dbstat WHERE name IN "
            "('sessions', 'snapshots', 'events', 'event_logs', 'tool_calls') ORDER BY pageno"
        )
    ]
    conn.close()
    first = rng.choice(data_pages[len(data_pages) // 4 :]) - 1
    with open(path, "r+b") as handle:
        handle.seek(first * PAGE)
        handle.write(rng.randbytes(3 * PAGE))
    before = file_digests(path)
    error = _open_and_read(path)
    assert isinstance(error, StoreCorrupt), error
    assert file_digests(path) == before


def _damage_rows(path: Path, sql: str) -> None:
    conn = apsw.Connection(str(path))
    conn.execute(sql)
    conn.close()


def test_damaged_snapshot_bytes_give_snapshot_error(tmp_path: Path) -> None:
    """A snapshot whose stored bytes were damaged fails to load with SnapshotError, not raw."""
    path = tmp_path / "s.db"
    _build(path, sessions=2)
    _damage_rows(path, "UPDATE snapshots SET body = x'7b2269ff' WHERE id = 's0'")
    with SQLiteStore(path) as store:
        with pytest.raises(SnapshotError):
            store.sessions.load("s0")
        assert store.sessions.load("s1").id == "s1"


@pytest.mark.parametrize("body", ["x'7b2274797065223aff'", "x'6e6f74206a736f6e'", "x'7b7d'"])
def test_damaged_event_body_gives_store_corrupt(tmp_path: Path, body: str) -> None:
    """An event whose stored body was damaged is reported as StoreCorrupt when read."""
    path = tmp_path / "s.db"
    _build(path, sessions=1)
    _damage_rows(path, f"UPDATE events SET body = {body} WHERE session_id = 's0' AND pos = 3")
    with SQLiteStore(path) as store, pytest.raises(StoreCorrupt):
        list(store.events.read_after("s0"))


@pytest.mark.parametrize(
    "content",
    [
        b"hello, this is a text file\n" * 200,
        bytes(range(256)) * 64,
        b"SQLite format 3\x00" + b"\xff" * 8000,
        b"PK\x03\x04",
        b"\x00" * 8192,
    ],
    ids=["text", "binary", "sqlite-header-then-garbage", "tiny-zip", "zeros"],
)
def test_non_sqlite_file_is_store_corrupt(tmp_path: Path, content: bytes) -> None:
    """A file that is not a SQLite database is refused with StoreCorrupt and left as it was."""
    path = tmp_path / "not.db"
    path.write_bytes(content)
    error = assert_refused(path, StoreCorrupt)
    assert str(path) in str(error)


def test_other_applications_database_is_foreign(tmp_path: Path) -> None:
    """A SQLite file with another application's tables is refused with ForeignDatabase."""
    path = tmp_path / "other.db"
    conn = apsw.Connection(str(path))
    conn.execute("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('mine')")
    conn.close()
    assert_refused(path, ForeignDatabase)


def test_foreign_application_id_is_foreign(tmp_path: Path) -> None:
    """An empty SQLite file stamped with another application_id is ForeignDatabase."""
    path = tmp_path / "other.db"
    conn = apsw.Connection(str(path))
    conn.execute("PRAGMA application_id = 1234; CREATE TABLE t (x)")
    conn.close()
    assert_refused(path, ForeignDatabase)


def _copy_with_live_wal(make: Callable[[apsw.Connection], object], dest: Path) -> None:
    """Leave ``dest`` as a WAL database whose newest pages are only in ``dest-wal``."""
    src = dest.with_name("src-" + dest.name)
    conn = apsw.Connection(str(src))
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA wal_autocheckpoint=0")
    make(conn)
    shutil.copy(src, dest)
    shutil.copy(str(src) + "-wal", str(dest) + "-wal")
    conn.close()


def test_foreign_wal_database_is_not_checkpointed(tmp_path: Path) -> None:
    """Refusing a foreign WAL database neither checkpoints its WAL into it nor deletes the WAL."""
    path = tmp_path / "other.db"
    _copy_with_live_wal(
        lambda c: c.execute("CREATE TABLE t (x); INSERT INTO t VALUES (1), (2)"), path
    )
    assert Path(str(path) + "-wal").stat().st_size > 0
    assert_refused(path, ForeignDatabase)
    assert Path(str(path) + "-wal").stat().st_size > 0


def test_newer_schema_is_schema_too_new(tmp_path: Path) -> None:
    """A file stamped with a newer user_version is refused with SchemaTooNew, untouched."""
    path = tmp_path / "new.db"
    _build(path, sessions=1)
    _damage_rows(path, "PRAGMA user_version = 99")
    error = assert_refused(path, SchemaTooNew)
    assert "99" in str(error)


def test_newer_schema_with_live_wal_is_untouched(tmp_path: Path) -> None:
    """A newer-schema file whose WAL still holds pages is refused without a checkpoint."""
    path = tmp_path / "new.db"
    _build(path, sessions=1)

    def bump(conn: apsw.Connection) -> None:
        conn.execute("PRAGMA user_version = 99; UPDATE store_meta SET value = 7")

    shutil.move(path, tmp_path / "src-new.db")
    src = tmp_path / "src-new.db"
    conn = apsw.Connection(str(src))
    conn.execute("PRAGMA wal_autocheckpoint=0")
    bump(conn)
    shutil.copy(src, path)
    shutil.copy(str(src) + "-wal", str(path) + "-wal")
    conn.close()
    assert_refused(path, SchemaTooNew)


def test_symlink_at_the_path_is_unsafe(tmp_path: Path) -> None:
    """A symlink at the database path is refused with UnsafePath; its target is untouched."""
    target = tmp_path / "real.db"
    _build(target, sessions=1)
    link = tmp_path / "link.db"
    link.symlink_to(target)
    before = file_digests(target)
    assert_refused(link, UnsafePath)
    assert file_digests(target) == before


def test_dangling_symlink_is_unsafe_and_creates_nothing(tmp_path: Path) -> None:
    """A dangling symlink is refused and its target is not created."""
    link = tmp_path / "link.db"
    link.symlink_to(tmp_path / "elsewhere.db")
    with pytest.raises(UnsafePath) as caught:
        SQLiteStore(link)
    assert caught.value.hint
    assert not (tmp_path / "elsewhere.db").exists()


def test_directory_at_the_path_is_unsafe(tmp_path: Path) -> None:
    """A directory at the database path is refused with UnsafePath."""
    (tmp_path / "dir.db").mkdir()
    with pytest.raises(UnsafePath):
        SQLiteStore(tmp_path / "dir.db")


def test_file_where_a_directory_should_be_is_unsafe(tmp_path: Path) -> None:
    """A plain file in place of a directory of the path is refused with UnsafePath."""
    (tmp_path / "f").write_text("not a directory")
    for path in (tmp_path / "f" / "s.db", tmp_path / "f" / "sub" / "s.db"):
        with pytest.raises(UnsafePath):
            SQLiteStore(path)
    assert (tmp_path / "f").read_text() == "not a directory"


def test_missing_file_without_create_is_store_missing(tmp_path: Path) -> None:
    """Opening a missing file with create=False raises StoreMissing and creates nothing."""
    with pytest.raises(StoreMissing) as caught:
        SQLiteStore(tmp_path / "absent.db", create=False)
    assert caught.value.hint
    assert list(tmp_path.iterdir()) == []


# -- read-only files and directories ---------------------------------------------------------


def _mechanism() -> str:
    if os.geteuid() != 0:
        return "chmod"
    probe = Path(tempfile.mkdtemp()) / "probe"
    probe.write_text("x")
    try:
        if chattr("+i", probe):
            chattr("-i", probe)
            return "chattr"
        return "none"
    finally:
        shutil.rmtree(probe.parent)


MECHANISM = os.environ.get("SQLSTORE_TEST_READONLY_MECHANISM") or _mechanism()
"""How this run makes things read-only: chattr +i (root), chmod (non-root), or none."""


def _probe(db: Path) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, str(CHILD), "probe", str(db)],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _protect(target: Path) -> None:
    if MECHANISM == "none":
        pytest.fail("running as root on a file system without chattr +i: cannot make read-only")
    if MECHANISM == "chattr":
        assert chattr("+i", target)
    else:
        target.chmod(0o500 if target.is_dir() else 0o400)


def _unprotect(*targets: Path) -> None:
    for target in targets:
        if MECHANISM == "chattr":
            chattr("-i", target)
        elif target.exists():
            target.chmod(0o700 if target.is_dir() else 0o600)


def test_read_only_file_refuses_writes_with_store_read_only(tmp_path: Path) -> None:
    """A read-only database file can be read; writes raise StoreReadOnly; bytes unchanged."""
    db = tmp_path / "s.db"
    _build(db, sessions=3)
    before = file_digests(db)
    _protect(db)
    try:
        result = _probe(db)
    finally:
        _unprotect(db)
    assert result["open"] == "ok", result
    assert result["read"] == "ok", result
    assert result["write"] == "StoreReadOnly", result
    assert result["append"] == "StoreReadOnly", result
    assert all(result["hints"]), result  # type: ignore[arg-type]
    assert file_digests(db)[""] == before[""]
    with SQLiteStore(db) as store:
        assert sorted(s.id for s in store.sessions.list()) == ["s0", "s1", "s2"]


def test_read_only_directory_gives_store_read_only(tmp_path: Path) -> None:
    """A store in a directory where -wal/-shm cannot be created fails with StoreReadOnly."""
    directory = tmp_path / "d"
    directory.mkdir()
    db = directory / "s.db"
    _build(db, sessions=3)
    before = file_digests(db)
    _protect(directory)
    try:
        result = _probe(db)
        new = _probe(directory / "new.db")
        created = sorted(p.name for p in directory.iterdir())
    finally:
        _unprotect(directory)
    assert result["open"] == "StoreReadOnly", result
    assert new["open"] == "StoreReadOnly", new
    assert all(result["hints"]) and all(new["hints"])  # type: ignore[arg-type]
    assert created == ["s.db"], f"files appeared in a read-only directory: {created}"
    assert file_digests(db)[""] == before[""]


def test_damaged_event_body_fails_plain_read_too(tmp_path: Path) -> None:
    """read() reports a damaged event body as StoreCorrupt naming the record."""
    path = tmp_path / "s.db"
    _build(path, sessions=1)
    _damage_rows(path, "UPDATE events SET body = x'6e6f74206a736f6e' WHERE session_id = 's0'")
    with SQLiteStore(path) as store, pytest.raises(StoreCorrupt, match="record 1"):
        list(store.events.read("s0"))


def test_readonly_open_leaves_a_live_wal_untouched(tmp_path: Path) -> None:
    """SQLiteStore(readonly=True) reads a crashed writer's WAL without changing any byte."""
    src = tmp_path / "src.db"
    writer = SQLiteStore(src, durability="normal")
    for i in range(10):
        writer.sessions.save(Session.new(f"s{i}"))
    path = tmp_path / "crashed.db"
    shutil.copy(src, path)  # what a writer killed before any checkpoint leaves behind
    shutil.copy(str(src) + "-wal", str(path) + "-wal")
    writer.close()
    before = file_digests(path)
    with SQLiteStore(path, readonly=True) as store:
        assert len(store.sessions.list()) == 10
    assert file_digests(path) == before
