"""Crash durability: SIGKILL a writing process at random moments and audit what survived.

A child appends events (and, in the mixed variant, saves snapshots and records
audit rows) from several threads and prints every call's result only after the
call has returned. After each kill every acknowledged record must be present
exactly once and in order, the file must pass ``PRAGMA integrity_check``, and the
store must open and accept writes again. The same file is reused across kills, so
recovery from one crash is what the next child starts from.
"""

from __future__ import annotations

import base64
import json
import os
import random
import signal
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from sqlstore import Event, MemoryStore, Session, SQLiteStore, ToolCallRecord, snapshot
from sqlstore.errors import LeaseHeld
from sqlstore.migrate.job import run_migration

from .child import CHURN_AUDITS, CHURN_EVENTS
from .helpers import REPO, integrity, spawn

pytestmark = pytest.mark.slow

KILL_DELAY_MAX_S = 0.35
"""Longest random wait between the child's READY line and SIGKILL."""

CHURN_KILL_DELAY_S = (0.1, 1.0)
"""Kill window for the churn writer, whose steps (16 fsynced writes each) are slow."""


@dataclass
class Acks:
    """What a killed child acknowledged, by thread."""

    events: dict[int, list[tuple[int, str]]] = field(default_factory=dict)
    snapshots: dict[int, list[int]] = field(default_factory=dict)
    audits: dict[int, list[int]] = field(default_factory=dict)
    built: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    total: int = 0


def _cursor_position(cursor: str) -> tuple[str, int]:
    doc = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    return str(doc["g"]), int(doc["p"])


def _run_and_kill(db: Path, mode: str, threads: int, durability: str, rng: random.Random) -> Acks:
    proc = spawn("writer", str(db), mode, str(threads), durability)
    lines: list[str] = []
    ready = threading.Event()
    started = threading.Event()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if not line.endswith("\n"):
                break  # a torn line: the call had returned but its acknowledgement did not
            lines.append(line)
            if line == "START\n":
                started.set()
            elif line == "READY\n":
                ready.set()

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    fresh = not db.exists()
    if fresh:
        # Kill the very first child while it may still be creating the file and schema.
        assert started.wait(60), "writer never started"
        time.sleep(rng.uniform(0.0, 0.08))
    else:
        assert ready.wait(60), "writer never became ready"
        low, high = CHURN_KILL_DELAY_S if mode == "churn" else (0.0, KILL_DELAY_MAX_S)
        time.sleep(rng.uniform(low, high))
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    reader.join(30)
    assert proc.stdout is not None and proc.stderr is not None
    errors = proc.stderr.read()
    proc.stdout.close()
    proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL, errors
    acks = Acks()
    for line in lines:
        parts = line.split()
        if parts[0] == "E":
            acks.events.setdefault(int(parts[1]), []).append((int(parts[2]), parts[3]))
        elif parts[0] == "S":
            acks.snapshots.setdefault(int(parts[1]), []).append(int(parts[2]))
        elif parts[0] == "A":
            acks.audits.setdefault(int(parts[1]), []).append(int(parts[2]))
        elif parts[0] == "C":
            acks.built.append(parts[1])
        elif parts[0] == "D":
            acks.deleted.append(parts[1])
        else:
            continue
        acks.total += 1
    return acks


def _audit_after_kill(db: Path, acks: Acks, threads: int) -> int:
    """Check every acknowledged record; append one more event per log; return records seen."""
    assert integrity(db) == ["ok"]
    seen = 0
    with SQLiteStore(db) as store:
        for index in range(threads):
            sid = f"w{index}"
            records = list(store.events.read_after(sid))
            seqs = [r.event.seq for r in records if r.event is not None]
            # Exactly once and in order: the log is seq 0..n-1 with no hole and no repeat.
            assert seqs == list(range(len(seqs))), f"{sid}: log is not 0..n-1: {seqs[:50]}"
            for seq, cursor in acks.events.get(index, []):
                assert seq < len(seqs), f"{sid}: acknowledged event {seq} was lost"
                generation, position = _cursor_position(cursor)
                assert position == seq + 1
                assert records[seq].cursor == cursor, "an acknowledged cursor changed meaning"
                assert generation == _cursor_position(records[0].cursor)[0]
            if acks.events.get(index):
                last_seq, last_cursor = acks.events[index][-1]
                rest = [r.event.seq for r in store.events.read_after(sid, last_cursor) if r.event]
                assert rest == list(range(last_seq + 1, len(seqs)))
            calls = [int(rec.call_id) for rec in store.audit.list(sid)]
            assert calls == list(range(len(calls))), f"{sid}: audit rows not 0..n-1: {calls}"
            for n in acks.audits.get(index, []):
                assert n < len(calls), f"{sid}: acknowledged audit row {n} was lost"
            if acks.snapshots.get(index):
                stored = int(store.sessions.load(sid).labels["n"])
                assert stored >= max(acks.snapshots[index]), f"{sid}: acknowledged save lost"
            seen += len(seqs) + len(calls)
            # The store opens and writes normally after the crash.
            cursor = store.events.append_event(sid, Event("tick", seq=len(seqs), text="parent"))
            assert _cursor_position(cursor)[1] == len(seqs) + 1
    assert integrity(db) == ["ok"]
    return seen


