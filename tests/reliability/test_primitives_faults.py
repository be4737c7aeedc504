"""Failing units of work on SQLite: a busy lock, a full disk, a conflict inside a group commit.

Each failure must come back as the documented ``StoreError`` and leave nothing of
the failed batch behind — no event, no audit row, no snapshot — while every write
acknowledged before it (or committed beside it) stays whole.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from sqlstore import Event, Session, SQLiteStore, ToolCallRecord
from sqlstore.errors import StoreBusy, VersionConflict

from .helpers import child_env, integrity

CHILD = Path(__file__).resolve().parent / "primitives_child.py"
FULL_ERRORS = ("StoreFull", "StoreIOError")
GROUP_THREADS = 8
GROUP_ROUNDS = 12


def _child(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(CHILD), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
    )


def test_busy_lock_of_another_process_fails_the_batch_whole(tmp_path: Path) -> None:
    """While another process holds BEGIN IMMEDIATE, append_events and apply raise StoreBusy."""
    db = tmp_path / "busy.db"
    with SQLiteStore(db) as setup:
        version = setup.sessions.save(Session.new("busy", title="before"))
        setup.events.append_event("busy", Event("note", text="kept"))
    holder = _child("lock", str(db))
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with SQLiteStore(db, busy_timeout_ms=200) as store:
            with pytest.raises(StoreBusy) as caught:
                store.events.append_events("busy", [Event("note", text="lost")] * 3)
            assert caught.value.hint
            with pytest.raises(StoreBusy):
                store.apply(
                    "busy",
                    snapshot=Session.new("busy", title="lost"),
                    events=[Event("note", text="lost")],
                    audit=[ToolCallRecord("busy", call_id="lost")],
                )
            assert holder.stdin is not None
            holder.stdin.write("go\n")
            holder.stdin.flush()
            assert holder.stdout.readline().strip() == "released"
            assert [e.text for e in store.events.read("busy")] == ["kept"]
            assert store.audit.list("busy") == []
            assert store.sessions.load("busy").title == "before"
            # The lock is free again: the same unit now commits whole.
            applied = store.apply("busy", events=[Event("note", text="after")])
            assert applied.version > version
            assert [e.text for e in store.events.read("busy")] == ["kept", "after"]
    finally:
        holder.kill()
        holder.communicate(timeout=30)


def test_full_disk_refuses_a_unit_whole_and_keeps_every_acked_one(tmp_path: Path) -> None:
    """Under RLIMIT_FSIZE the refused apply leaves nothing; every acknowledged one is whole."""
    db = tmp_path / "full.db"
    with SQLiteStore(db) as setup:
        setup.sessions.save(Session.new("full", title="seed"))
    child = _child("fill", str(db), "300000")
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    kind, message, hint = result["error"]
    assert kind in FULL_ERRORS and hint and str(db) in message
    assert result["late"] in FULL_ERRORS
    acked = result["acked"]
    assert acked > 0, "the limit was hit before any unit committed"
    assert integrity(db) == ["ok"]
    with SQLiteStore(db) as store:
        batches = [e.data["batch"] for e in store.events.read("full")]
        assert batches == [b for b in range(acked) for _ in range(8)]
        assert [r.call_id for r in store.audit.list("full")] == [f"c{b}" for b in range(acked)]
        assert store.sessions.load("full").title == f"batch-{acked - 1}"


def test_conflicting_unit_in_a_group_commit_fails_alone(tmp_path: Path) -> None:
    """Stale applies racing with batch appends fail alone; every other unit commits whole."""
    with SQLiteStore(tmp_path / "group.db") as store:
        stale = store.sessions.save(Session.new("contended"))
        store.sessions.save(Session.new("contended", title="current"))
        errors: list[str] = []
        conflicts: list[int] = []
        barrier = threading.Barrier(GROUP_THREADS)

        def work(slot: int) -> None:
            try:
                barrier.wait(30)
                for index in range(GROUP_ROUNDS):
                    if slot % 2:
                        try:
                            store.apply(
                                "contended",
                                snapshot=Session.new("contended", title=f"lost-{slot}"),
                                events=[Event("lost", seq=index)],
                                audit=[ToolCallRecord("contended", call_id="lost")],
                                expected_version=stale,
                            )
                        except VersionConflict:
                            conflicts.append(slot)
                    else:
                        batch = [Event("ok", seq=index, data={"slot": slot})] * 4
                        store.events.append_events(f"own-{slot}", batch)
            except Exception as exc:  # collected and asserted below
                errors.append(repr(exc))

        threads = [threading.Thread(target=work, args=(k,)) for k in range(GROUP_THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert errors == []
        assert len(conflicts) == GROUP_THREADS // 2 * GROUP_ROUNDS
        assert list(store.events.read("contended")) == []
        assert store.audit.list("contended") == []
        assert store.sessions.load("contended").title == "current"
        for slot in range(0, GROUP_THREADS, 2):
            seqs = [e.seq for e in store.events.read(f"own-{slot}")]
            assert seqs == [i for i in range(GROUP_ROUNDS) for _ in range(4)]
