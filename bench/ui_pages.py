"""Server time of the viewer's pages (``sqlstore ui``) and live-event latency.

Run: ``python bench/ui_pages.py [--sessions N] [--events E] [--quick]`` (needs the
``ui`` extra).

Setup: a store with ``--sessions`` sessions (mixed states and kinds, filled
through the store's own row functions, many per transaction) plus one session
with ``--events`` events and a ``--messages``-message conversation.

* **Server time** of a page (the counts of the session list are cached per
  inventory generation; the "counts recomputed" row drops that cache before each
  request, as after every snapshot save by an agent): the guarded ASGI application
  (Host check, routing, the page's queries, template rendering, security headers)
  is called directly,
  in process, ``--requests`` times per page; the figure is the median of the
  per-repetition p50 (network and browser excluded). The baseline is the plain
  library call that page is built on, measured in the same run: ``sessions.page(50)``
  for the session list, ``sessions.load`` for the session page, and
  ``events.read_tail(100)`` for the timeline.
* **Live latency**: a real ``sqlstore ui`` process (the console script) serves
  ``/stream``; this process reads the server-sent events; a spawned writer
  process appends ``--live-events`` events with 20-60 ms pauses, each stamped with
  ``time.monotonic_ns()`` just before ``append_event`` (the clock is system-wide
  on Linux). Latency = when the event's frame is read here - the stamp, so it
  includes the writer's durable commit and the server's follow wake-up.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import multiprocessing as mp
import os
import random
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
from harness import Result, Row, emit, make_parser, median, ms, percentile, sizes, times, work_dir

import retention
from cli.ui_cmd import PolicySource
from sqlstore import (
    Event,
    Kind,
    Message,
    Relationship,
    Session,
    SQLiteStore,
    State,
    ToolCall,
    ToolResult,
    snapshot,
)
from sqlstore.events import encode_event
from sqlstore.sqlite import rows
from sqlstore.ui.app import create_app
from sqlstore.ui.context import Viewer
from sqlstore.ui.security import GuardConfig

GOAL_LIST_S = 0.050
GOAL_SESSION_S = 0.100
GOAL_LIVE_P99_S = 1.0
FILL_SESSIONS_PER_TRANSACTION = 2_000
BIG_ID = "bench-big"
PORT = 8765
STATES = [State.COMPLETED, State.IDLE, State.FAILED, State.CANCELLED, State.COMPLETED]
LIVE_PAUSE_S = (0.020, 0.060)


def fill(path: Path, sessions: int, events: int, messages: int) -> None:
    """Create the bench store."""
    now_ns = time.time_ns()
    with SQLiteStore(path, durability="normal") as store:
        done = 0
        while done < sessions:
            chunk = range(done, min(sessions, done + FILL_SESSIONS_PER_TRANSACTION))

            def op(conn: apsw.Connection, chunk: range = chunk) -> None:
                for n in chunk:
                    if n % 10 == 9:
                        rel = Relationship(parent_session_id=f"bench-{n - 1:07d}", call_id="c1")
                        session = Session.new(
                            f"bench-{n:07d}", kind=Kind.SUBAGENT, relationship=rel
                        )
                    else:
                        session = Session.new(f"bench-{n:07d}", title=f"task number {n}")
                    session.state = STATES[n % len(STATES)]
                    stamp = now_ns - (sessions - n) * 1_000_000
                    rows.put_snapshot(conn, session, snapshot.encode(session), stamp)

            store.db.write(op)
            done = chunk.stop
        big = Session.new(BIG_ID, title="a long run")
        big.record_user_prompt("go")
        big.begin_turn()
        for i in range(messages // 2):
            call = ToolCall(id=f"c{i}", name="run", args=json.dumps({"step": i}))
            big.record_assistant(Message(role="assistant", text=f"step {i}", tool_calls=[call]))
            big.record_tool_results([ToolResult(call_id=f"c{i}", content=f"result {i}")])
        store.sessions.save(big)
        batch = 1_000
        for start in range(0, events, batch):

            def add(conn: apsw.Connection, start: int = start) -> None:
                for i in range(start, min(events, start + batch)):
                    body = encode_event(Event("message", i, 1, f"event {i}"))
                    rows.append_record(
                        conn,
                        BIG_ID,
                        is_gap=False,
                        event_type="message",
                        body=body,
                        now_ns=now_ns,
                    )

            store.db.write(add)


class AsgiCaller:
    """Calls a guarded ASGI app in process and returns (status, body length)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.loop = asyncio.new_event_loop()

    def get(self, path: str, query: str = "") -> tuple[int, int]:
        """Serve one GET and return its status and body size."""
        return self.loop.run_until_complete(self._get(path, query))

    async def _get(self, path: str, query: str) -> tuple[int, int]:
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": query.encode(),
            "root_path": "",
            "headers": [(b"host", f"127.0.0.1:{PORT}".encode())],
            "client": ("127.0.0.1", 1),
            "server": ("127.0.0.1", PORT),
        }
        status = 0
        size = 0

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            nonlocal status, size
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                size += len(message.get("body", b""))

        await self.app(scope, receive, send)
        return status, size

    def close(self) -> None:
        """Close the event loop."""
        self.loop.close()


