"""Concurrency: 4 processes x 2 threads hammer create/save/append/delete on shared ids.

Every worker thread logs each call's outcome after it returns. Afterwards: no raw
error and no "database is locked" (no ``StoreBusy`` either), no acknowledged
append lost or duplicated in the surviving log generation, no two appends given
the same position, exactly one winner per contested ``create`` and per contested
lease (with token 1), and a sound file. A retention sweep racing another process's
appends never prunes a session that was written after planning, and online backups
taken under a live writer are consistent snapshots.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from freezegun import freeze_time

import retention
from sqlstore import Event, Session, SQLiteStore
from sqlstore.sqlite.maintenance import backup

from .helpers import integrity, spawn

pytestmark = pytest.mark.slow

PROCESSES = 4
HAMMER_S = 10.0


def _position(cursor: str) -> tuple[str, int]:
    doc = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    return str(doc["g"]), int(doc["p"])


def _run_workers(db: Path, out_dir: Path) -> list[dict[str, Any]]:
    procs = [
        spawn("hammer", str(db), f"p{i}", str(HAMMER_S), str(out_dir / f"p{i}.jsonl"))
        for i in range(PROCESSES)
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=HAMMER_S + 120)
        assert proc.returncode == 0, err
        assert out.endswith("DONE\n"), (out, err)
    records: list[dict[str, Any]] = []
    for i in range(PROCESSES):
        with open(out_dir / f"p{i}.jsonl", encoding="utf-8") as handle:
            records += [json.loads(line) for line in handle]
    return records


def test_processes_and_threads_hammering_shared_ids(tmp_path: Path) -> None:
    """Concurrent writers lose nothing acknowledged, duplicate nothing, and never see a lock."""
    db = tmp_path / "hammer.db"
    with SQLiteStore(db) as store:
        store.sessions.create(Session.new("h0", title="seed"))
    records = _run_workers(db, tmp_path)
    assert len(records) > 200, "the workers did too little to prove anything"

    failures = [r for r in records if not r["ok"] and r.get("error") != "SessionAlreadyExists"]
    assert failures == [], f"{len(failures)} unexpected errors, e.g. {failures[:3]}"
    assert [r for r in records if "locked" in r.get("error", "")] == []

    with SQLiteStore(db) as store:
        # Contested creates: exactly one winner per id, and the winner's snapshot is stored.
        races: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in records:
            if r["op"] == "race":
                races[r["id"]].append(r)
        contested = 0
        for sid, attempts in races.items():
            winners = [r for r in attempts if r["ok"]]
            assert len(winners) == 1, f"{sid}: {len(winners)} winners of {len(attempts)}"
            assert store.sessions.load(sid).title == winners[0]["tag"]
            assert [rec.call_id for rec in store.audit.list(sid)] == [winners[0]["tag"]]
            contested += len(attempts) > 1
        assert contested > 0, "no create was contested"

        # Contested leases: exactly one owner per name, holding token 1.
        leases: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in records:
            if r["op"] == "lease":
                leases[r["id"]].append(r)
        held = store.leases.held()
        for name, attempts in leases.items():
            owners = [r for r in attempts if r["token"] is not None]
            assert [r["token"] for r in owners] == [1], f"lease {name}: {owners}"
            assert name in held

        # Appends: unique positions per generation; the surviving log is exactly the
        # acknowledged appends of its generation, in position order, with no hole.
        appends: dict[str, list[tuple[str, int, str]]] = defaultdict(list)
        for r in records:
            if r["op"] == "append" and r["ok"]:
                generation, pos = _position(r["cursor"])
                appends[r["id"]].append((generation, pos, r["tag"]))
        for sid, acked in appends.items():
            slots = Counter((g, p) for g, p, _ in acked)
            assert max(slots.values()) == 1, f"{sid}: two appends got the same position"
            log = list(store.events.read_after(sid))
            if not log:
                continue  # the last write to this id was a delete
            generation = _position(log[0].cursor)[0]
            texts = [rec.event.text for rec in log if rec.event is not None]
            assert [_position(rec.cursor)[1] for rec in log] == list(range(1, len(log) + 1))
            expected = [tag for g, _, tag in sorted(acked) if g == generation]
            assert texts == expected, f"{sid}: surviving log differs from the acknowledged appends"

        # Saves and creates: a surviving snapshot is one some worker was told it stored.
        stored_tags: dict[str, set[str]] = defaultdict(set)
        for r in records:
            if r["op"] in ("create", "save") and r["ok"]:
                stored_tags[r["id"]].add(r["tag"])
        for meta in store.sessions.iter_meta():
            if not meta.id.startswith("race"):
                assert meta.title in stored_tags[meta.id] | {"seed"}, meta.id
    assert integrity(db) == ["ok"]
    ops = Counter(r["op"] for r in records)
    print(f"hammer: {len(records)} operations {dict(ops)}, {contested} contested creates")


PRUNE_SESSIONS = 1500


def test_prune_racing_a_writer_process_never_loses_an_acknowledged_append(tmp_path: Path) -> None:
    """A sweep racing another process's appends keeps every session written after planning."""
    db = tmp_path / "prune.db"
    start = datetime.now(UTC) - timedelta(days=10)
    first_generation: dict[str, str] = {}
    with SQLiteStore(db, durability="normal") as store:
        with freeze_time(start):
            for i in range(PRUNE_SESSIONS):
                sid = f"r{i}"
                store.sessions.create(Session.new(sid))
                first_generation[sid] = _position(store.events.append_event(sid, Event("old")))[0]
        proc = spawn("appender", str(db), str(PRUNE_SESSIONS))
        assert proc.stdout is not None
        lines: list[str] = []
        pump = threading.Thread(target=lambda: lines.extend(proc.stdout or []), daemon=True)
        pump.start()
        while len(lines) < 20 and proc.poll() is None:
            time.sleep(0.01)
        policy = retention.Policy(
            main=retention.Rule(max_age=timedelta(days=1)), acknowledge_main_deletion=True
        )
        planned = retention.plan(store, policy)
        plan_end = time.monotonic()
        report = retention.sweep(store, planned)
        time.sleep(0.2)
        proc.kill()
        proc.wait(30)
        pump.join(30)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        assert report.failed == 0, report.errors
        assert report.deleted > 0, "the sweep deleted nothing: the race was not exercised"
        present = {s.id for s in store.sessions.list()}
        late = 0
        for line in lines:
            parts = line.split()
            if len(parts) != 4 or parts[0] != "A" or not line.endswith("\n"):
                continue
            sid, started, cursor = parts[1], float(parts[2]), parts[3]
            generation, pos = _position(cursor)
            records = list(store.events.read_after(sid))
            current = _position(records[0].cursor)[0] if records else None
            if started > plan_end and generation == first_generation[sid]:
                # Committed to the planned log after planning, so before any delete of it:
                # the sweep must have seen the change and kept the session.
                late += 1
                assert sid in present, f"{sid} was pruned after an acknowledged late append"
            if generation == current:
                assert records[pos - 1].cursor == cursor, f"{sid}: acknowledged append lost"
    assert integrity(db) == ["ok"]
    print(
        f"prune race: {report.deleted} deleted, {report.changed} changed, "
        f"{late} late appends kept, {len(lines)} appends"
    )


