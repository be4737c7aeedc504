"""A sweeper killed with ``kill -9`` keeps its lease until it lapses (issue 20, item 15).

The installed console script runs ``sqlstore retention daemon`` on a store with
thousands of stale sessions and is killed mid-sweep. Until the lease expires,
``sqlstore prune`` must exit 1 naming who holds the sweeper lease (host and pid),
since when and until when, and how to take over; ``--take-over`` then sweeps at
once, and ``retention run`` (exit 0 for cron) says the same when it skips.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import apsw
from freezegun import freeze_time

from sqlstore import Session, SQLiteStore

TIMEOUT_S = 120.0
"""Upper bound for any wait on a child process (never a timing assertion)."""

PRUNE = ["prune", "--older-than", "1d", "--kind", "main", "--acknowledge-main-deletion", "--yes"]


def _exe() -> str:
    from tests.test_cli_process import console_script

    return console_script()


def _lease_row(db: Path) -> tuple[str, int] | None:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        row = conn.execute(
            "SELECT owner, expires_at_ns FROM leases WHERE name = 'sqlstore:retention-daemon' "
            "AND owner IS NOT NULL"
        ).fetchone()
        return None if row is None else (str(row[0]), int(row[1]))
    finally:
        conn.close()


def _remaining(db: Path) -> int:
    with SQLiteStore(db, readonly=True) as store:
        return store.sessions.inventory().total


def test_prune_after_kill_9_of_the_daemon_names_the_holder_and_takes_over(tmp_path: Path) -> None:
    """After kill -9 of a sweeping daemon, prune names holder/since/until; --take-over sweeps."""
    db = tmp_path / "swept.db"
    config = tmp_path / "retention.toml"
    config.write_text(
        '[retention]\nacknowledge_main_deletion = true\n[retention.main]\nmax_age = "1d"\n',
        encoding="utf-8",
    )
    with SQLiteStore(db, durability="normal") as store, freeze_time("2025-01-01"):
        for n in range(6_000):
            store.sessions.save(Session.new(f"old{n}"))
    daemon = subprocess.Popen(
        [_exe(), "--db", str(db), "retention", "daemon", "--config", str(config), "--every", "1h"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + TIMEOUT_S
    while _lease_row(db) is None:
        assert time.monotonic() < deadline and daemon.poll() is None, "the daemon never swept"
        time.sleep(0.005)
    os.kill(daemon.pid, signal.SIGKILL)
    daemon.wait(timeout=TIMEOUT_S)
    held = _lease_row(db)
    assert held is not None, "the sweep finished before the kill: make the store bigger"
    left = _remaining(db)
    assert left > 0
    busy = subprocess.run(
        [_exe(), "--db", str(db), *PRUNE], capture_output=True, text=True, timeout=TIMEOUT_S
    )
    assert busy.returncode == 1
    error, hint = busy.stderr.splitlines()[0], busy.stderr.splitlines()[1]
    assert error.startswith("Error: ") and "nothing deleted" in error
    assert f"{socket.gethostname()}:{daemon.pid}:" in error  # who
    assert " since " in error and " until " in error  # since when, until when
    assert hint.startswith("Hint: ") and "--take-over" in hint
    assert _remaining(db) == left
    skipped = subprocess.run(
        [_exe(), "--db", str(db), "retention", "run", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert skipped.returncode == 0 and f":{daemon.pid}:" in skipped.stdout
    taken = subprocess.run(
        [_exe(), "--db", str(db), *PRUNE, "--take-over"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert taken.returncode == 0, taken.stderr
    assert _remaining(db) == 0
    assert _lease_row(db) is None  # released after the sweep
