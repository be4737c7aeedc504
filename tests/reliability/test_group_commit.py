"""Group commit under failure: one thread's failing write never spoils the others' batch.

Sixteen threads of one store race ``create`` on a shared id (all but one fail
with ``SessionAlreadyExists``) while appending to their own logs, saving their
own snapshots and recording audit rows, so failing and succeeding writes share
commit batches. Each caller must get its own outcome, every successful write must
be stored exactly once and in the caller's order, and nothing of a failed write
may remain.
"""

from __future__ import annotations

import threading
from pathlib import Path

from sqlstore import Event, Session, SQLiteStore, ToolCallRecord
from sqlstore.errors import SessionAlreadyExists

THREADS = 16
ROUNDS = 6
APPENDS = 15


def _race_round(store: SQLiteStore, round_no: int) -> None:
    barrier = threading.Barrier(THREADS)
    winners: list[int] = []
    losers: list[int] = []
    errors: list[BaseException] = []

    def work(k: int) -> None:
        own = f"r{round_no}-t{k}"
        try:
            barrier.wait(30)
            for seq in range(APPENDS):
                store.events.append_event(own, Event("e", seq=seq))
                if seq == APPENDS // 2:
                    try:
                        store.sessions.create(Session.new(f"dup{round_no}", title=own))
                        winners.append(k)
                    except SessionAlreadyExists:
                        losers.append(k)
            store.sessions.save(Session.new(own, title=own))
            store.audit.record(ToolCallRecord(session_id=own, call_id=own))
        except BaseException as exc:  # collected for the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert len(winners) == 1 and len(losers) == THREADS - 1
    assert store.sessions.load(f"dup{round_no}").title == f"r{round_no}-t{winners[0]}"
    assert store.audit.list(f"dup{round_no}") == []
    for k in range(THREADS):
        own = f"r{round_no}-t{k}"
        assert [e.seq for e in store.events.read(own)] == list(range(APPENDS))
        assert store.sessions.load(own).title == own
        assert [r.call_id for r in store.audit.list(own)] == [own]


def test_failing_creates_do_not_disturb_batched_writes(tmp_path: Path) -> None:
    """Contested creates fail alone; batched appends, saves and records all land once."""
    with SQLiteStore(tmp_path / "g.db", durability="normal") as store:
        for round_no in range(ROUNDS):
            _race_round(store, round_no)
        assert len(store.sessions.list()) == ROUNDS * (THREADS + 1)
