"""SQLite specifics of the primitives: tail reads are index seeks, batches share group commits."""

from __future__ import annotations

import threading
from pathlib import Path

import apsw

from sqlstore import Event, SQLiteStore
from sqlstore.sqlite.events import TAIL_SQL

THREADS = 8
BATCHES = 15


def test_tail_query_is_a_key_seek_without_sort(tmp_path: Path) -> None:
    """The tail query searches the (session_id, pos) key backwards: no scan, no sort."""
    with SQLiteStore(tmp_path / "plan.db") as store:
        store.events.append_events("s", [Event("note")] * 3)
    conn = apsw.Connection(str(tmp_path / "plan.db"))
    try:
        plan = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + TAIL_SQL, ("s", 4, 20))]
    finally:
        conn.close()
    assert len(plan) == 1 and plan[0].startswith("SEARCH events USING"), plan
    assert "pos<?" in plan[0].replace(" ", ""), plan
    assert not any("TEMP B-TREE" in step or step.startswith("SCAN") for step in plan), plan


def test_concurrent_batches_share_group_commits(tmp_path: Path) -> None:
    """8 threads of batch appends need fewer commits than calls, and every batch stays whole."""
    commits = 0

    def count() -> bool:
        nonlocal commits
        commits += 1
        return False  # let the commit proceed

    with SQLiteStore(tmp_path / "group.db") as store:
        store.db._writer.setcommithook(count)  # the one writer connection of this store
        barrier = threading.Barrier(THREADS)

        def work(slot: int) -> None:
            barrier.wait(30)
            for index in range(BATCHES):
                store.events.append_events(
                    f"g{slot}", [Event("note", seq=index, data={"k": k}) for k in range(5)]
                )

        threads = [threading.Thread(target=work, args=(k,)) for k in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert commits < THREADS * BATCHES, "no two batches ever shared a commit"
        for slot in range(THREADS):
            got = [(e.seq, e.data["k"]) for e in store.events.read(f"g{slot}")]
            assert got == [(i, k) for i in range(BATCHES) for k in range(5)]
