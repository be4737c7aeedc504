"""Child processes of the reliability battery (run as ``python child.py <role> ...``).

Each role prints machine-readable lines on stdout and flushes after every line, so
the parent knows exactly which calls had returned when it killed the child.

Roles:
    writer DB MODE THREADS DURABILITY   append (save/record: "mixed"; build/delete: "churn")
    locker DB HOLD_S                    hold BEGIN IMMEDIATE for HOLD_S s (or until stdin says go)
    diskfull DB EXTRA_BYTES             write under RLIMIT_FSIZE until the store refuses
    hammer DB WORKER SECONDS OUT        2 threads of random create/save/append/delete/record
    umask DB BASE                       create a store under umask 0, print the modes
    export_umask DB BASE                export and back up under umask 0, print the modes
    probe DB                            open, read, write; print what happened as JSON
    opener DB GO_FILE                   wait for GO_FILE, then open/create the store and write
    init_full DB LIMIT_BYTES            create a new store under a tiny RLIMIT_FSIZE
    appender DB SESSIONS                append to random sessions r0..rN-1 until killed
    migrate DB SOURCE                   run a run-log import in batches of 3
    vacuumer DB                         VACUUM / incremental_vacuum in a loop until killed
    leaser DB NAME TTL_S                take a lease, print it, wait to be killed
    toucher TARGET SESSIONS             save and append to random sessions t0..tN-1 until killed
    orphaner DB ID N AT                 append N events and 1 audit row to ID, clock frozen at AT
    holdread DB                         hold a read transaction open until stdin says go
    steady DB BUSY_MS                   append until stdin closes; print every StoreBusy, the worst
    deleter DB ID STEP_ROWS PAUSE_S     delete ID in steps of STEP_ROWS rows, PAUSE_S apart
"""

from __future__ import annotations

import json
import os
import random
import resource
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import apsw

import sqlstore
from sqlstore import Event, Session, SQLiteStore, ToolCallRecord
from sqlstore.errors import LeaseHeld, SessionAlreadyExists, SessionNotFound, StoreError

_OUT_LOCK = threading.Lock()


def emit(*parts: object) -> None:
    """Print one line and flush it before returning (the parent's acknowledgement)."""
    line = " ".join(str(p) for p in parts) + "\n"
    with _OUT_LOCK:
        sys.stdout.write(line)
        sys.stdout.flush()


def _writer_thread(store: SQLiteStore, index: int, mode: str) -> None:
    sid = f"w{index}"
    seq = sum(1 for _ in store.events.read(sid))
    audit_n = len(store.audit.list(sid))
    try:
        snap_n = int(store.sessions.load(sid).labels["n"]) + 1
    except SessionNotFound:
        snap_n = 0
    step = 0
    while True:
        kind = step % 3 if mode == "mixed" else 0
        step += 1
        if kind == 0:
            cursor = store.events.append_event(sid, Event("tick", seq=seq, text="x" * 64))
            emit("E", index, seq, cursor)
            seq += 1
        elif kind == 1:
            session = Session.new(sid, title=f"snapshot {snap_n}", labels={"n": str(snap_n)})
            store.sessions.save(session)
            emit("S", index, snap_n)
            snap_n += 1
        else:
            store.audit.record(ToolCallRecord(session_id=sid, call_id=str(audit_n), tool="probe"))
            emit("A", index, audit_n)
            audit_n += 1


CHURN_EVENTS = 12
CHURN_AUDITS = 3


def _churn_thread(store: SQLiteStore, index: int) -> None:
    """Build whole sessions and delete older ones; each step acknowledged when complete.

    Ids carry the process id, so a restarted child never appends to a log that a
    killed one left half-built.
    """
    n = 0
    prefix = f"c{index}-{os.getpid()}"
    while True:
        sid = f"{prefix}-{n}"
        for seq in range(CHURN_EVENTS):
            store.events.append_event(sid, Event("tick", seq=seq, text="z" * 16_000))
        for call in range(CHURN_AUDITS):
            store.audit.record(ToolCallRecord(session_id=sid, call_id=str(call), tool="churn"))
        store.sessions.create(Session.new(sid, title="complete"))
        emit("C", sid)
        if n >= 2:
            store.sessions.delete(f"{prefix}-{n - 2}")
            emit("D", f"{prefix}-{n - 2}")
        n += 1


def writer(db: str, mode: str, threads: str, durability: str) -> None:
    """Write forever from ``threads`` threads, acknowledging every returned call."""
    emit("START")
    store = SQLiteStore(db, durability="full" if durability == "full" else "normal")
    emit("READY")
    target = _churn_thread if mode == "churn" else _writer_thread
    args = [(store, i) if mode == "churn" else (store, i, mode) for i in range(int(threads))]
    workers = [threading.Thread(target=target, args=a, daemon=True) for a in args]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


