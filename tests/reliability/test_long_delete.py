"""Deleting very long sessions in bounded steps (issue 20, item 16).

Deleting a session of 1,000,000 events in one transaction held the write lock
for 0.76 s. Now one transaction unpublishes the session (gone to every reader at
once) and bounded transactions delete the unreachable rows. Checked here with
real processes: an appender with a short busy timeout never sees ``StoreBusy``
while the installed console script removes a 500,000-event session; a
``kill -9`` in the middle of a deletion leaves nothing of the session visible,
and the next writable open finishes it; writes under the id meanwhile start
from nothing; and no step deletes more than ``DELETE_STEP_ROWS`` rows.
"""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import time
from pathlib import Path

import apsw
import pytest

from sqlstore import Event, Session, SQLiteStore, ToolCallRecord, clock
from sqlstore.checkpoints import ChannelBlob, CheckpointQuery, CheckpointRecord, PendingWrite
from sqlstore.errors import SessionNotFound
from sqlstore.events import encode_event
from sqlstore.sqlite import deletion, rows

from .helpers import integrity, spawn

pytestmark = pytest.mark.slow

TIMEOUT_S = 120.0
"""Upper bound for any wait on a child process (never a timing assertion)."""


def _fill(db: Path, session_id: str, events: int, audits: int) -> None:
    """Give ``session_id`` a snapshot, ``events`` events and ``audits`` audit rows, fast."""
    body = encode_event(Event("message", text="x" * 150))
    with SQLiteStore(db, durability="normal") as store:
        store.sessions.save(Session.new(session_id))

        def op(conn: apsw.Connection) -> None:
            now_ns = clock.now_ns()
            for _ in range(events):
                rows.append_record(
                    conn, session_id, is_gap=False, event_type="message", body=body, now_ns=now_ns
                )
            for n in range(audits):
                rec = ToolCallRecord(session_id=session_id, call_id=f"c{n}", tool="Bash")
                rows.insert_audit(conn, rec, now_ns)

        store.db.write(op)


def _raw_count(db: Path, sql: str, *args: object) -> int:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        row = conn.execute(sql, args).fetchone()
        return int(row[0]) if row else 0
    finally:
        conn.close()


def test_console_rm_of_a_long_session_never_stalls_another_process(tmp_path: Path) -> None:
    """`sqlstore rm` of 500,000 events: an appender (150 ms busy timeout) never gets StoreBusy."""
    from tests.test_cli_process import console_script

    db = tmp_path / "long.db"
    _fill(db, "long", 500_000, 1_000)
    appender = spawn("steady", str(db), "150", stdin=subprocess.PIPE)
    try:
        assert appender.stdout is not None
        while not appender.stdout.readline().startswith("FLOWING"):
            pass
        done = subprocess.run(
            [console_script(), "--db", str(db), "rm", "long", "--yes"],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
        assert done.returncode == 0, done.stderr
    finally:
        out, err = appender.communicate(input="", timeout=TIMEOUT_S)
    assert [line for line in out.splitlines() if line.startswith("BUSY")] == [], err
    assert _raw_count(db, "SELECT count(*) FROM events WHERE session_id = 'long'") == 0
    assert _raw_count(db, "SELECT count(*) FROM tool_calls WHERE session_id = 'long'") == 0
    assert _raw_count(db, "SELECT count(*) FROM deletions") == 0


def test_kill_9_mid_delete_hides_the_session_and_the_next_open_finishes(tmp_path: Path) -> None:
    """A deleter killed between steps leaves nothing visible; opening for writing finishes it."""
    db = tmp_path / "crash.db"
    _fill(db, "long", 20_000, 3_000)
    with SQLiteStore(db) as store:
        store.sessions.save(Session.new("other"))
        store.audit.record(ToolCallRecord(session_id="other", call_id="o", tool="T"))
    proc = spawn("deleter", str(db), "long", "500", "0.05")
    assert proc.stdout is not None and proc.stdout.readline() == "START\n"
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        assert time.monotonic() < deadline, "the deletion never got under way"
        started = _raw_count(db, "SELECT count(*) FROM deletions")
        left = _raw_count(db, "SELECT count(*) FROM events WHERE session_id = 'long'")
        if started and 0 < left < 20_000:
            break
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=TIMEOUT_S)
    assert _raw_count(db, "SELECT count(*) FROM deletions") == 1
    assert _raw_count(db, "SELECT count(*) FROM tool_calls WHERE session_id = 'long'") > 0
    with SQLiteStore(db, readonly=True) as store:  # what every reader sees meanwhile
        with pytest.raises(SessionNotFound):
            store.sessions.load("long")
        with pytest.raises(SessionNotFound):
            store.sessions.meta("long")
        assert [m.id for m in store.sessions.inventory().sessions] == ["other"]
        assert store.sessions.orphans() == []
        assert list(store.events.read("long")) == []
        assert store.audit.list("long") == []
        assert [r.session_id for r in store.audit.query()] == ["other"]
    with SQLiteStore(db):
        pass  # a writable open finishes the deletion
    assert _raw_count(db, "SELECT count(*) FROM events WHERE session_id = 'long'") == 0
    assert _raw_count(db, "SELECT count(*) FROM tool_calls WHERE session_id = 'long'") == 0
    assert _raw_count(db, "SELECT count(*) FROM deletions") == 0
    assert integrity(db) == ["ok"]