def timed(fn: Callable[[], object], count: int) -> list[float]:
    """Return the durations of ``count`` calls of ``fn`` (after one warm-up call)."""
    fn()
    out = []
    for _ in range(count):
        started = time.perf_counter()
        fn()
        out.append(time.perf_counter() - started)
    return out


def server_times(path: Path, requests: int) -> dict[str, dict[str, float]]:
    """Return p50 (s) of each page and of its library baseline."""
    store = SQLiteStore(path, readonly=True, create=False)
    viewer = Viewer(store=store, retention=PolicySource(retention.DEFAULT_CONFIG))
    caller = AsgiCaller(create_app(viewer, GuardConfig(host="127.0.0.1", port=PORT)))
    try:
        for page, query in (("/", ""), ("/session", f"id={BIG_ID}"), ("/timeline", f"id={BIG_ID}")):
            status, _ = caller.get(page, query)
            assert status == 200, (page, status)

        def list_recounted() -> object:
            viewer.drop_caches()
            return caller.get("/")

        pages = {
            "list": (lambda: caller.get("/"), lambda: store.sessions.page(50)),
            "list_recount": (list_recounted, lambda: store.sessions.page(50)),
            "session": (
                lambda: caller.get("/session", f"id={BIG_ID}"),
                lambda: store.sessions.load(BIG_ID),
            ),
            "timeline": (
                lambda: caller.get("/timeline", f"id={BIG_ID}"),
                lambda: store.events.read_tail(BIG_ID, 100),
            ),
        }
        out: dict[str, dict[str, float]] = {}
        for name, (page_call, base_call) in pages.items():
            ours = timed(page_call, requests)
            base = timed(base_call, requests)
            out[name] = {"p50": percentile(ours, 50), "base": percentile(base, 50)}
        return out
    finally:
        caller.close()
        store.close()


def live_writer(path: str, count: int, seed: int) -> None:
    """Append ``count`` stamped events to the big session with 20-60 ms pauses."""
    pauses = random.Random(seed)
    with SQLiteStore(path) as store:
        time.sleep(0.3)  # the reader is connected before the first event
        for i in range(count):
            time.sleep(pauses.uniform(*LIVE_PAUSE_S))
            stamp = time.monotonic_ns()
            store.events.append_event(BIG_ID, Event("tick", i, 1, "", "", {"t0": stamp}))