def locker(db: str, hold_s: str) -> None:
    """Hold the write lock with a raw connection, as another application would."""
    conn = apsw.Connection(db, flags=apsw.SQLITE_OPEN_READWRITE)
    conn.set_busy_timeout(10_000)
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("UPDATE store_meta SET value = value + 1000 WHERE key = 'write_seq'")
    emit("LOCKED", time.monotonic())
    if float(hold_s) > 0:
        time.sleep(float(hold_s))
    else:
        sys.stdin.readline()
    released = time.monotonic()
    conn.execute("ROLLBACK")
    emit("RELEASED", released)
    conn.close()


def diskfull(db: str, extra_bytes: str) -> None:
    """Write until RLIMIT_FSIZE stops the store; report the error and what stayed readable."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    largest = max(os.path.getsize(db + s) for s in ("", "-wal") if os.path.exists(db + s))
    resource.setrlimit(resource.RLIMIT_FSIZE, (largest + int(extra_bytes), resource.RLIM_INFINITY))
    store = SQLiteStore(db)
    acked = sum(1 for _ in store.events.read("full"))
    result: dict[str, Any] = {"errors": []}
    for _attempt in range(10_000):
        try:
            store.events.append_event("full", Event("fill", seq=acked, text="y" * 20_000))
            acked += 1
        except StoreError as exc:
            result["errors"].append([type(exc).__name__, str(exc), exc.hint])
            break
        except Exception as exc:  # the parent reports any raw error
            result["errors"].append(["RAW " + type(exc).__name__, str(exc), ""])
            break
    else:
        result["errors"].append(["NEVER_FULL", "", ""])
    big_writes: list[tuple[str, Callable[[], object]]] = [
        ("save", lambda: store.sessions.save(Session.new("full", title="z" * 400_000))),
        ("record", lambda: store.audit.record(ToolCallRecord("full", "c", args="a" * 400_000))),
    ]
    for what, call in big_writes:
        try:
            call()
            result["errors"].append([what, "succeeded", ""])
        except StoreError as exc:
            result["errors"].append([what + ":" + type(exc).__name__, str(exc), exc.hint])
    result["acked"] = acked
    result["readable"] = [e.seq for e in store.events.read("full")]
    resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    store.events.append_event("full", Event("fill", seq=len(result["readable"]), text="after"))
    result["after_raise"] = sum(1 for _ in store.events.read("full"))
    store.close()
    emit(json.dumps(result))


def _hammer_thread(store: SQLiteStore, worker: str, thread: int, deadline: float, out: Any) -> None:
    rng = random.Random(f"{worker}-{thread}")
    shared = [f"h{i}" for i in range(6)]
    count = 0
    race = 0
    while time.monotonic() < deadline:
        count += 1
        tag = f"{worker}.{thread}.{count}"
        sid = rng.choice(shared)
        op = rng.choice(("create", "save", "append", "append", "append", "delete", "race", "lease"))
        if op in ("race", "lease"):
            sid = f"race{race}"
            race += 1
        record: dict[str, Any] = {"op": op, "id": sid, "tag": tag}
        try:
            if op == "lease":
                try:
                    lease = store.leases.acquire(sid, tag, timedelta(hours=1))
                    record["token"] = lease.token
                except LeaseHeld:
                    record["token"] = None
            elif op in ("create", "race"):
                store.sessions.create(Session.new(sid, title=tag))
            elif op == "save":
                store.sessions.save(Session.new(sid, title=tag))
            elif op == "append":
                record["cursor"] = store.events.append_event(sid, Event("h", text=tag))
            elif op == "delete":
                store.sessions.delete(sid)
            if op == "race":
                store.audit.record(ToolCallRecord(session_id=sid, call_id=tag, tool="race"))
            record["ok"] = True
        except SessionAlreadyExists:
            record["ok"] = False
            record["error"] = "SessionAlreadyExists"
        except StoreError as exc:
            record["ok"] = False
            record["error"] = type(exc).__name__ + ": " + str(exc)
        except Exception as exc:  # a raw error is a finding
            record["ok"] = False
            record["error"] = "RAW " + type(exc).__name__ + ": " + str(exc)
        with _OUT_LOCK:
            out.write(json.dumps(record) + "\n")
            out.flush()


def hammer(db: str, worker: str, seconds: str, out_path: str) -> None:
    """Run two hammering threads sharing one store (group commit) until the deadline."""
    store = SQLiteStore(db)
    emit("READY")
    deadline = time.monotonic() + float(seconds)
    with open(out_path, "w", encoding="utf-8") as out:
        threads = [
            threading.Thread(target=_hammer_thread, args=(store, worker, t, deadline, out))
            for t in range(2)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    store.close()
    emit("DONE")


def opener(db: str, go_file: str) -> None:
    """Wait for ``go_file``, then open (and maybe create) the store and write to it."""
    emit("WAITING")
    deadline = time.monotonic() + 60
    while not os.path.exists(go_file) and time.monotonic() < deadline:
        time.sleep(0.001)
    try:
        with SQLiteStore(db) as store:
            store.sessions.create(Session.new(f"o{os.getpid()}"))
            store.events.append_event("shared", Event("hello", text=str(os.getpid())))
        emit("OK")
    except StoreError as exc:
        where = " | ".join(traceback.format_exception(exc)).replace("\n", " ")
        emit("ERROR", type(exc).__name__, str(exc), where)
    except Exception as exc:  # a raw error is the finding
        emit("RAW", type(exc).__name__, str(exc))


def init_full(db: str, limit_bytes: str) -> None:
    """Create a new store under a tiny RLIMIT_FSIZE; report the error class."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(limit_bytes), resource.RLIM_INFINITY))
    try:
        with SQLiteStore(db) as store:
            store.sessions.create(Session.new("x"))
        emit(json.dumps(["ok", "", ""]))
    except StoreError as exc:
        emit(json.dumps([type(exc).__name__, str(exc), exc.hint]))
    except Exception as exc:  # a raw error is the finding
        emit(json.dumps(["RAW " + type(exc).__name__, str(exc), ""]))


