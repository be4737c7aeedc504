"""Whole-inventory listings on a busy store: complete, consistent, never failing.

Another process saves (keeping each session's state) and appends to random
sessions as fast as it can while ``sqlstore ls`` (the installed console script)
and ``sessions.inventory`` list everything: every listing must hold each of the
sessions exactly once, the state filter must find exactly the failed ones, and
no listing may fail because someone writes (issue 20, item 5).
"""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from redis_server import redis_server, redis_url  # noqa: F401  (fixtures)

import sqlstore
from sqlstore import Event, Session, SQLiteStore, State
from sqlstore.ports import Store

from .child import listed_state
from .helpers import spawn

pytestmark = pytest.mark.slow

SESSIONS = 3_000
TIMEOUT_S = 120.0
"""Upper bound for a child process (never a timing assertion)."""


def _seed(store: Store) -> None:
    for index in range(SESSIONS):
        session = Session.new(f"t{index}")
        session.state = State(listed_state(index))
        store.sessions.save(session)


def _failed() -> set[str]:
    return {f"t{i}" for i in range(SESSIONS) if listed_state(i) == "failed"}


@pytest.fixture
def toucher(request: pytest.FixtureRequest) -> Iterator[None]:
    """Start a ``toucher`` child on the target named by the test's ``target`` fixture."""
    target: str = request.getfixturevalue("target")
    proc = spawn("toucher", target, str(SESSIONS))
    assert proc.stdout is not None and proc.stderr is not None
    drain = threading.Thread(target=proc.stdout.read, daemon=True)
    try:
        assert proc.stdout.readline() == "READY\n", proc.stderr.read()
        assert proc.stdout.readline().startswith("T "), "the writer is not writing"
        drain.start()  # keep the pipe drained
        yield
        assert proc.poll() is None, "the writer died while the listings ran"
    finally:
        proc.kill()
        proc.wait(timeout=TIMEOUT_S)
        if drain.is_alive():
            drain.join(timeout=TIMEOUT_S)
        proc.stdout.close()
        proc.stderr.close()


@pytest.fixture
def target(tmp_path: Path) -> str:
    """A SQLite file holding the seeded sessions."""
    db = tmp_path / "busy.db"
    with SQLiteStore(db, durability="normal") as store:
        _seed(store)
    return str(db)


def _ls(exe: str, db: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [exe, "--db", db, *args], capture_output=True, text=True, timeout=TIMEOUT_S
    )


def test_console_ls_lists_everything_while_another_process_writes(
    target: str, toucher: None
) -> None:
    """`ls --limit 0`, `ls --state failed` and `ls --json --limit 0` are complete and exit 0."""
    from tests.test_cli_process import console_script

    exe = console_script()
    for _ in range(3):
        listed = _ls(exe, target, "ls", "--json", "--limit", "0")
        assert listed.returncode == 0, listed.stderr
        ids = [row["id"] for row in json.loads(listed.stdout)]
        assert len(ids) == SESSIONS
        assert set(ids) == {f"t{i}" for i in range(SESSIONS)}
        failed = _ls(exe, target, "ls", "--json", "--state", "failed", "--limit", "0")
        assert failed.returncode == 0, failed.stderr
        assert sorted(r["id"] for r in json.loads(failed.stdout)) == sorted(_failed())
        human = _ls(exe, target, "ls", "--limit", "0")
        assert human.returncode == 0, human.stderr
        assert len(human.stdout.splitlines()) == SESSIONS + 1  # header + one line per session
        default = _ls(exe, target, "ls", "--state", "failed")
        assert default.returncode == 0, default.stderr
        assert "first 100 shown" in default.stdout


def _check_inventory(store: Store) -> None:
    for _ in range(5):
        listing = store.sessions.inventory()
        ids = [m.id for m in listing.sessions]
        assert len(ids) == SESSIONS == listing.total
        assert set(ids) == {f"t{i}" for i in range(SESSIONS)}
        assert not listing.more
        stamps = [(-m.modified_at.timestamp(), m.id) for m in listing.sessions]
        assert stamps == sorted(stamps)  # newest first
        failed = store.sessions.inventory(match=lambda m: m.state is State.FAILED)
        assert {m.id for m in failed.sessions} == _failed()
        short = store.sessions.inventory(match=lambda m: m.state is State.FAILED, limit=7)
        assert len(short.sessions) == 7 and short.more


def test_inventory_is_complete_on_sqlite_while_another_process_writes(
    target: str, toucher: None
) -> None:
    """`sessions.inventory` on SQLite holds every session once while another process writes."""
    with SQLiteStore(target) as store:
        _check_inventory(store)


class TestRedis:
    """The same listing through `sessions.inventory` on Redis, the writer in another process."""

    @pytest.fixture
    def target(self, redis_url: str) -> str:  # noqa: F811
        """A Redis prefix holding the seeded sessions."""
        with sqlstore.open(redis_url) as store:
            _seed(store)
        return redis_url

    def test_inventory_is_complete_while_another_process_writes(
        self, target: str, toucher: None
    ) -> None:
        """`sessions.inventory` on Redis holds every session once while another client writes."""
        with sqlstore.open(target) as store:
            _check_inventory(store)


def test_inventory_is_complete_in_memory_while_threads_write() -> None:
    """`sessions.inventory` of a MemoryStore holds every session once while threads write."""
    store = sqlstore.MemoryStore()
    _seed(store)
    stop = threading.Event()

    def write() -> None:
        n = 0
        while not stop.is_set():
            index = n * 7919 % SESSIONS
            store.events.append_event(f"t{index}", Event("touch"))
            session = Session.new(f"t{index}")
            session.state = State(listed_state(index))
            store.sessions.save(session)
            n += 1

    threads = [threading.Thread(target=write) for _ in range(2)]
    for thread in threads:
        thread.start()
    try:
        _check_inventory(store)
    finally:
        stop.set()
        for thread in threads:
            thread.join()
