"""``sqlstore migrate`` on hostile source directories.

A source holding FIFOs, directories and symlinks named like run logs, an empty
file, a dot-file, and files that are not UTF-8 named must be imported item by
item: good items imported, the rest reported as skipped or failed, the run never
hangs (a FIFO is never opened) and never ends in a raw exception.
"""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from sqlstore import MemoryStore
from sqlstore.migrate.job import run_migration

from .helpers import REPO

EXAMPLE = REPO / "examples" / "runlogs" / "20261128-090000.jsonl"


@pytest.fixture
def alarm() -> Iterator[None]:
    """Fail (SIGALRM) instead of hanging forever if a read blocks."""

    def expired(_signum: int, _frame: object) -> None:
        raise TimeoutError("the import blocked (a FIFO was opened?)")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(60)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _good(source: Path, stem: str) -> None:
    (source / f"{stem}.jsonl").write_text(EXAMPLE.read_text().replace("20261128-090000", stem))


def test_odd_entries_in_a_run_log_source_are_skipped_not_fatal(tmp_path: Path, alarm: None) -> None:
    """FIFOs, directories, symlinks, empty and dot files are reported; good logs import."""
    source = tmp_path / "src"
    source.mkdir()
    _good(source, "good-1")
    _good(source, "good-2")
    os.mkfifo(source / "fifo.jsonl")
    (source / "dir.jsonl").mkdir()
    (source / "dangling.jsonl").symlink_to(source / "nowhere")
    (source / "link.jsonl").symlink_to(source / "good-1.jsonl")
    (source / "loop.jsonl").symlink_to(source)
    (source / "empty.jsonl").write_bytes(b"")
    (source / ".jsonl").write_text(EXAMPLE.read_text())
    (source / "garbage.jsonl").write_bytes(os.urandom(300))
    store = MemoryStore()
    report = run_migration(store, source)
    assert report.imported == 2, report.items
    assert sorted(s.id for s in store.sessions.list()) == ["good-1", "good-2"]
    outcomes = {item.item.rstrip("/"): item.outcome for item in report.items}
    for name in ("fifo.jsonl", "dir.jsonl", "dangling.jsonl", "link.jsonl", "loop.jsonl"):
        assert outcomes[name] != "imported", (name, outcomes)
    assert len(report.items) == 10
    again = run_migration(store, source)
    assert again.imported == 0 and again.failed == report.failed


def test_non_utf8_file_name_is_reported_not_fatal(tmp_path: Path, alarm: None) -> None:
    """A run log whose file name is not UTF-8 is skipped or failed; the others import."""
    source = tmp_path / "src"
    source.mkdir()
    _good(source, "good-1")
    with open(os.fsencode(source) + b"/bad\xff.jsonl", "wb") as handle:
        handle.write(EXAMPLE.read_bytes())
    store = MemoryStore()
    report = run_migration(store, source)
    assert report.imported == 1
    assert [s.id for s in store.sessions.list()] == ["good-1"]


MECATL = REPO / "examples" / "mecatl-store"


def test_odd_entries_in_a_mecatl_store_are_skipped_not_fatal(tmp_path: Path, alarm: None) -> None:
    """A mecatl store with FIFOs, directories, symlinks and torn files imports what it can."""
    source = tmp_path / "mecatl"
    shutil.copytree(MECATL, source, symlinks=True)
    v2 = source / "sid-v2"
    os.mkfifo(v2 / "sid-v2-fifo-00000000000000000000000000000000.session.json")
    (v2 / "sid-v2-dir-00000000000000000000000000000000.session.json").mkdir()
    (v2 / "sid-v2-link-00000000000000000000000000000000.session.json").symlink_to(
        next(v2.glob("*review-*.session.json"))
    )
    (v2 / "sid-v2-empty-00000000000000000000000000000000.session.json").write_bytes(b"")
    (v2 / "sid-v2-junk-00000000000000000000000000000000.session.json").write_bytes(os.urandom(200))
    (v2 / "sid-v2-torn-00000000000000000000000000000000.events.jsonl").write_bytes(b'{"v":')
    os.mkfifo(source / "sid-v1" / "sid-v1-fifo.session.jsonl")
    clean = MemoryStore()
    expected = run_migration(clean, MECATL)
    store = MemoryStore()
    report = run_migration(store, source)
    assert report.imported == expected.imported, report.items
    assert sorted(s.id for s in store.sessions.list()) == sorted(
        s.id for s in clean.sessions.list()
    )
    again = run_migration(store, source)
    assert again.imported == 0
