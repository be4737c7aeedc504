"""Closing a store while other threads still use it.

Writes and reads racing ``close()`` fail with ``StoreClosed`` (never a generic
``StoreError`` or a raw apsw error), and every write acknowledged before the close
is in the file when it is opened again.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path

from sqlstore import Event, SQLiteStore
from sqlstore.errors import StoreError

TRIALS = 12


def test_close_racing_writers_and_readers_gives_store_closed(tmp_path: Path) -> None:
    """Threads racing close() get StoreClosed; acknowledged appends survive the close."""
    outcomes: Counter[str] = Counter()
    lock = threading.Lock()
    for trial in range(TRIALS):
        db = tmp_path / f"c{trial}.db"
        store = SQLiteStore(db, durability="normal")
        acked = [0, 0, 0, 0]

        def work(k: int, store: SQLiteStore = store, acked: list[int] = acked) -> None:
            sid = f"s{k}"
            while True:
                try:
                    if k % 2:
                        store.events.append_event(sid, Event("e", seq=acked[k]))
                        acked[k] += 1
                    else:
                        list(store.events.read_after("s1", limit=5))
                except StoreError as exc:
                    with lock:
                        outcomes[type(exc).__name__] += 1
                    return
                except Exception as exc:  # a raw error is the finding
                    with lock:
                        outcomes["RAW " + type(exc).__name__] += 1
                    return

        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for thread in threads:
            thread.start()
        time.sleep(0.01 + 0.005 * trial)
        store.close()
        for thread in threads:
            thread.join(30)
        with SQLiteStore(db) as again:
            for k in (1, 3):
                seqs = [e.seq for e in again.events.read(f"s{k}")]
                assert seqs[: acked[k]] == list(range(acked[k]))
                assert len(seqs) <= acked[k] + 1  # at most the one in flight at close
    assert set(outcomes) == {"StoreClosed"}, outcomes
