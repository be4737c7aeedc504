"""Saving a 1 MB snapshot, against write-to-temp + fsync + rename + fsync(dir).

Run: ``python bench/snapshot_save.py [--kib 1024] [--saves N] [--quick]``.

A session whose encoded snapshot is about ``--kib`` KiB is saved ``--saves``
times per repetition with ``store.sessions.save`` (``durability="full"``; the
mean includes the WAL checkpoints SQLite runs every ~4 MB of WAL). The baseline
writes the same encoded bytes the way a careful file store does: write a temp
file, ``fsync`` it, ``rename`` it over the target, ``fsync`` the directory.
That baseline does not include encoding, which ``save`` does; a second row
compares like for like (the same codec, then the same careful file write). All
runners alternate in blocks of ``--block`` saves.

The codec caches the JSON text of long strings, so saving the same session again
(as an agent does after every turn) re-escapes only new text. A third row empties
that cache before every save: the cost of a first save, e.g. after ``load`` in a
fresh process.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from harness import (
    Result,
    Row,
    emit,
    interleave,
    make_parser,
    median,
    ms,
    sizes,
    times,
    work_dir,
)

from sqlstore import Message, Session, SQLiteStore, snapshot, snapshot_writer

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
    parser.add_argument("--block", type=int, default=None, help="saves per alternation")
    args = parser.parse_args()
    size = sizes(
        args, full={"kib": 1024, "saves": 24, "block": 4}, quick={"kib": 64, "saves": 2, "block": 1}
    )
    session = big_session(size["kib"])
    blob = snapshot.encode(session)
    runs: list[dict[str, float]] = []
    with work_dir(args, "snapshot") as directory:
        files = directory / "files"
        files.mkdir()
        with SQLiteStore(directory / "snapshot.db") as store:
            store.sessions.save(session)
            file_save(files, blob)

            def ours(count: int) -> None:
                for _ in range(count):
                    store.sessions.save(session)

            def ours_cold(count: int) -> None:
                for _ in range(count):
                    snapshot_writer.clear_string_cache()
                    store.sessions.save(session)

            def file_store(count: int) -> None:
                for _ in range(count):
                    file_save(files, blob)

            def encoding_file_store(count: int) -> None:
                for _ in range(count):
                    file_save(files, snapshot.encode(session))

            def encode(count: int) -> None:
                for _ in range(count):
                    snapshot.encode(session)

            def encode_cold(count: int) -> None:
                for _ in range(count):
                    snapshot_writer.clear_string_cache()
                    snapshot.encode(session)

            runners = {
                "ours": ours,
                "ours cold": ours_cold,
                "file": file_store,
                "encode+file": encoding_file_store,
                "encode": encode,
                "encode cold": encode_cold,
            }
            for _ in range(size["reps"]):
                per_s = interleave(runners, size["saves"], size["block"])
                runs.append({name: 1 / value for name, value in per_s.items()})
    ratios = [run["ours"] / run["file"] for run in runs]
    ratio = median(ratios)
    like_ratios = [run["ours"] / run["encode+file"] for run in runs]
    like_ratio = median(like_ratios)
    cold_ratios = [run["ours cold"] / run["file"] for run in runs]
    cold_ratio = median(cold_ratios)
    mb = f"{len(blob) / 1e6:.2f} MB"
    result = Result(
        "snapshot_save",
        f"{mb} snapshot save",
        {**size, "blob_bytes": len(blob)},
        rows=[
            Row(
                f"{mb} snapshot `save`: time per save",
                ms(median([run["ours"] for run in runs])),
                f"{ms(median([run['file'] for run in runs]))} tmp + fsync + rename + fsync(dir)",
                times(ratio),
                f"≤ {GOAL_RATIO}x the time",
                ratio <= GOAL_RATIO,
                note=(
                    "save includes encoding the snapshot, "
                    f"{ms(median([run['encode'] for run in runs]))} of it; the baseline writes "
                    "bytes encoded beforehand"
                ),
            ),
            Row(
                f"{mb} snapshot `save`, like for like (both encode)",
                ms(median([run["ours"] for run in runs])),
                f"{ms(median([run['encode+file'] for run in runs]))} encode + tmp + fsync + "
                "rename + fsync(dir)",
                times(like_ratio),
                f"≤ {GOAL_RATIO}x the time",
                like_ratio <= GOAL_RATIO,
                note="extra row: the same codec, then the careful file write",
            ),
            Row(
                f"{mb} snapshot `save`, cold string cache (first save)",
                ms(median([run["ours cold"] for run in runs])),
                f"{ms(median([run['file'] for run in runs]))} tmp + fsync + rename + fsync(dir)",
                times(cold_ratio),
                f"≤ {GOAL_RATIO}x the time",
                cold_ratio <= GOAL_RATIO,
                note=(
                    "extra row: the codec's long-string cache is emptied before each save; "
                    f"encoding is {ms(median([run['encode cold'] for run in runs]))} of it"
                ),
            ),
        ],
        details={
            "runs_s": runs,
            "ratios": ratios,
            "like_for_like_ratios": like_ratios,
            "cold_cache_ratios": cold_ratios,
        },
    )
    emit(result, args)


if __name__ == "__main__":
    main()
