"""Second OS processes for the cross-process cases: long-lived workers with their own store.

A :class:`Worker` is a child started with ``multiprocessing``'s ``spawn``
method (a fresh interpreter: no state inherited from the parent's store). It
opens the durable state through a :class:`~sqlstore.conformance.base.ProcessTarget`
and then serves a few operations over a pipe, so a test that needs 50 races
starts two processes, not 100. Workers that race share a ``multiprocessing``
barrier and cross it together before every attempt.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Barrier
from typing import Any

from sqlstore.conformance.base import FOLLOW_TIMEOUT_S, ProcessTarget
from sqlstore.errors import LeaseHeld, SessionAlreadyExists, StoreError, VersionConflict
from sqlstore.events import Event
from sqlstore.model import Principal
from sqlstore.ports import Store
from sqlstore.session import Session

WORKER_START_TIMEOUT_S = 120.0
"""A spawned interpreter imports sqlstore (and the test runner's main module) before it answers."""

RACE_ISSUER = "https://race.example"


def race_owner(marker: str) -> Principal:
    """Return the owner a racing worker puts on the sessions it creates."""
    return Principal(issuer=RACE_ISSUER, subject=marker, name=marker)


def _race_create(
    store: Store, barrier: Barrier | None, ids: list[str], marker: str, timeout_s: float
) -> list[str]:
    if barrier is None:
        raise RuntimeError("race_create needs workers started with a shared barrier")
    outcomes: list[str] = []
    for session_id in ids:
        session = Session.new(session_id, title=marker, owner=race_owner(marker))
        barrier.wait(timeout_s)
        try:
            store.sessions.create(session)
            outcomes.append("won")
        except SessionAlreadyExists:
            outcomes.append("lost")
        except StoreError as exc:
            outcomes.append(f"error: {type(exc).__name__}: {exc}")
    return outcomes


def _follow(
    conn: Connection, store: Store, session_id: str, after: str, limit: int, timeout_s: float
) -> list[dict[str, Any]]:
    stop = threading.Event()
    timer = threading.Timer(timeout_s, stop.set)
    timer.daemon = True
    timer.start()
    try:
        reader = store.events.read_after(session_id, after, limit=limit, follow=True, stop=stop)
        conn.send(("ok", "following"))
        return [record.to_json() for record in reader]
    finally:
        timer.cancel()


def _acquire(store: Store, session_id: str, owner: str, ttl_s: float) -> int | str:
    """Take a lease; return its token, or ``"held"`` when another owner holds it."""
    try:
        return store.leases.acquire(session_id, owner, timedelta(seconds=ttl_s)).token
    except LeaseHeld:
        return "held"


def _append_batches(
    conn: Connection,
    store: Store,
    session_id: str,
    size: int,
    count: int,
    text_bytes: int,
    pause_s: float,
) -> int:
    """Append ``count`` batches (0 = until killed) of ``size`` events; report the first one.

    ``pause_s`` between batches gives a reader in another process time to look.
    """
    done = 0
    while count == 0 or done < count:
        # ``text`` is the batch's tag in the suites' checks; ``pad`` makes the batch big.
        batch = [
            Event(
                type="note",
                seq=slot,
                text=f"p{os.getpid()}",
                data={"batch": done, "slot": slot, "of": size, "pad": "w" * text_bytes},
            )
            for slot in range(size)
        ]
        store.events.append_events(session_id, batch)
        done += 1
        if done == 1:
            conn.send(("ok", "started"))
        if pause_s:
            time.sleep(pause_s)
    return done


def _race_save(
    store: Store, barrier: Barrier | None, cases: list[tuple[str, int]], timeout_s: float
) -> list[str]:
    if barrier is None:
        raise RuntimeError("race_save needs workers started with a shared barrier")
    outcomes: list[str] = []
    for session_id, version in cases:
        session = Session.new(session_id, title=f"p{os.getpid()}")
        barrier.wait(timeout_s)
        try:
            store.sessions.save(session, expected_version=version)
            outcomes.append("won")
        except VersionConflict:
            outcomes.append("lost")
        except StoreError as exc:
            outcomes.append(f"error: {type(exc).__name__}: {exc}")
    return outcomes


def increment(store: Store, session_id: str, rounds: int) -> int:
    """Run ``rounds`` read-modify-write cycles (retrying conflicts); return the conflicts met."""
    conflicts = 0
    done = 0
    while done < rounds:
        session, version = store.sessions.load_versioned(session_id)
        count = int(session.labels.get("count", "0")) + 1
        session.labels["count"] = str(count)
        event = Event(type="count", seq=count)
        try:
            store.apply(session_id, snapshot=session, events=[event], expected_version=version)
        except VersionConflict:
            conflicts += 1
            continue
        done += 1
    return conflicts


def serve(target: ProcessTarget, conn: Connection, barrier: Barrier | None) -> None:
    """Child entry point: open the store, then answer requests until ``quit``."""
    try:
        store = target.open()
    except BaseException:  # process boundary: report to the parent instead of dying silently
        conn.send(("error", traceback.format_exc()))
        return
    conn.send(("ok", "ready"))
    try:
        while True:
            request = conn.recv()
            op, args = request[0], request[1:]
            if op == "quit":
                return
            try:
                if op == "race_create":
                    reply: Any = _race_create(store, barrier, *args)
                elif op == "append":
                    session_id, events = args
                    reply = [
                        store.events.append_event(session_id, Event.from_json(e)) for e in events
                    ]
                elif op == "delete":
                    store.sessions.delete(args[0])
                    reply = None
                elif op == "follow":
                    reply = _follow(conn, store, *args)
                elif op == "acquire":
                    reply = _acquire(store, *args)
                elif op == "append_batches":
                    reply = _append_batches(conn, store, *args)
                elif op == "race_save":
                    reply = _race_save(store, barrier, *args)
                elif op == "increment":
                    reply = increment(store, *args)
                else:
                    raise ValueError(f"unknown worker operation {op!r}")
            except BaseException:  # process boundary: the parent turns this into a test failure
                conn.send(("error", traceback.format_exc()))
                continue
            conn.send(("ok", reply))
    finally:
        store.close()
        conn.close()


class Worker:
    """One spawned child process holding its own handle on a store's durable state."""

    def __init__(self, target: ProcessTarget, barrier: Barrier | None = None) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._process = ctx.Process(
            target=serve, args=(target, child, barrier), name="conformance-worker", daemon=True
        )
        self._process.start()
        child.close()
        self._ready = False

    @property
    def pid(self) -> int:
        """The child's process id (to kill it with a signal)."""
        pid = self._process.pid
        assert pid is not None
        return pid

    def wait_ready(self) -> None:
        """Wait (bounded) until the child has opened its store."""
        if not self._ready:
            self.receive(WORKER_START_TIMEOUT_S)
            self._ready = True

    def send(self, *request: Any) -> None:
        """Send one request without waiting for the reply."""
        self.wait_ready()
        self._conn.send(request)

    def receive(self, timeout_s: float = FOLLOW_TIMEOUT_S) -> Any:
        """Return the next reply, failing if it is an error or does not come in time."""
        if not self._conn.poll(timeout_s):
            raise AssertionError(f"worker process did not answer within {timeout_s} s")
        status, value = self._conn.recv()
        if status != "ok":
            raise AssertionError(f"worker process failed:\n{value}")
        return value

    def call(self, *request: Any, timeout_s: float = FOLLOW_TIMEOUT_S) -> Any:
        """Send one request and return its reply."""
        self.send(*request)
        return self.receive(timeout_s)

    def close(self) -> None:
        """Ask the child to quit, and kill it if it does not within the timeout."""
        try:
            if self._process.is_alive():
                self._conn.send(("quit",))
        except (BrokenPipeError, OSError):
            pass  # the child is already gone; join below reaps it
        self._process.join(FOLLOW_TIMEOUT_S)
        if self._process.is_alive():
            self._process.kill()
            self._process.join(FOLLOW_TIMEOUT_S)
        self._conn.close()
        self._process.close()


@contextmanager
def workers(target: ProcessTarget, count: int, *, barrier: bool = False) -> Iterator[list[Worker]]:
    """Start ``count`` workers on ``target`` (in parallel), yield them ready, then close them."""
    shared = multiprocessing.get_context("spawn").Barrier(count) if barrier else None
    started: list[Worker] = []
    try:
        for _ in range(count):
            started.append(Worker(target, shared))
        for worker in started:
            worker.wait_ready()
        yield started
    finally:
        for worker in started:
            worker.close()
