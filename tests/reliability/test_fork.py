"""A store carried across ``fork()`` (SQLite connections must not be used in the child).

Real forks: the child reports what happened over a pipe and leaves with
``os._exit`` (no pytest teardown in the child). The child must get
``StoreForked`` — a ``StoreClosed`` naming both processes, with a hint — for
every use of the inherited store, must be able to open its own store on the same
file, and the parent's store must keep working with the file intact.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
import pytest

from sqlstore import Event, Session, SQLiteStore
from sqlstore.errors import StoreClosed, StoreForked

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


def _in_child(body: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Fork, run ``body`` in the child, and return what it reported (or its error)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child only
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


def _integrity(path: Path) -> str:
    conn = apsw.Connection(str(path))
    try:
        row = conn.execute("PRAGMA integrity_check").fetchone()
        assert row is not None
        return str(row[0])
    finally:
        conn.close()


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
        assert "Open a new store in the child" in report[call]["hint"]
    assert report["close"] == {"type": "none"}
    assert report["after_close"]["type"] == "StoreForked"
    # The parent's store is untouched by all that and keeps working.
    store.events.append_event("a", Event("message", 3, 1, "after fork"))
    assert [e.text for e in store.events.read("a")] == ["before fork", "after fork"]
    assert store.sessions.load("a").id == "a"
    store.close()
    assert _integrity(path) == "ok"


def test_child_opens_its_own_store_on_the_same_file(tmp_path: Path) -> None:
    """The hint's advice works: a store opened in the child writes next to the parent's."""
    path = tmp_path / "f.db"
    store = SQLiteStore(path)
    store.sessions.save(Session.new("a"))

    def child() -> dict[str, Any]:
        store.close()  # parks the inherited connections
        with SQLiteStore(path) as own:
            cursor = own.events.append_event("a", Event("message", 1, 1, "from child"))
            own.sessions.save(Session.new("child"))
            return {"cursor": cursor, "ids": sorted(s.id for s in own.sessions.list())}

    report = _in_child(child)
    assert report["ids"] == ["a", "child"]
    assert [e.text for e in store.events.read("a")] == ["from child"]
    store.events.append_event("a", Event("message", 2, 1, "from parent"))
    assert [r.cursor for r in store.events.read_after("a", limit=1)] == [report["cursor"]]
    store.close()
    assert _integrity(path) == "ok"


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
    assert _integrity(path) == "ok"


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
