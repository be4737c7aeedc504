"""Readers never pin the WAL: it stays bounded while iterators pause and followers wait.

A read transaction held across a ``yield`` would stop checkpoints from reusing the
WAL, which would then grow with every write for as long as the reader lives. With
a ``read_after`` iterator paused halfway through a long log, a ``read`` iterator
paused after its first event and an idle follower, tens of megabytes of appends
must leave the ``-wal`` file near SQLite's auto-checkpoint size, and the paused
iterators must still deliver every record afterwards.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from sqlstore import Event, SQLiteStore

WAL_BOUND_BYTES = 12 * 1024 * 1024
"""Three times the default auto-checkpoint threshold (1000 pages of 4 KiB)."""


def test_paused_iterators_and_followers_do_not_pin_the_wal(tmp_path: Path) -> None:
    """Tens of MB of appends keep the WAL bounded while readers pause and a follower waits."""
    db = tmp_path / "wal.db"
    with SQLiteStore(db, durability="normal") as store:
        for seq in range(1_200):
            store.events.append_event("long", Event("e", seq=seq, text="l" * 500))
        paused = store.events.read_after("long")
        first = next(paused)
        events = store.events.read("long")
        assert next(events).seq == 0
        stop = threading.Event()
        followed: list[int] = []

        def follow() -> None:
            for record in store.events.read_after("quiet", follow=True, stop=stop):
                assert record.event is not None
                followed.append(record.event.seq)

        follower = threading.Thread(target=follow)
        follower.start()
        largest = 0
        for seq in range(3_000):
            store.events.append_event("bulk", Event("b", seq=seq, text="b" * 10_000))
            if seq % 100 == 0:
                largest = max(largest, os.path.getsize(str(db) + "-wal"))
        store.events.append_event("quiet", Event("q", seq=7))
        rest = [r.event.seq for r in paused if r.event is not None]
        more = [e.seq for e in events]
        stop.set()
        follower.join(30)
    assert largest < WAL_BOUND_BYTES, f"the WAL grew to {largest} bytes: a reader pins it"
    assert first.event is not None and first.event.seq == 0
    assert rest == list(range(1, 1_200))
    assert more == list(range(1, 1_200))
    assert followed == [7]
