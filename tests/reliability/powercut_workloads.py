"""Workloads run under the recording VFS (started by ``powercut_child.py``).

Each scenario prepares its starting files (if any) with the normal VFS, then
starts a :class:`~lossy_vfs.Recorder` on DIR, runs the library calls under test
bracketed by ``rec.op`` and writes ``DIR/trace.pkl``. Sequential scenarios add a
``state`` mark (the digest of :func:`powercut_state.dump`) after every
acknowledged call. The ``control-*`` scenarios break one durability rule on
purpose; the battery must report them.
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from lossy_vfs import Recorder
from powercut_state import dump

from sqlstore import Event, Session, SQLiteStore, ToolCallRecord
from sqlstore.errors import StoreError

DB = "store.db"


def noise(n: int, seed: str) -> str:
    """``n`` characters of incompressible-looking text (large snapshots, big events)."""
    out = []
    block = seed.encode()
    while sum(map(len, out)) < n:
        block = hashlib.sha256(block).digest()
        out.append(block.hex())
    return "".join(out)[:n]


def snapshot(sid: str, title: str, size: int = 0) -> Session:
    """A session whose snapshot carries ``size`` characters of prompt text."""
    session = Session.new(sid, title=title)
    if size:
        session.begin_turn()
        session.record_user_prompt(noise(size, title))
    return session


def state(rec: Recorder, store: SQLiteStore | None, last: str = "") -> str:
    """Mark the store's logical state after an acknowledged call (``last`` when it is closed)."""
    digest = last if store is None else str(store.db.read(dump)["digest"])
    rec.mark("state", digest=digest)
    return digest


# -- sequential ------------------------------------------------------------------


def mixed(root: str, durability: str = "full", sync_off: bool = False) -> Recorder:
    """Appends, large snapshot saves, creates, audit rows, a close and reopen."""
    rec = Recorder(root)
    rec.install()
    path = os.path.join(root, DB)
    with rec.op("open"):
        store = SQLiteStore(path, durability=durability)  # type: ignore[arg-type]
    if sync_off:
        store.db._writer.execute("PRAGMA synchronous=OFF")
    last = state(rec, store)
    for step in range(36):
        sid = f"m{step % 3}"
        kind = step % 6
        if step == 20:
            with rec.op("close", barrier=True):
                store.close()
            state(rec, None, last)
            with rec.op("open"):
                store = SQLiteStore(path, durability=durability)  # type: ignore[arg-type]
            if sync_off:
                store.db._writer.execute("PRAGMA synchronous=OFF")
            state(rec, store)
        if kind in (0, 3, 5):
            with rec.op("append", sid=sid, seq=step):
                store.events.append_event(sid, Event("tick", seq=step, text=f"m{step}"))
        elif kind == 1:
            with rec.op("save", sid=sid):
                store.sessions.save(snapshot(sid, f"{sid}-{step}", 40_000 + 3_000 * step))
        elif kind == 2:
            with rec.op("create", sid=f"new{step}"):
                store.sessions.create(snapshot(f"new{step}", f"created {step}"))
        else:
            with rec.op("record", sid=sid):
                store.audit.record(ToolCallRecord(session_id=sid, call_id=f"c{step}", tool="t"))
        last = state(rec, store)
    with rec.op("close", barrier=True):
        store.close()
    return rec


def vacuum(root: str) -> Recorder:
    """Full and incremental vacuums, with writes between, of a file with deleted sessions."""
    from sqlstore.sqlite.maintenance import vacuum as run_vacuum

    path = os.path.join(root, DB)
    with SQLiteStore(path, durability="normal") as store:  # setup, not under test
        for i in range(24):
            sid = f"v{i:02d}"
            store.sessions.create(snapshot(sid, sid, 3_000))
            store.events.append_event(sid, Event("big", seq=i, text=noise(6_000, sid)))
        for i in range(0, 24, 3):
            store.sessions.delete(f"v{i:02d}")
    os.sync()
    rec = Recorder(root)
    rec.install()
    with rec.op("open"):
        store = SQLiteStore(path)
    state(rec, store)
    for n, incremental in enumerate((False, True, False)):
        with rec.op("vacuum", incremental=incremental):
            run_vacuum(store, incremental=incremental)
        state(rec, store)
        with rec.op("append", sid="v01"):
            store.events.append_event("v01", Event("after", seq=n, text=f"after{n}"))
        state(rec, store)
        with rec.op("delete", sid=f"v{3 * n + 1:02d}"):
            store.sessions.delete(f"v{3 * n + 1:02d}")
        state(rec, store)
    with rec.op("close", barrier=True):
        store.close()
    return rec


# -- group commit ----------------------------------------------------------------

THREADS = 4
APPENDS = 24
RACES = 5