def free_port() -> int:
    """Return a free loopback port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def live_latencies(path: Path, count: int, seed: int) -> list[float]:
    """Return the latency of each live event through a real server process."""
    port = free_port()
    script = shutil.which("sqlstore") or str(Path(sys.executable).parent / "sqlstore")
    server = subprocess.Popen(
        [script, "--db", str(path), "ui", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        conn = _connect(port)
        with SQLiteStore(path, readonly=True, create=False) as store:
            cursor = store.events.read_tail(BIG_ID, 1)[-1].cursor
        conn.request("GET", f"/stream?id={BIG_ID}&after={cursor}")
        response = conn.getresponse()
        assert response.status == 200
        writer = mp.get_context("spawn").Process(target=live_writer, args=(str(path), count, seed))
        writer.start()
        out: list[float] = []
        while len(out) < count:
            line = response.readline().decode()
            if line.startswith("data: ") and "t0" in line:
                now = time.monotonic_ns()
                stamp = json.loads(json.loads(line[6:])["body"])["data"]["t0"]
                out.append((now - stamp) / 1e9)
        writer.join(timeout=120)
        conn.close()
        return out
    finally:
        server.terminate()
        server.wait(timeout=30)


def _connect(port: int) -> http.client.HTTPConnection:
    deadline = time.monotonic() + 30
    while True:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("GET", "/static/app.css")
            conn.getresponse().read()
            return conn
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def main() -> None:
    """Measure, print and (with --json) write the result."""
    parser = make_parser(__doc__ or "")
    parser.add_argument("--sessions", type=int, default=None, help="sessions in the store")
    parser.add_argument("--events", type=int, default=None, help="events of the big session")
    parser.add_argument("--messages", type=int, default=None, help="messages of the big session")
    parser.add_argument("--requests", type=int, default=None, help="requests per page and rep")
    parser.add_argument("--live-events", type=int, default=None, help="live events per rep")
    args = parser.parse_args()
    size = sizes(
        args,
        full={
            "sessions": 100_000,
            "events": 10_000,
            "messages": 1_000,
            "requests": 30,
            "live_events": 100,
        },
        quick={"sessions": 200, "events": 300, "messages": 20, "requests": 3, "live_events": 3},
    )
    result = Result("ui_pages", "viewer server time and live latency", size)
    runs: list[dict[str, dict[str, float]]] = []
    live: list[list[float]] = []
    with work_dir(args, "ui") as directory:
        path = directory / "ui.db"
        fill(path, size["sessions"], size["events"], size["messages"])
        for rep in range(size["reps"]):
            runs.append(server_times(path, size["requests"]))
            live.append(live_latencies(path, size["live_events"], seed=rep))
        file_mb = os.path.getsize(path) / 2**20
    result.notes.append(f"store file {file_mb:.0f} MiB")
    labels = {
        "list": (
            f"sessions page (first 50 of {size['sessions']:,}, with counts)",
            GOAL_LIST_S,
            "sessions.page(50)",
        ),
        "list_recount": (
            f"sessions page (first 50 of {size['sessions']:,}, counts recomputed)",
            GOAL_LIST_S,
            "sessions.page(50)",
        ),
        "session": (
            f"session page ({size['events']:,} events, {size['messages']:,} messages)",
            GOAL_SESSION_S,
            "sessions.load",
        ),
        "timeline": (
            f"timeline page (tail 100 of {size['events']:,} events)",
            GOAL_SESSION_S,
            "read_tail(100)",
        ),
    }
    for name, (measure, goal, base_name) in labels.items():
        ours = median([r[name]["p50"] for r in runs])
        base = median([r[name]["base"] for r in runs])
        result.rows.append(
            Row(
                f"server time, {measure}: p50",
                ms(ours),
                f"{ms(base)} ({base_name})",
                times(ours / base) if base else "—",
                f"≤ {goal * 1000:g} ms",
                ours <= goal,
                note="guarded ASGI app called in process; baseline: the library call alone",
            )
        )
    p50 = median([percentile(r, 50) for r in live])
    p99 = median([percentile(r, 99) for r in live])
    result.rows.append(
        Row(
            "live event to SSE client, cross-process writer: p50 / p99",
            f"{ms(p50)} / {ms(p99)}",
            "—",
            "—",
            f"≤ {GOAL_LIVE_P99_S * 1000:g} ms (p99)",
            p99 <= GOAL_LIVE_P99_S,
            note="real server process; includes the writer's durable commit",
        )
    )
    result.details = {"server": runs, "live_p50": p50, "live_p99": p99}
    emit(result, args)


if __name__ == "__main__":
    main()
