"""Deleting a session in bounded steps, whole or gone to every reader (issue 20 item 16).

Deleting a session with a very long log in one transaction held the write lock
for as long as SQLite needed to delete every row (0.76 s for 1,000,000 events),
and every other writer of every process waited that long. A session with more
than ``DELETE_STEP_ROWS`` event and audit rows is therefore deleted in steps:

1. **Unpublish** (one transaction, the one that checks ``delete_if_unchanged``'s
   condition): the snapshot, the inventory row, the log head (``event_logs``), any
   ``orphans`` row and a LangGraph thread's checkpoints, blobs and pending writes
   go, exactly as a one-transaction delete removes them, and a ``deletions`` row
   names the id. (Checkpoint rows are deleted here, not in steps: readers reach
   them by key, not through a head, so they would stay readable otherwise; their
   number does not decide whether a deletion is stepped.) From this commit on
   no reader sees anything of the session: ``load``/``meta`` raise
   ``SessionNotFound``, listings and orphans leave it out, its log reads empty (a
   log is read through its head), checkpoint reads find nothing, and audit reads
   skip the ids in ``deletions``. Nobody can delete it again either: there is no
   row left to delete (``delete`` is a no-op, ``delete_if_unchanged`` False).
2. **Steps** (:func:`~sqlstore.sqlite.rows.delete_step`, one transaction each,
   ``rows.DELETE_STEP_ROWS`` rows at most, a
   ``DELETE_STEP_PAUSE_S`` pause between them so other processes' writers take
   the lock): the event rows, then the audit rows, oldest first.
3. **Finish** (the last step): whatever else is left under the id goes through
   :func:`~sqlstore.sqlite.rows.delete_session_rows`, and the ``deletions`` row
   with it.

So SPEC §3.1's "events, audit rows and the snapshot of a session are removed in
one transaction" holds as every reader sees it: the one transaction that
unpublishes removes the session for all of them at once, and what the later
steps delete is already unreachable.

**Crashes.** A ``kill -9`` (or power loss) between steps leaves the ``deletions``
row and some unreachable rows; opening the store for writing finishes every
pending deletion (in steps), and so does a later ``delete`` of that id.
Nothing half-deleted is ever visible in between.

**Writes under the id meanwhile.** A save, a new log, an audit record, a
checkpoint ``put``/``put_writes`` (or a thread copied or imported onto it) under an
id whose deletion is pending first finishes that deletion inside its own
transaction (:func:`~sqlstore.sqlite.rows.finish_pending_deletion`), so old
rows never mix with new ones: the new session starts from nothing, with a new
log generation, and a checkpoint put after the delete is the first checkpoint
of a new thread (without ``session=`` it is an orphan, as after a one-step
delete), never joined to what was deleted. That one write may hold the lock
for the rest of the deletion; it only happens when a session is written while
it is being deleted.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence

import apsw

from sqlstore.sqlite import rows

DELETE_STEP_PAUSE_S = 0.002
"""Pause between two steps of one deletion, so other writers get the lock."""


def _count_upto(conn: apsw.Connection, sql: str, session_id: str, limit: int) -> int:
    row = conn.execute(f"SELECT count(*) FROM ({sql} LIMIT ?)", (session_id, limit)).fetchone()
    return int(row[0]) if row else 0


def is_large(conn: apsw.Connection, session_id: str) -> bool:
    """True when the id holds more than ``rows.DELETE_STEP_ROWS`` event and audit rows."""
    head = conn.execute(
        "SELECT length FROM event_logs WHERE session_id = ?", (session_id,)
    ).fetchone()
    events = int(head[0]) if head else 0
    if events > rows.DELETE_STEP_ROWS:
        return True
    audit = _count_upto(
        conn, "SELECT 1 FROM tool_calls WHERE session_id = ?", session_id, rows.DELETE_STEP_ROWS + 1
    )
    return events + audit > rows.DELETE_STEP_ROWS


def start(conn: apsw.Connection, session_id: str, now_ns: int) -> bool:
    """Delete the session inside the caller's write transaction, or unpublish a large one.

    Returns True when steps remain (run them with :func:`run_steps` after the commit),
    False when everything is gone already.
    """
    if conn.execute("SELECT 1 FROM deletions WHERE session_id = ?", (session_id,)).fetchone():
        return True  # already unpublished (say, before a crash): help finish it in steps
    if not is_large(conn, session_id):
        rows.delete_session_rows(conn, session_id)
        return False
    conn.execute("DELETE FROM event_logs WHERE session_id = ?", (session_id,))
    rows.delete_checkpoint_rows(conn, session_id)
    rows.unpublish(conn, session_id)
    conn.execute(
        "INSERT INTO deletions (session_id, started_at_ns) VALUES (?, ?)", (session_id, now_ns)
    )
    return True


def run_steps(
    write: Callable[[Callable[[apsw.Connection], bool]], bool], session_ids: Sequence[str]
) -> None:
    """Run the remaining steps of each pending deletion, one write transaction per step."""
    for session_id in session_ids:
        one = functools.partial(_step_of, session_id)
        while not write(one):
            time.sleep(DELETE_STEP_PAUSE_S)


def _step_of(session_id: str, conn: apsw.Connection) -> bool:
    return rows.delete_step(conn, session_id)


def pending(conn: apsw.Connection) -> list[str]:
    """Return the ids whose deletion was started and not finished (after a crash, say)."""
    return [str(r[0]) for r in conn.execute("SELECT session_id FROM deletions ORDER BY 1")]
