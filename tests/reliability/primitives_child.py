"""Child processes of ``test_primitives_faults.py`` (run as a script).

Usage:
    primitives_child.py lock DB                 hold BEGIN IMMEDIATE until a line on stdin
    primitives_child.py fill DB EXTRA_BYTES     apply batches under RLIMIT_FSIZE until refused
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys

import apsw

from sqlstore import Event, Session, SQLiteStore, ToolCallRecord
from sqlstore.errors import StoreError

FILL_BATCH = 8
FILL_TEXT_BYTES = 6_000


def lock(db: str) -> None:
    """Take the write lock of ``db`` with a raw connection and hold it until told to stop."""
    conn = apsw.Connection(db)
    conn.execute("BEGIN IMMEDIATE")
    print("locked", flush=True)
    sys.stdin.readline()
    conn.execute("ROLLBACK")
    conn.close()
    print("released", flush=True)


def fill(db: str, extra_bytes: str) -> None:
    """Apply batches (snapshot + events + audit) until the file-size limit refuses one."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    largest = max(os.path.getsize(db + s) for s in ("", "-wal") if os.path.exists(db + s))
    resource.setrlimit(resource.RLIMIT_FSIZE, (largest + int(extra_bytes), resource.RLIM_INFINITY))
    store = SQLiteStore(db)
    acked = 0
    error: list[str] = []
    for batch in range(10_000):
        events = [
            Event("fill", seq=slot, text="y" * FILL_TEXT_BYTES, data={"batch": batch})
            for slot in range(FILL_BATCH)
        ]
        session = Session.new("full", title=f"batch-{batch}")
        try:
            store.apply(
                "full",
                snapshot=session,
                events=events,
                audit=[ToolCallRecord("full", call_id=f"c{batch}")],
            )
            acked += 1
        except StoreError as exc:
            error = [type(exc).__name__, str(exc), exc.hint]
            break
    try:
        store.events.append_events("full", [Event("late", text="z" * 200_000)])
        late = "succeeded"
    except StoreError as exc:
        late = type(exc).__name__
    print(json.dumps({"acked": acked, "error": error, "late": late}), flush=True)
    store.close()


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    {"lock": lock, "fill": fill}[command](*args)