def test_backups_taken_while_another_process_writes_are_consistent(tmp_path: Path) -> None:
    """Online backups under a live writer are sound snapshots: every log a gap-free prefix."""
    db = tmp_path / "live.db"
    with SQLiteStore(db) as store:
        store.sessions.create(Session.new("w0"))
    proc = spawn("writer", str(db), "mixed", "2", "normal")
    assert proc.stdout is not None and proc.stderr is not None
    try:
        assert proc.stdout.readline() == "START\n"
        assert proc.stdout.readline() == "READY\n"
        lines = [proc.stdout.readline() for _ in range(50)]
        assert all(line.strip() for line in lines)
        with SQLiteStore(db) as store:
            reports = []
            for n in range(3):
                reports.append(backup(store, tmp_path / f"copy{n}.db"))
                for _ in range(30):
                    proc.stdout.readline()
    finally:
        proc.kill()
        proc.wait(30)
        proc.stdout.close()
        proc.stderr.close()
    lengths = []
    for n, report in enumerate(reports):
        copy = tmp_path / f"copy{n}.db"
        assert report.check.ok, report.check.problems
        assert integrity(copy) == ["ok"]
        with SQLiteStore(copy, readonly=True) as store:
            for index in range(2):
                sid = f"w{index}"
                seqs = [e.seq for e in store.events.read(sid)]
                assert seqs == list(range(len(seqs))), f"copy{n}: {sid} is not a prefix"
                calls = [int(r.call_id) for r in store.audit.list(sid)]
                assert calls == list(range(len(calls))), f"copy{n}: {sid} audit not a prefix"
            lengths.append(len(list(store.events.read("w0"))))
    assert lengths == sorted(lengths), "later backups must not hold fewer records"