def _audit_churn_after_kill(db: Path, acks: Acks, built: set[str]) -> int:
    """Every session is whole or gone: a delete never leaves part of a session behind."""
    assert integrity(db) == ["ok"]
    built.update(acks.built)
    with SQLiteStore(db) as store:
        present = {s.id for s in store.sessions.list()}
        for sid in acks.deleted:
            assert sid not in present, f"{sid} came back after an acknowledged delete"
            assert list(store.events.read(sid)) == [], f"{sid}: events survived its delete"
            assert store.audit.list(sid) == [], f"{sid}: audit rows survived its delete"
        for sid in built:
            events = [e.seq for e in store.events.read(sid)]
            calls = [r.call_id for r in store.audit.list(sid)]
            if sid in present:
                assert events == list(range(CHURN_EVENTS)), f"{sid}: partial log {events}"
                assert calls == [str(c) for c in range(CHURN_AUDITS)], f"{sid}: partial audit"
            else:
                assert events == [] and calls == [], f"{sid}: half-deleted ({events}, {calls})"
        store.sessions.save(Session.new("after-crash"))
        store.sessions.delete("after-crash")
        return len(present)


@pytest.mark.parametrize(
    ("mode", "threads", "durability", "kills"),
    [
        ("events", 2, "full", 8),
        ("events", 1, "normal", 6),
        ("mixed", 3, "full", 8),
        ("churn", 2, "full", 6),
    ],
)
def test_sigkill_keeps_every_acknowledged_record(
    tmp_path: Path, mode: str, threads: int, durability: str, kills: int
) -> None:
    """After each SIGKILL every acknowledged record is there once, in order; the file is sound."""
    seed = int.from_bytes(os.urandom(4), "big")
    rng = random.Random(seed)
    db = tmp_path / "crash" / "store.db"
    db.parent.mkdir()
    acknowledged = 0
    seen = 0
    built: set[str] = set()
    for round_no in range(kills):
        acks = _run_and_kill(db, mode, threads, durability, rng)
        acknowledged += acks.total
        if not db.exists():
            continue  # killed before the file existed: nothing was acknowledged
        try:
            if mode == "churn":
                seen = _audit_churn_after_kill(db, acks, built)
            else:
                seen = _audit_after_kill(db, acks, threads)
        except AssertionError as exc:
            raise AssertionError(f"seed {seed}, kill {round_no + 1}: {exc}") from exc
    assert acknowledged > 0, f"seed {seed}: the writers never acknowledged anything"
    print(f"crash[{mode},{threads},{durability}]: {kills} kills, {acknowledged} acked, {seen} kept")


def test_follower_in_another_process_sees_every_record_across_writer_crashes(
    tmp_path: Path,
) -> None:
    """A follower sees each committed record once, in order, while writers are killed."""
    seed = int.from_bytes(os.urandom(4), "big")
    rng = random.Random(seed)
    db = tmp_path / "follow.db"
    with SQLiteStore(db) as store:
        stop = threading.Event()
        seen: list[str] = []
        errors: list[BaseException] = []

        def follow() -> None:
            try:
                for record in store.events.read_after("w0", follow=True, stop=stop):
                    seen.append(record.cursor)
            except BaseException as exc:  # reported by the assertion below
                errors.append(exc)

        follower = threading.Thread(target=follow)
        follower.start()
        acked: list[str] = []
        for _ in range(3):
            acks = _run_and_kill(db, "events", 1, "full", rng)
            acked += [cursor for _, cursor in acks.events.get(0, [])]
        final = [record.cursor for record in store.events.read_after("w0")]
        deadline = time.monotonic() + 60
        while len(seen) < len(final) and time.monotonic() < deadline and follower.is_alive():
            time.sleep(0.01)
        stop.set()
        follower.join(30)
    assert errors == [], f"seed {seed}: the follower failed: {errors}"
    assert seen == final, f"seed {seed}: the follower's records differ from the log"
    assert set(acked) <= set(final)
    assert acked, f"seed {seed}: the writers acknowledged nothing"


MIGRATE_RUNS = 400
"""Run logs in the source directory of the interrupted-import test."""


