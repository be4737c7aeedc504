"""Retention workloads under the recording VFS: sweeps plain, pinned, with appenders, via the CLI.

The setup (40 small idle sessions and 3 running ones) is written with the normal
VFS and synced before recording starts; the plan keeps the newest 25 (38 when a
reader pins the WAL, see :func:`sweep`). The ``planned`` mark lists the planned
ids; a sweep's acknowledgement lists the ids it deleted (read back right after
it returned).
"""

from __future__ import annotations

import os
import threading
from typing import Any

from lossy_vfs import Recorder
from powercut_workloads import DB, snapshot

from sqlstore import Event, Session, SQLiteStore, ToolCallRecord

SWEPT = 40
KEEP = 25
KEEP_PINNED = 38


def _sweep_setup(root: str) -> None:
    """40 small idle sessions (interleaved ids, so deletions free no whole page) + 3 running."""
    # The setup is not under test: "normal" (its close checkpoints and syncs), then os.sync.
    with SQLiteStore(os.path.join(root, DB), durability="normal") as store:
        for i in range(SWEPT):
            sid = f"s{(i * 7) % SWEPT:02d}"
            store.sessions.create(snapshot(sid, sid))
            for seq in range(2):
                store.events.append_event(sid, Event("tick", seq=seq, text=f"{sid}"))
            store.audit.record(ToolCallRecord(session_id=sid, call_id=f"a{sid}", tool="t"))
        for i in range(3):
            busy = Session.new(f"run{i}", title="running")
            busy.begin_turn()
            store.sessions.create(busy)
    os.sync()


def sweep(
    root: str, variant: str = "plain", no_final_sync: bool = False, durability: str = "full"
) -> Recorder:
    """A retention sweep: ``plain``, ``pinned`` (a reader pins the WAL), ``appenders``, ``cli``.

    ``durability`` is the caller's store's (a ``"normal"`` store is swept through itself).
    """
    import retention

    _sweep_setup(root)
    rec = Recorder(root)
    rec.install()
    if no_final_sync:
        # Control: the sweep's final fsync of the WAL does nothing.
        from sqlstore.sqlite.housekeeping import SQLiteHousekeeping

        SQLiteHousekeeping.sync = lambda self: None  # type: ignore[method-assign]
    if variant == "split":
        _split_deletions()
    path = os.path.join(root, DB)
    with rec.op("open"):
        # A pinned WAL makes the sweep's final TRUNCATE checkpoint wait out the busy
        # timeout; 1 s instead of 5 keeps the battery quick (it changes no sync).
        timeout = 1000 if variant == "pinned" else 5000
        store = SQLiteStore(path, durability=durability, busy_timeout_ms=timeout)  # type: ignore[arg-type]
    # With a pinned WAL, few deletions: they free no page, so the incremental vacuum
    # after the sweep commits nothing and only the sweep's own fsync makes them durable.
    keep = KEEP_PINNED if variant == "pinned" else KEEP
    policy = retention.Policy(main=retention.Rule(max_count=keep), acknowledge_main_deletion=True)
    chosen = retention.plan(store, policy)
    planned = [e.meta.id for e in chosen.entries]
    rec.mark("planned", ids=planned)
    stop = threading.Event()
    threads: list[threading.Thread] = []
    if variant == "appenders":
        for sid in planned[:2]:  # written after planning: the sweep must keep them
            with rec.op("append", sid=sid, seq=9, tag=f"9:late-{sid}"):
                store.events.append_event(sid, Event("late", seq=9, text=f"late-{sid}"))
        threads = [
            threading.Thread(target=_appender, args=(rec, store, f"run{i}", stop)) for i in range(2)
        ]
    pin = None
    if variant in ("pinned",):
        import apsw

        pin = apsw.Connection(path)
        pin.execute("BEGIN")
        pin.execute("SELECT count(*) FROM events").fetchall()
    for thread in threads:
        thread.start()
    if variant == "cli":
        _prune_cli(rec, path, store)
    else:
        with rec.op("sweep") as ack:
            report = retention.sweep(store, chosen)
            ack["deleted"] = _gone(store, planned)
            ack["count"] = report.deleted
    stop.set()
    for thread in threads:
        thread.join()
    if pin is not None:
        pin.execute("COMMIT")
        pin.close()
    with rec.op("append", sid="run0", seq=99, tag="99:after"):
        store.events.append_event("run0", Event("after", seq=99, text="after"))
    with rec.op("close", barrier=True):
        store.close()
    return rec


def _gone(store: SQLiteStore, ids: list[str]) -> list[str]:
    present = {s.id for s in store.sessions.list()}
    return [sid for sid in ids if sid not in present]


def _appender(rec: Recorder, store: SQLiteStore, sid: str, stop: threading.Event) -> None:
    seq = 0
    while not stop.is_set() or seq < 5:
        with rec.op("append", sid=sid, seq=seq, tag=f"{seq}:{sid}"):
            store.events.append_event(sid, Event("tick", seq=seq, text=sid))
        seq += 1


def _prune_cli(rec: Recorder, path: str, store: SQLiteStore) -> None:
    import json

    from click.testing import CliRunner

    from cli.main import cli

    args = ["--db", path, "--json", "prune", "--kind", "main", "--keep", str(KEEP)]
    args += ["--yes", "--acknowledge-main-deletion"]
    with rec.op("sweep", via="sqlstore prune") as ack:
        result = CliRunner().invoke(cli, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        planned = next(m for m in rec.trace if m[0] == "mark" and m[1] == "planned")[2]["ids"]
        ack["deleted"] = _gone(store, planned)
        ack["count"] = json.loads(result.output).get("deleted")


def _split_deletions() -> None:
    """Control: a session's events are deleted in one commit, the rest in a second."""
    from sqlstore.sqlite.sessions import SQLiteSessions

    real = SQLiteSessions.delete_many_if_unchanged

    def split(self: Any, expected: Any, **kwargs: Any) -> Any:
        ids = [meta.id for meta in expected]

        def events_first(conn: Any) -> None:
            for sid in ids:
                conn.execute("DELETE FROM events WHERE session_id = ?", (sid,))

        self._db.write(events_first)
        return real(self, expected, **kwargs)

    SQLiteSessions.delete_many_if_unchanged = split  # type: ignore[method-assign]
