"""Saving a 1 MB snapshot, against write-to-temp + fsync + rename + fsync(dir).

Run: ``python bench/snapshot_save.py [--kib 1024] [--saves N] [--quick]``.

A session whose encoded snapshot is about ``--kib`` KiB is saved ``--saves``
times per repetition with ``store.sessions.save`` (``durability="full"``; the
mean includes the WAL checkpoints SQLite runs every ~4 MB of WAL). The baseline
writes the same encoded bytes the way a careful file store does: write a temp
file, ``fsync`` it, ``rename`` it over the target, ``fsync`` the directory.
The baseline does not include encoding; the note gives the encode time, which
``save`` does include.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from harness import Result, Row, emit, make_parser, median, ms, sizes, times, work_dir

from sqlstore import Message, Session, SQLiteStore, snapshot

GOAL_RATIO = 1.5
MESSAGE_CHARS = 4_000


def big_session(kib: int) -> Session:
    """Return a session whose encoded snapshot is at least ``kib`` KiB."""
    session = Session.new("bench-snapshot", title="snapshot bench")
    text = ("the quick brown fox jumps over the lazy dog " * 100)[:MESSAGE_CHARS]
    i = 0
    while True:
        for _ in range(16):
            role = "user" if i % 2 == 0 else "assistant"
            session.messages.append(Message(role=role, text=f"{i:06d} {text}"))
            i += 1
        if len(snapshot.encode(session)) >= kib * 1024:
            return session


def file_save(directory: Path, blob: bytes) -> float:
    """Return seconds for one durable replace of a file holding ``blob``."""
    target = directory / "session.json"
    tmp = directory / "session.json.tmp"
    started = time.perf_counter()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        view = memoryview(blob)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(tmp, target)
    dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return time.perf_counter() - started


def main() -> None:
    """Measure, print and (with --json) write the result."""
    parser = make_parser(__doc__ or "")
    parser.add_argument("--kib", type=int, default=None, help="snapshot size in KiB")
    parser.add_argument("--saves", type=int, default=None, help="saves per repetition")
    args = parser.parse_args()
    size = sizes(args, full={"kib": 1024, "saves": 24}, quick={"kib": 64, "saves": 2})
    session = big_session(size["kib"])
    blob = snapshot.encode(session)
    encode_s: list[float] = []
    baseline: list[float] = []
    measured: list[float] = []
    with work_dir(args, "snapshot") as directory:
        files = directory / "files"
        files.mkdir()
        with SQLiteStore(directory / "snapshot.db") as store:
            store.sessions.save(session)
            file_save(files, blob)
            for _ in range(size["reps"]):
                baseline.append(
                    sum(file_save(files, blob) for _ in range(size["saves"])) / size["saves"]
                )
                started = time.perf_counter()
                for _ in range(size["saves"]):
                    store.sessions.save(session)
                measured.append((time.perf_counter() - started) / size["saves"])
                started = time.perf_counter()
                snapshot.encode(session)
                encode_s.append(time.perf_counter() - started)
    ratios = [o / b for o, b in zip(measured, baseline, strict=True)]
    ratio = median(ratios)
    result = Result(
        "snapshot_save",
        f"{len(blob) / 1024 / 1024:.2f} MB snapshot save",
        {**size, "blob_bytes": len(blob)},
        rows=[
            Row(
                f"{len(blob) / 1e6:.2f} MB snapshot `save`: time per save",
                ms(median(measured)),
                f"{ms(median(baseline))} tmp + fsync + rename + fsync(dir)",
                times(ratio),
                f"≤ {GOAL_RATIO}x the time",
                ratio <= GOAL_RATIO,
                note=f"of which encoding the snapshot: {ms(median(encode_s))}",
            )
        ],
        details={"ours_s": measured, "file_s": baseline, "encode_s": encode_s, "ratios": ratios},
    )
    emit(result, args)


if __name__ == "__main__":
    main()