def appender(db: str, sessions: str) -> None:
    """Append to random sessions r0..rN-1 forever; print id, start time and cursor of each."""
    store = SQLiteStore(db)
    rng = random.Random()
    emit("READY")
    while True:
        sid = f"r{rng.randrange(int(sessions))}"
        started = time.monotonic()
        cursor = store.events.append_event(sid, Event("late", text=str(started)))
        emit("A", sid, started, cursor)


def migrate(db: str, source: str) -> None:
    """Import a run-log directory in small batches, printing progress after each item."""
    from sqlstore.migrate.job import run_migration

    emit("START")
    with SQLiteStore(db) as store:
        report = run_migration(
            store, source, batch_sessions=3, progress=lambda done, total: emit("P", done, total)
        )
    emit("DONE", report.imported, report.failed)


def vacuumer(db: str) -> None:
    """Vacuum (full, then incremental, in turn) forever, acknowledging each."""
    from sqlstore.sqlite.maintenance import vacuum

    with SQLiteStore(db) as store:
        emit("READY")
        n = 0
        while True:
            vacuum(store, incremental=n % 2 == 1)
            emit("V", n)
            n += 1


def leaser(db: str, name: str, ttl_s: str) -> None:
    """Take a lease, print its token and expiry, then wait to be killed."""
    with SQLiteStore(db) as store:
        lease = store.leases.acquire(name, f"pid{os.getpid()}", timedelta(seconds=float(ttl_s)))
        emit("LEASE", lease.token, lease.expires_at.isoformat())
        time.sleep(3600)


def listed_state(index: int) -> str:
    """Return the state the listing tests give session ``t<index>``: every tenth failed."""
    return "failed" if index % 10 == 0 else "completed"


def toucher(target: str, sessions: str) -> None:
    """Save (keeping its state) or append to random sessions t0..tN-1, as fast as it can."""
    store = sqlstore.open(target)
    rng = random.Random()
    emit("READY")
    n = 0
    while True:
        index = rng.randrange(int(sessions))
        sid = f"t{index}"
        if n % 2:
            store.events.append_event(sid, Event("touch", text=str(n)))
        else:
            session = Session.new(sid, title=f"touched {n}")
            session.state = sqlstore.State(listed_state(index))
            store.sessions.save(session)
        n += 1
        if n % 100 == 0:
            emit("T", n)


def orphaner(db: str, session_id: str, count: str, at: str) -> None:
    """Append ``count`` events and one audit row to ``session_id`` with the clock at ``at``."""
    from freezegun import freeze_time

    with freeze_time(at), SQLiteStore(db) as store:
        for n in range(int(count)):
            store.events.append_event(session_id, Event("late", text=str(n)))
        store.audit.record(ToolCallRecord(session_id=session_id, call_id="c", tool="Bash"))
    emit("DONE")


def holdread(db: str) -> None:
    """Open a read transaction on a raw connection and keep it until a line arrives on stdin."""
    conn = apsw.Connection(db, flags=apsw.SQLITE_OPEN_READONLY)
    conn.execute("BEGIN")
    count = conn.execute("SELECT count(*) FROM events").fetchone()
    emit("READING", count[0] if count else 0)
    sys.stdin.readline()
    conn.execute("COMMIT")
    conn.close()
    emit("RELEASED")


