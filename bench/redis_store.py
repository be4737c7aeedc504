"""RedisStore on loopback: appends/s and follow wake-up, beside SQLiteStore in the same run.

Run: ``python bench/redis_store.py [--appends N] [--events N] [--quick]``.

A private ``redis-server`` is started on a free 127.0.0.1 port with
``appendonly yes`` and ``appendfsync always`` (every acknowledged write is
fsynced by Redis: the closest to ``durability="full"``), in a scratch
directory on the same file system as the other baselines. Each repetition
alternates, in blocks, ``append_event`` on a ``RedisStore``, ``append_event``
on a ``SQLiteStore`` (``durability="full"``) and the raw 200-byte
``write`` + ``fsync`` loop. The follow row parks an in-process follower on the
``RedisStore`` and appends stamped events from a thread with 2-8 ms pauses;
latency = when the follower yields the record - the stamp taken just before the
append (so it includes the append's round trip).

Needs Debian's ``redis-server`` and the ``redis`` package (the ``redis`` extra);
without them the rows say "not measured" and why.
"""

from __future__ import annotations

import random
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from append_single import appender
from harness import (
    RawLog,
    Result,
    Row,
    emit,
    event_text,
    interleave,
    make_parser,
    median,
    ms,
    not_measured,
    percentile,
    rate,
    sizes,
    times,
    work_dir,
)

from sqlstore import Event, Session, SQLiteStore

SERVER_START_S = 10.0
SESSION_ID = "bench-redis"
PAUSE_S = (0.002, 0.008)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def redis_server(directory: Path) -> Iterator[str]:
    """Run a private, fsync-always redis-server; yield its URL."""
    import redis

    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("redis-server is not installed (apt-get install redis-server)")
    port = _free_port()
    args = [
        binary,
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--dir",
        str(directory),
        "--save",
        "",
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
    ]
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            try:
                if redis.Redis.from_url(url).ping():
                    break
            except redis.exceptions.ConnectionError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("redis-server did not start") from None
                time.sleep(0.05)
        yield url
    finally:
        process.terminate()
        process.wait(10)


def one_rep(directory: Path, url: str, count: int, block: int, tag: str) -> dict[str, float]:
    """Return appends/s of RedisStore, SQLiteStore and the raw loop, interleaved."""
    from sqlstore.redis import RedisStore

    events = [Event("message", i, 1, event_text(i), "run-0001") for i in range(count)]
    raw = RawLog(directory)
    with (
        RedisStore(f"{url}?prefix=bench-{tag}:") as redis_store,
        SQLiteStore(directory / f"redis-cmp-{tag}.db") as sqlite_store,
    ):
        redis_store.sessions.create(Session.new(SESSION_ID))
        sqlite_store.sessions.create(Session.new(SESSION_ID))
        runners = {
            "redis": appender(redis_store, SESSION_ID, events),
            "sqlite": appender(sqlite_store, SESSION_ID, events),
            "raw": raw.append,
        }
        try:
            return interleave(runners, count, block)
        finally:
            raw.close()


def follow_latencies(url: str, count: int, seed: int) -> list[float]:
    """Return wake-up latencies (s) of an in-process follower on a RedisStore."""
    from sqlstore.redis import RedisStore

    latencies: list[float] = []
    with RedisStore(f"{url}?prefix=bench-follow-{seed}:") as store:
        start = store.events.append_event(SESSION_ID, Event("start"))
        stop = threading.Event()
        parked = threading.Event()

        def follow() -> None:
            records = store.events.read_after(SESSION_ID, start, follow=True, stop=stop)
            parked.set()
            for record in records:
                assert record.event is not None
                latencies.append((time.monotonic_ns() - record.event.data["t0"]) / 1e9)
                if len(latencies) >= count:
                    return

        thread = threading.Thread(target=follow)
        thread.start()
        parked.wait(10)
        pauses = random.Random(seed)
        for i in range(count):
            time.sleep(pauses.uniform(*PAUSE_S))
            stamp = time.monotonic_ns()
            store.events.append_event(SESSION_ID, Event("tick", i, 1, "", "", {"t0": stamp}))
        thread.join(60)
        stop.set()
    return latencies


def main() -> None:
    """Measure, print and (with --json) write the result."""
    parser = make_parser(__doc__ or "")
    parser.add_argument("--appends", type=int, default=None, help="appends per repetition")
    parser.add_argument("--block", type=int, default=None, help="operations per alternation")
    parser.add_argument("--events", type=int, default=None, help="followed events per rep")
    args = parser.parse_args()
    size = sizes(
        args,
        full={"appends": 2000, "block": 100, "events": 300},
        quick={"appends": 20, "block": 5, "events": 10},
    )
    append_measure = "RedisStore `append_event`/s on loopback (appendfsync always)"
    follow_measure = "RedisStore follow wake-up, in-process: p50 / p99"
    try:
        import redis  # noqa: F401

        missing = "" if shutil.which("redis-server") else "redis-server is not installed"
    except ImportError:
        missing = "the redis package is not installed (pip install -e '.[redis]')"
    if missing:
        result = Result(
            "redis_store",
            "RedisStore on loopback",
            size,
            rows=[
                not_measured(append_measure, "report", missing),
                not_measured(follow_measure, "report", missing),
            ],
        )
        emit(result, args)
        return
    reds: list[float] = []
    sqls: list[float] = []
    raws: list[float] = []
    p50s: list[float] = []
    p99s: list[float] = []
    with work_dir(args, "redis") as directory, redis_server(directory) as url:
        for rep in range(size["reps"]):
            got = one_rep(directory, url, size["appends"], size["block"], str(rep))
            reds.append(got["redis"])
            sqls.append(got["sqlite"])
            raws.append(got["raw"])
            lat = follow_latencies(url, size["events"], rep)
            p50s.append(percentile(lat, 50))
            p99s.append(percentile(lat, 99))
    vs_raw = median([r / w for r, w in zip(reds, raws, strict=True)])
    vs_sqlite = median([r / s for r, s in zip(reds, sqls, strict=True)])
    result = Result(
        "redis_store",
        "RedisStore on loopback",
        size,
        rows=[
            Row(
                append_measure,
                rate(median(reds)),
                f"{rate(median(raws))} raw 200 B write+fsync; "
                f"SQLiteStore {rate(median(sqls))} ({times(vs_sqlite)} of it)",
                times(vs_raw),
                "report",
                None,
                note="ratio column: RedisStore ÷ raw write+fsync, same run",
            ),
            Row(
                follow_measure,
                f"{ms(median(p50s))} / {ms(median(p99s))}",
                "—",
                "—",
                "report",
                None,
            ),
        ],
        details={"redis_per_s": reds, "sqlite_per_s": sqls, "raw_per_s": raws},
    )
    emit(result, args)


if __name__ == "__main__":
    main()