def test_import_killed_repeatedly_then_resumed_imports_each_item_once(tmp_path: Path) -> None:
    """A migrate killed at random moments and resumed ends like one clean import."""
    example = (REPO / "examples" / "runlogs" / "20261128-090000.jsonl").read_text()
    source = tmp_path / "runlogs"
    source.mkdir()
    for i in range(MIGRATE_RUNS):
        sid = f"run-{i:04d}"
        (source / f"{sid}.jsonl").write_text(example.replace("20261128-090000", sid))
    seed = int.from_bytes(os.urandom(4), "big")
    rng = random.Random(seed)
    db = tmp_path / "imported.db"
    kills = 0
    progress: list[int] = []
    for _ in range(4):
        proc = spawn("migrate", str(db), str(source))
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.readline() == "START\n"
        done = progress[-1] if progress else 0
        target = rng.randrange(min(done + 1, MIGRATE_RUNS - 1), MIGRATE_RUNS)
        for line in proc.stdout:  # kill just after the target item's progress line
            parts = line.split()
            if parts[0] == "DONE" or (parts[0] == "P" and int(parts[1]) >= target):
                break
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        kills += proc.returncode == -signal.SIGKILL
        proc.stdout.close()
        proc.stderr.close()
        if db.exists():
            assert integrity(db) == ["ok"]
            with SQLiteStore(db) as store:
                progress.append(len(store.sessions.list()))
    assert kills > 0, f"seed {seed}: every import finished before it could be killed"
    print(f"migrate: {kills} kills, sessions after each: {progress}")
    clean = MemoryStore()
    run_migration(clean, source)
    with SQLiteStore(db) as store:
        resumed = run_migration(store, source)
        assert resumed.failed == 0, resumed.items
        again = run_migration(store, source)
        assert again.imported == 0 and again.failed == 0
        assert sorted(s.id for s in store.sessions.list()) == sorted(
            s.id for s in clean.sessions.list()
        )
        for stored in clean.sessions.list():
            sid = stored.id
            expected = [(r.kind, r.event, r.gap_reason) for r in clean.events.read_after(sid)]
            got = [(r.kind, r.event, r.gap_reason) for r in store.events.read_after(sid)]
            assert got == expected, f"seed {seed}: {sid} log differs after resume"
            assert store.audit.list(sid) == clean.audit.list(sid), f"{sid}: audit differs"
            assert snapshot.to_json(store.sessions.load(sid)) == snapshot.to_json(
                clean.sessions.load(sid)
            ), f"{sid}: snapshot differs"
    assert integrity(db) == ["ok"]


def _store_state(db: Path) -> dict[str, tuple[int, int, int]]:
    with SQLiteStore(db, readonly=True) as store:
        return {
            s.id: (
                len(list(store.events.read(s.id))),
                len(store.audit.list(s.id)),
                len(store.sessions.load(s.id).messages),
            )
            for s in store.sessions.list()
        }


def test_vacuum_killed_midway_leaves_the_store_intact(tmp_path: Path) -> None:
    """SIGKILL during VACUUM or incremental_vacuum never damages or changes the data."""
    seed = int.from_bytes(os.urandom(4), "big")
    rng = random.Random(seed)
    db = tmp_path / "vacuum.db"
    with SQLiteStore(db, durability="normal") as store:
        for i in range(400):
            sid = f"v{i}"
            store.sessions.create(Session.new(sid, title="t" * 500))
            for seq in range(3):
                store.events.append_event(sid, Event("e", seq=seq, text="p" * 4_000))
            store.audit.record(ToolCallRecord(session_id=sid, call_id="c", args="a" * 1_000))
        for i in range(0, 400, 3):
            store.sessions.delete(f"v{i}")
    expected = _store_state(db)
    vacuums = 0
    for _ in range(4):
        proc = spawn("vacuumer", str(db))
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.readline() == "READY\n"
        time.sleep(rng.uniform(0.0, 0.4))
        proc.send_signal(signal.SIGKILL)
        out = proc.stdout.read()
        proc.wait(30)
        proc.stdout.close()
        proc.stderr.close()
        vacuums += out.count("V ")
        assert integrity(db) == ["ok"], f"seed {seed}"
        assert _store_state(db) == expected, f"seed {seed}: data changed by an interrupted vacuum"
    with SQLiteStore(db) as store:
        store.sessions.save(Session.new("after"))
    print(f"vacuum: 4 kills, {vacuums} vacuums completed")


def test_lease_of_a_killed_holder_blocks_until_expiry_then_fences(tmp_path: Path) -> None:
    """A killed holder's lease stays held until it expires; the next owner gets a larger token."""
    db = tmp_path / "lease.db"
    SQLiteStore(db).close()
    proc = spawn("leaser", str(db), "job", "1.5")
    assert proc.stdout is not None and proc.stderr is not None
    line = proc.stdout.readline().split()
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    proc.stdout.close()
    proc.stderr.close()
    assert line[0] == "LEASE", line
    token, expires = int(line[1]), datetime.fromisoformat(line[2])
    with SQLiteStore(db) as store:
        if datetime.now(UTC) < expires - timedelta(milliseconds=200):
            assert "job" in store.leases.held()
            with pytest.raises(LeaseHeld):
                store.leases.acquire("job", "successor", timedelta(seconds=30))
        while datetime.now(UTC) <= expires:
            time.sleep(0.05)
        lease = store.leases.acquire("job", "successor", timedelta(seconds=30))
        assert lease.token == token + 1
        assert store.leases.held() == {"job"}
