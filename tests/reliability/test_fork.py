"""A store carried across ``fork()`` (SQLite connections must not be used in the child).

Real forks: the child reports what happened over a pipe and leaves with
``os._exit`` (no pytest teardown in the child; an alarm kills a child that
hangs, so a regression fails instead of stalling the suite). The child must get
``StoreForked`` — a ``StoreClosed`` naming both processes, with a hint — for
every use of the inherited store and for opening a file that was open at the
fork (SQLite's per-process lock records for it were copied), may open other
files, never closes an inherited connection, and the parent's store must keep
working with the file intact.
"""

from __future__ import annotations

import gc
import json
import multiprocessing
import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sqlstore import Event, Session, SQLiteStore
from sqlstore.errors import StoreClosed, StoreForked
from sqlstore.sqlite import database

from .helpers import file_digests, integrity

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


def _in_child(body: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Fork, run ``body`` in the child, and return what it reported (or its error)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child only
        signal.alarm(20)
        os.close(read_end)
        try:
            report = body()
        except BaseException as exc:
            report = {"crashed": f"{type(exc).__name__}: {exc}"}
        os.write(write_end, json.dumps(report).encode())
        os.close(write_end)
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        raw = pipe.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    report: dict[str, Any] = json.loads(raw)
    assert "crashed" not in report, report["crashed"]
    return report


def _failure(call: Callable[[], object]) -> dict[str, str]:
    try:
        call()
    except StoreClosed as exc:
        return {"type": type(exc).__name__, "message": str(exc), "hint": exc.hint}
    return {"type": "none"}


def test_inherited_store_refuses_every_use_in_the_child(tmp_path: Path) -> None:
    """Writes, reads and follows in the child raise StoreForked; the parent carries on."""
    path = tmp_path / "f.db"
    store = SQLiteStore(path)
    store.sessions.save(Session.new("a"))
    store.events.append_event("a", Event("message", 1, 1, "before fork"))

    def child() -> dict[str, Any]:
        return {
            "append": _failure(lambda: store.events.append_event("a", Event("message", 2))),
            "save": _failure(lambda: store.sessions.save(Session.new("b"))),
            "load": _failure(lambda: store.sessions.load("a")),
            "read": _failure(lambda: list(store.events.read("a"))),
            "follow": _failure(lambda: next(iter(store.events.read_after("a", follow=True)))),
            "audit": _failure(lambda: store.audit.list("a")),
            "close": _failure(store.close),
            "after_close": _failure(lambda: store.sessions.load("a")),
        }

    report = _in_child(child)
    parent = os.getpid()
    for call in ("append", "save", "load", "read", "follow", "audit"):
        assert report[call]["type"] == "StoreForked", (call, report[call])
        assert f"opened by process {parent}" in report[call]["message"]
        assert "'spawn' or 'forkserver'" in report[call]["hint"]
    assert report["close"] == {"type": "none"}
    assert report["after_close"]["type"] == "StoreForked"
    # The parent's store is untouched by all that and keeps working.
    store.events.append_event("a", Event("message", 3, 1, "after fork"))
    assert [e.text for e in store.events.read("a")] == ["before fork", "after fork"]
    assert store.sessions.load("a").id == "a"
    store.close()
    assert integrity(path) == ["ok"]


def test_child_cannot_reopen_a_file_open_at_the_fork_but_may_open_others(
    tmp_path: Path,
) -> None:
    """Reopening the parent's file in the child is refused; a different file works.

    A connection the child opened on the same file would share the lock records
    SQLite copied from the parent and hold no real lock: the parent closing its
    store would then checkpoint and delete the WAL under the child's writes.
    """
    path = tmp_path / "f.db"
    store = SQLiteStore(path)
    store.sessions.save(Session.new("a"))
    before = file_digests(path)

    def child() -> dict[str, Any]:
        store.close()  # closing the inherited store does not make the file usable
        same = _failure(lambda: SQLiteStore(path))
        with SQLiteStore(tmp_path / "child.db") as own:
            own.events.append_event("c", Event("message", 1, 1, "from child"))
            texts = [e.text for e in own.events.read("c")]
        return {"same": same, "other": texts}

    report = _in_child(child)
    assert report["same"]["type"] == "StoreForked"
    assert str(path) in report["same"]["message"]
    assert f"process {os.getpid()}" in report["same"]["message"]
    assert report["other"] == ["from child"]
    assert file_digests(path) == before
    store.close()
    with SQLiteStore(tmp_path / "child.db") as again:
        assert [e.text for e in again.events.read("c")] == ["from child"]
    assert integrity(path) == ["ok"]


def test_every_connection_alive_at_the_fork_is_parked_in_the_child(tmp_path: Path) -> None:
    """Writer, pooled readers and a follower's connection are held by the child, never closed.

    The child drops the store and the follow iterator without closing them, so
    garbage collection would close their connections (apsw closes a connection
    it deallocates) unless they were parked at the fork.
    """
    held: dict[str, Any] = {"store": SQLiteStore(tmp_path / "f.db")}
    held["store"].events.append_event("a", Event("message", 1))
    held["follow"] = held["store"].events.read_after("a", follow=True)
    assert next(held["follow"]).event is not None  # holds a follower connection
    list(held["store"].events.read("a"))  # opens a reader and leaves it pooled
    alive = sorted(id(conn) for conn in database._LIVE)
    assert len(alive) >= 3

    def child() -> dict[str, Any]:
        held.clear()
        gc.collect()
        return {
            "parked": sorted(id(conn) for conn in database._INHERITED),
            "live": len(database._LIVE),
        }

    report = _in_child(child)
    assert set(alive) <= set(report["parked"])
    assert report["live"] == 0
    held["follow"].close()
    held["store"].events.append_event("a", Event("message", 2))
    assert [e.seq for e in held["store"].events.read("a")] == [1, 2]
    held["store"].close()


def test_fork_while_another_thread_writes(tmp_path: Path) -> None:
    """Forking while a parent thread is appending: the child is refused, nothing is lost."""
    path = tmp_path / "f.db"
    store = SQLiteStore(path, durability="normal")
    stop = threading.Event()
    acked: list[int] = []

    def writer() -> None:
        n = 0
        while not stop.is_set():
            store.events.append_event("w", Event("e", seq=n))
            acked.append(n)
            n += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        reports = [
            _in_child(lambda: _failure(lambda: store.events.append_event("w", Event("c"))))
            for _ in range(5)
        ]
    finally:
        stop.set()
        thread.join()
    assert {r["type"] for r in reports} == {"StoreForked"}
    assert [e.seq for e in store.events.read("w")] == acked
    store.close()
    assert integrity(path) == ["ok"]


_POOL_STORE: SQLiteStore | None = None


def _pool_task(_: int) -> str:
    assert _POOL_STORE is not None
    try:
        _POOL_STORE.events.append_event("p", Event("from worker"))
    except StoreForked as exc:
        return type(exc).__name__
    return "written"


def test_multiprocessing_fork_worker_gets_store_forked(tmp_path: Path) -> None:
    """The common mistake: a module-level store used by a fork-started pool worker."""
    global _POOL_STORE
    _POOL_STORE = SQLiteStore(tmp_path / "p.db")
    try:
        with multiprocessing.get_context("fork").Pool(2) as pool:
            outcomes = pool.map(_pool_task, range(4))
        assert outcomes == ["StoreForked"] * 4
        assert list(_POOL_STORE.events.read("p")) == []
    finally:
        _POOL_STORE.close()
        _POOL_STORE = None