def group(root: str, early_wake: bool = False) -> Recorder:
    """Threads of one store append to their own logs and race ``create`` on shared ids."""
    rec = Recorder(root)
    rec.install()
    if early_wake:
        _break_group_commit()
    with rec.op("open"):
        store = SQLiteStore(os.path.join(root, DB))
    barrier = threading.Barrier(THREADS)

    def worker(index: int) -> None:
        sid = f"g{index}"
        for seq in range(APPENDS):
            with rec.op("append", sid=sid, seq=seq, tag=f"{seq}:t{index}"):
                store.events.append_event(sid, Event("tick", seq=seq, text=f"t{index}"))
            if seq % (APPENDS // RACES) == 0 and seq // (APPENDS // RACES) < RACES:
                race = f"race{seq // (APPENDS // RACES)}"
                barrier.wait()
                try:
                    with rec.op("create", sid=race, title=f"by {index}"):
                        store.sessions.create(snapshot(race, f"by {index}", 2_000))
                except StoreError:
                    pass

    workers = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    with rec.op("close", barrier=True):
        store.close()
    return rec


def _break_group_commit() -> None:
    """Control: queued callers are woken (and return) before their batch's COMMIT."""
    import time

    from sqlstore.sqlite import database

    real = database.Database._transaction

    def early(self: Any, ops: Any, *, isolate: bool) -> bool:
        for op in ops:
            if isinstance(op, database._Op):
                op.finished = True
                op.wake.set()
        time.sleep(0.002)  # the woken callers acknowledge before the commit below
        return real(self, ops, isolate=isolate)  # type: ignore[no-any-return]

    database.Database._transaction = early  # type: ignore[method-assign]


# -- migrate ---------------------------------------------------------------------


def make_runs(folder: str, count: int = 12) -> None:
    """Write ``count`` openzot run logs (a prompt, two tool calls, a result) into ``folder``."""
    import json

    os.makedirs(folder, exist_ok=True)
    at = "2026-12-01T00:00:00Z"
    for index in range(count):
        run_id = f"20261201-{index:06d}"
        lines: list[dict[str, Any]] = [
            {"kind": "meta", "at": at, "meta": {"id": run_id, "task": f"task {index}"}},
            {"kind": "message", "at": at, "message": {"type": "user", "text": noise(600, run_id)}},
        ]
        for call in range(2):
            request = {"kind": "request", "id": f"c{call}", "name": "bash", "arguments": "{}"}
            response = {**request, "kind": "response", "result": "ok" * 40, "failure": ""}
            response.pop("arguments")
            for activity in (request, response):
                message = {"type": "activity", "text": "", "activity": activity}
                lines.append({"kind": "message", "at": at, "message": message})
            lines.append({"kind": "event", "at": at, "event": {"kind": "tool", "tool": "bash"}})
        lines.append({"kind": "result", "at": at, "result": {"reason": "done", "code": 0}})
        with open(os.path.join(folder, f"{run_id}.jsonl"), "w", encoding="utf-8") as handle:
            handle.write("".join(json.dumps(line) + "\n" for line in lines))


def migrate(root: str, source: str) -> Recorder:
    """``run_migration`` of a run-log directory in batches of 3 (SOURCE is made by the test)."""
    from sqlstore.migrate import run_migration

    rec = Recorder(root)
    rec.install()
    with rec.op("open"):
        store = SQLiteStore(os.path.join(root, DB))
    with rec.op("migrate", source=source) as ack:
        report = run_migration(store, source, batch_sessions=3)
        ack["imported"] = report.imported
    rec.mark("content", digest=store.db.read(lambda c: dump(c, content_only=True))["digest"])
    with rec.op("close", barrier=True):
        store.close()
    return rec


# -- batch writes ----------------------------------------------------------------


def _unit(rec: Recorder, store: SQLiteStore, sid: str, step: int) -> None:
    """One batch write: ``append_events`` of 6 (even steps) or an ``apply`` unit (odd)."""
    if step % 2 == 0:
        events = [Event("tick", seq=10 * step + k, text=f"b{step}.{k}") for k in range(6)]
        tags = [f"{e.seq}:{e.text}" for e in events]
        with rec.op("append_events", sid=sid, tags=tags):
            store.events.append_events(sid, events)
        return
    events = [Event("unit", seq=10 * step + k, text=f"u{step}.{k}") for k in range(4)]
    audit = [
        ToolCallRecord(session_id=sid, call_id=f"{sid}.{step}.{k}", tool="t") for k in range(2)
    ]
    tags = [f"{e.seq}:{e.text}" for e in events]
    calls = [a.call_id for a in audit]
    with rec.op("apply", sid=sid, tags=tags, audit=calls):
        big = snapshot(sid, f"{sid}-{step}", 20_000 + 2_000 * step)
        store.apply(sid, snapshot=big, events=events, audit=audit)


def batches(root: str, split: bool = False) -> Recorder:
    """One thread alternates ``append_events`` batches and ``store.apply`` units on two sessions.

    With ``split`` (a control) ``append_events`` commits its batch in two halves.
    """
    rec = Recorder(root)
    rec.install()
    if split:
        _split_batches()
    with rec.op("open"):
        store = SQLiteStore(os.path.join(root, DB))
    state(rec, store)
    for step in range(16):
        _unit(rec, store, f"b{step % 2}", step)
        state(rec, store)
    with rec.op("close", barrier=True):
        store.close()
    return rec


def batch_threads(root: str) -> Recorder:
    """Three threads of one store write batches to their own sessions (shared commits)."""
    rec = Recorder(root)
    rec.install()
    with rec.op("open"):
        store = SQLiteStore(os.path.join(root, DB))

    def worker(index: int) -> None:
        for step in range(10):
            _unit(rec, store, f"t{index}", step)

    workers = [threading.Thread(target=worker, args=(i,)) for i in range(3)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    with rec.op("close", barrier=True):
        store.close()
    return rec


def _split_batches() -> None:
    """Control: ``append_events`` commits the first half of a batch, then the rest."""
    from sqlstore.sqlite.events import SQLiteEvents

    real = SQLiteEvents.append_events

    def halves(self: Any, session_id: str, events: Any) -> list[str]:
        half = len(events) // 2
        return real(self, session_id, events[:half]) + real(self, session_id, events[half:])

    SQLiteEvents.append_events = halves  # type: ignore[method-assign]