def test_writes_under_the_id_of_a_pending_deletion_start_from_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An append, an audit record and a save under an id being deleted see none of its rows."""
    monkeypatch.setattr(rows, "DELETE_STEP_ROWS", 10)
    db = tmp_path / "w.db"
    _fill(db, "x", 50, 5)
    with SQLiteStore(db) as store:
        old = store.events.append_event("x", Event("old"))
        assert store.db.write(lambda conn: deletion.start(conn, "x", clock.now_ns())) is True
        cursor = store.events.append_event("x", Event("new"))
        assert cursor != old
        assert [r.event.type for r in store.events.read_after("x") if r.event] == ["new"]
        assert store.audit.list("x") == []
        assert store.db.read(deletion.pending) == []
        store.db.write(lambda conn: deletion.start(conn, "x", clock.now_ns()))  # 1 row: at once
        store.sessions.save(Session.new("x"))
        assert list(store.events.read("x")) == []
        assert store.sessions.meta("x").id == "x"


def test_every_step_is_bounded_on_every_delete_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """delete, delete_if_unchanged and an orphan delete never remove more than a step's rows."""
    monkeypatch.setattr(rows, "DELETE_STEP_ROWS", 100)
    monkeypatch.setattr(deletion, "DELETE_STEP_PAUSE_S", 0.0)
    counts: list[int] = []
    original = rows.delete_step

    def counting(conn: apsw.Connection, session_id: str) -> bool:
        finished = original(conn, session_id)
        if not finished:
            counts.append(conn.changes())
        return finished

    monkeypatch.setattr(rows, "delete_step", counting)
    db = tmp_path / "b.db"
    for sid in ("a", "b", "c"):
        _fill(db, sid, 1_000, 250)
    with SQLiteStore(db) as store:
        store.sessions.delete("a")
        assert store.sessions.delete_if_unchanged(store.sessions.meta("b")) is True
        store.sessions.delete("c")
        store.events.append_event("c", Event("late"))  # an orphan of 1 row: one transaction
        (orphan,) = store.sessions.orphans()
        assert store.sessions.delete_orphan_if_unchanged(orphan) is True
    assert len(counts) >= 3 * 13 and max(counts) <= 100
    assert _raw_count(db, "SELECT count(*) FROM events") == 0
    assert _raw_count(db, "SELECT count(*) FROM tool_calls") == 0


def _put_thread(store: SQLiteStore, thread: str, count: int) -> None:
    """Give ``thread`` ``count`` checkpoints, each with a blob and a pending write."""
    for n in range(count):
        cp = CheckpointRecord(
            thread, "", f"cp-{n:04d}", None, "json", b"{}", b'{"step": 1}', {"ch": str(n)}
        )
        store.checkpoints.put(cp, [ChannelBlob("ch", str(n), "json", b"1")])
        store.checkpoints.put_writes(
            thread, "", cp.checkpoint_id, [PendingWrite("task", 0, "ch", "json", b"2")]
        )


def _start(session_id: str, conn: apsw.Connection) -> bool:
    return deletion.start(conn, session_id, clock.now_ns())