def steady(db: str, busy_ms: str) -> None:
    """Append to one session until stdin closes; print each StoreBusy, then the worst latency."""
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    worst = 0.0
    n = 0
    with SQLiteStore(db, busy_timeout_ms=int(busy_ms)) as store:
        emit("READY")
        while not stop.is_set():
            started = time.monotonic()
            try:
                store.events.append_event("steady", Event("tick", text=str(n)))
            except StoreError as exc:
                emit("BUSY", type(exc).__name__, str(exc).replace("\n", " "))
            worst = max(worst, time.monotonic() - started)
            n += 1
            if n == 50:
                emit("FLOWING")
    emit("DONE", n, f"{worst:.6f}")


def deleter(db: str, session_id: str, step_rows: str, pause_s: str) -> None:
    """Delete ``session_id`` in bounded steps of ``step_rows`` rows, ``pause_s`` apart."""
    from sqlstore.sqlite import deletion, rows

    rows.DELETE_STEP_ROWS = int(step_rows)
    deletion.DELETE_STEP_PAUSE_S = float(pause_s)
    with SQLiteStore(db) as store:
        emit("START")
        store.sessions.delete(session_id)
    emit("DONE")


def umask(db: str, base: str) -> None:
    """Create a store (and its directories) under umask 0; print every mode below ``base``."""
    os.umask(0)
    with SQLiteStore(db) as store:
        store.sessions.create(Session.new("u"))
        store.events.append_event("u", Event("e"))
        modes = {}
        for root, dirs, files in os.walk(base):
            for name in dirs + files:
                full = os.path.join(root, name)
                modes[os.path.relpath(full, base)] = os.stat(full).st_mode & 0o777
    emit(json.dumps(modes))


def export_umask(db: str, base: str) -> None:
    """Under umask 0, export (both formats) and back up into new nested directories."""
    from click.testing import CliRunner

    from cli.main import cli

    os.umask(0)
    with SQLiteStore(db) as store:
        store.sessions.save(Session.new("u"))
        store.events.append_event("u", Event("message", text="hi"))
    runs = {
        "runlog": ["export", "--format", "runlog", "--out", f"{base}/r1/r2/out", "--all"],
        "mecatl": ["export", "--format", "mecatl", "--out", f"{base}/m1/m2/out", "--all"],
        "backup": ["backup", f"{base}/b1/b2/copy.db"],
    }
    codes = {}
    for name, args in runs.items():
        codes[name] = CliRunner().invoke(cli, ["--db", db, *args]).exit_code
    modes = {}
    for root, dirs, files in os.walk(base):
        for entry in dirs + files:
            full = os.path.join(root, entry)
            modes[os.path.relpath(full, base)] = os.stat(full).st_mode & 0o777
    emit(json.dumps({"codes": codes, "modes": modes}))


def probe(db: str) -> None:
    """Open, read and write the store; print each step's outcome class as JSON."""
    result: dict[str, Any] = {"uid": os.geteuid()}

    def outcome(fn: Any) -> str:
        try:
            fn()
            return "ok"
        except StoreError as exc:
            result.setdefault("hints", []).append(exc.hint)
            return type(exc).__name__
        except Exception as exc:  # a raw error is the finding
            return "RAW " + type(exc).__name__ + ": " + str(exc)

    store: list[SQLiteStore] = []
    result["open"] = outcome(lambda: store.append(SQLiteStore(db)))
    if store:
        s = store[0]
        result["read"] = outcome(lambda: [s.sessions.load(m.id) for m in s.sessions.list()])
        result["write"] = outcome(lambda: s.sessions.save(Session.new("probe-write")))
        result["append"] = outcome(lambda: s.events.append_event("probe-write", Event("e")))
        s.close()
    emit(json.dumps(result))


ROLES: dict[str, Callable[..., None]] = {
    "writer": writer,
    "locker": locker,
    "diskfull": diskfull,
    "hammer": hammer,
    "umask": umask,
    "export_umask": export_umask,
    "opener": opener,
    "init_full": init_full,
    "appender": appender,
    "migrate": migrate,
    "vacuumer": vacuumer,
    "leaser": leaser,
    "probe": probe,
    "toucher": toucher,
    "orphaner": orphaner,
    "holdread": holdread,
    "steady": steady,
    "deleter": deleter,
}

if __name__ == "__main__":
    assert sqlstore.SQLiteStore is SQLiteStore
    ROLES[sys.argv[1]](*sys.argv[2:])
