"""Disk full: a child under ``RLIMIT_FSIZE`` (SIGXFSZ ignored) writes until the store refuses.

The refusing write must raise a clear ``StoreFull`` or ``StoreIOError`` (with a
hint), the database must stay intact and readable, and writes must succeed again
once space returns — both in the same process after raising the limit and in a
fresh process without any limit.
"""

from __future__ import annotations

import json
from pathlib import Path

from sqlstore import Event, Session, SQLiteStore

from .helpers import integrity, run_child

FULL_ERRORS = ("StoreFull", "StoreIOError")


def test_file_size_limit_gives_clear_error_and_no_damage(tmp_path: Path) -> None:
    """Writes past RLIMIT_FSIZE fail with StoreFull/StoreIOError; data stays; writes resume."""
    db = tmp_path / "full.db"
    with SQLiteStore(db) as store:
        store.sessions.create(Session.new("full", title="kept"))
        for seq in range(5):
            store.events.append_event("full", Event("fill", seq=seq, text="seed"))
    result = json.loads(run_child("diskfull", str(db), "250000").strip().splitlines()[-1])
    kind, message, hint = result["errors"][0]
    assert kind in FULL_ERRORS, result["errors"]
    assert hint, "the error must carry a hint"
    assert str(db) in message
    # The bigger writes that follow are refused the same way, never with a raw error.
    for what, _message, what_hint in result["errors"][1:]:
        assert what.split(":")[-1] in FULL_ERRORS, result["errors"]
        assert what_hint
    # Everything acknowledged before the failure is readable in the same process.
    assert result["readable"] == list(range(result["acked"]))
    assert result["acked"] > 5, "the limit was hit before any write of the child succeeded"
    assert result["after_raise"] == result["acked"] + 1
    # A fresh process without the limit sees a sound file and can write.
    assert integrity(db) == ["ok"]
    with SQLiteStore(db) as store:
        seqs = [e.seq for e in store.events.read("full")]
        assert seqs == list(range(result["acked"] + 1))
        assert store.sessions.load("full").title == "kept"
        store.events.append_event("full", Event("fill", seq=len(seqs)))
        store.sessions.save(Session.new("full", title="z" * 400_000))
        assert store.sessions.load("full").title == "z" * 400_000
    assert integrity(db) == ["ok"]


def test_file_size_limit_hit_during_checkpoint_keeps_data(tmp_path: Path) -> None:
    """A limit hit with a large database and WAL still loses no acknowledged write."""
    db = tmp_path / "full.db"
    with SQLiteStore(db, durability="normal") as store:
        store.sessions.create(Session.new("full"))
        for seq in range(150):
            store.events.append_event("full", Event("fill", seq=seq, text="w" * 20_000))
    result = json.loads(run_child("diskfull", str(db), "60000").strip().splitlines()[-1])
    assert result["errors"][0][0] in FULL_ERRORS, result["errors"]
    assert result["readable"] == list(range(result["acked"]))
    assert integrity(db) == ["ok"]
    with SQLiteStore(db) as store:
        assert [e.seq for e in store.events.read("full")] == list(range(result["acked"] + 1))