def _checkpoint_rows(db: Path, thread: str) -> int:
    return sum(
        _raw_count(db, f"SELECT count(*) FROM {table} WHERE session_id = ?", thread)
        for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes")
    )


def test_a_stepped_deletion_removes_the_threads_checkpoints_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From the unpublishing transaction on, neither the port nor the saver reads a checkpoint."""
    from sqlstore.integrations.langgraph import SqlstoreSaver

    monkeypatch.setattr(rows, "DELETE_STEP_ROWS", 10)
    db = tmp_path / "cp.db"
    _fill(db, "x", 50, 5)
    with SQLiteStore(db) as store:
        _put_thread(store, "x", 3)
        assert store.db.write(lambda conn: deletion.start(conn, "x", clock.now_ns())) is True
        assert store.db.read(deletion.pending) == ["x"]  # steps remain: events, audit rows
        assert _checkpoint_rows(db, "x") == 0
        assert store.checkpoints.get("x", "") is None
        assert store.checkpoints.page(CheckpointQuery(thread_id="x")).entries == []
        assert store.checkpoints.thread_ids() == []
        saver = SqlstoreSaver(store)
        config = {"configurable": {"thread_id": "x", "checkpoint_ns": ""}}
        assert saver.get_tuple(config) is None  # type: ignore[arg-type]
        assert list(saver.list(config)) == []  # type: ignore[arg-type]


def test_a_checkpoint_put_under_a_pending_deletion_starts_a_new_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A put (or put_writes) while steps remain finishes the deletion first and then survives."""
    monkeypatch.setattr(rows, "DELETE_STEP_ROWS", 10)
    db = tmp_path / "put.db"
    for sid in ("x", "y"):
        _fill(db, sid, 50, 5)
    with SQLiteStore(db) as store:
        _put_thread(store, "x", 2)
        for sid in ("x", "y"):
            store.db.write(functools.partial(_start, sid))
        late = CheckpointRecord("x", "", "cp-late", None, "json", b"{}", b"{}", {})
        store.checkpoints.put(late, [], session=Session.new("x"))
        store.checkpoints.put_writes("y", "", "cp-y", [PendingWrite("t", 0, "c", "json", b"3")])
        assert store.db.read(deletion.pending) == []
        assert list(store.events.read("x")) == [] and store.audit.list("y") == []
    with SQLiteStore(db) as store:  # nothing left for the next open to finish away
        entry = store.checkpoints.get("x", "")
        assert entry is not None and entry.record.checkpoint_id == "cp-late"
        assert store.checkpoints.summary("x").checkpoints == 1
        assert store.sessions.meta("x").id == "x"
        assert [o.id for o in store.sessions.orphans()] == ["y"]
    assert _checkpoint_rows(db, "y") == 1


def test_kill_9_mid_delete_leaves_no_checkpoint_readable(tmp_path: Path) -> None:
    """A deleter killed between steps: no checkpoint is readable; the next open finishes it."""
    db = tmp_path / "crash-cp.db"
    _fill(db, "long", 20_000, 3_000)
    with SQLiteStore(db) as store:
        _put_thread(store, "long", 5)
        _put_thread(store, "other", 1)
    proc = spawn("deleter", str(db), "long", "500", "0.05")
    assert proc.stdout is not None and proc.stdout.readline() == "START\n"
    deadline = time.monotonic() + TIMEOUT_S
    while not (
        _raw_count(db, "SELECT count(*) FROM deletions")
        and 0 < _raw_count(db, "SELECT count(*) FROM events WHERE session_id = 'long'") < 20_000
    ):
        assert time.monotonic() < deadline, "the deletion never got under way"
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=TIMEOUT_S)
    assert _raw_count(db, "SELECT count(*) FROM deletions") == 1
    assert _checkpoint_rows(db, "long") == 0
    with SQLiteStore(db, readonly=True) as store:
        assert store.checkpoints.get("long", "") is None
        assert [e.record.thread_id for e in store.checkpoints.page(CheckpointQuery()).entries] == [
            "other"
        ]
    with SQLiteStore(db) as store:  # a writable open finishes the deletion
        assert store.checkpoints.thread_ids() == ["other"]
    assert _raw_count(db, "SELECT count(*) FROM events WHERE session_id = 'long'") == 0
    assert _raw_count(db, "SELECT count(*) FROM deletions") == 0
    assert integrity(db) == ["ok"]
