"""Event logs in SQLite (``SQLiteStore.events``): durable appends, cursored reads, follow."""

from __future__ import annotations

import builtins
import threading
from collections.abc import Iterator, Sequence

import apsw

from sqlstore import clock
from sqlstore.backward import (
    check_request,
    data_rows,
    end_position,
    row_limit,
    tail_records,
    tail_rows,
)
from sqlstore.changes import prepare
from sqlstore.cursor import encode_cursor
from sqlstore.events import DataPage, Event, LogRecord, check_record_size, encode_event
from sqlstore.model import validate_session_id
from sqlstore.sqlite import rows
from sqlstore.sqlite.database import Database, Follower
from sqlstore.sqlite.translate import translated
from sqlstore.sqlite.units import apply_changes
from sqlstore.tail import RawRecord, read_after, read_events


def _fetch(
    conn: apsw.Connection, session_id: str, after: int, limit: int
) -> tuple[str | None, list[RawRecord]]:
    conn.execute("BEGIN")
    try:
        head = conn.execute(
            "SELECT generation FROM event_logs WHERE session_id = ?", (session_id,)
        ).fetchone()
        if head is None:
            return None, []
        found = [
            RawRecord(pos, bool(is_gap), body)
            for pos, is_gap, body in conn.execute(
                "SELECT pos, is_gap, body FROM events WHERE session_id = ? AND pos > ? "
                "ORDER BY pos LIMIT ?",
                (session_id, after, limit),
            )
        ]
        return str(head[0]), found
    finally:
        conn.execute("COMMIT")


TAIL_SQL = (
    "SELECT pos, is_gap, body FROM events WHERE session_id = ? AND pos < ? "
    "ORDER BY pos DESC LIMIT ?"
)
"""The records before a position, newest first: a seek on the (session_id, pos) key."""


TAIL_END_SQL = (
    "SELECT l.generation, e.pos, e.is_gap, e.body FROM events AS e "
    "JOIN event_logs AS l ON l.session_id = e.session_id AND e.pos <= l.length "
    "WHERE e.session_id = ? ORDER BY e.pos DESC LIMIT ?"
)
"""The last records of a log with its generation, newest first: one statement (so one
consistent snapshot without BEGIN/COMMIT) and one seek on the (session_id, pos) key."""


def _fetch_tail(db: Database, session_id: str, limit: int) -> list[LogRecord]:
    """Read the last ``limit`` records of a log in one statement; append order."""
    found = db.read_statement(TAIL_END_SQL, (session_id, row_limit(limit)))
    if not found:
        return []
    return tail_rows(session_id, str(found[0][0]), found)


def _fetch_before(
    conn: apsw.Connection, session_id: str, before: str, limit: int
) -> tuple[str | None, list[RawRecord]]:
    """Read the records before cursor ``before`` newest first by index seek; append order."""
    generation, length = _head(conn, session_id)
    end = end_position(before, session_id, generation, length)
    found = [
        RawRecord(pos, bool(is_gap), body)
        for pos, is_gap, body in conn.execute(TAIL_SQL, (session_id, end, row_limit(limit)))
    ]
    found.reverse()
    return generation, found


def _head(conn: apsw.Connection, session_id: str) -> tuple[str | None, int]:
    row = conn.execute(
        "SELECT generation, length FROM event_logs WHERE session_id = ?", (session_id,)
    ).fetchone()
    return (None, 0) if row is None else (str(row[0]), int(row[1]))


class _PooledSource:
    """A log source for plain reads: one pooled connection per page."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def head(self, session_id: str) -> tuple[str | None, int]:
        with self._db.reader() as conn:
            return _head(conn, session_id)

    def fetch(self, session_id: str, after: int, limit: int) -> tuple[str | None, list[RawRecord]]:
        with self._db.reader() as conn:
            return _fetch(conn, session_id, after, limit)

    def change_token(self) -> object:
        return None

    def wait(self, token: object, stop: threading.Event | None, timeout_s: float) -> None:
        raise AssertionError("a pooled source never follows")

    def close(self) -> None:
        return None


class _FollowSource:
    """A log source for following reads: one dedicated connection watching data_version."""

    def __init__(self, db: Database) -> None:
        self._follower: Follower = db.follower()
        self._db = db

    def head(self, session_id: str) -> tuple[str | None, int]:
        with self._db.reader() as conn:
            return _head(conn, session_id)

    def fetch(self, session_id: str, after: int, limit: int) -> tuple[str | None, list[RawRecord]]:
        with translated(self._db.path):
            return _fetch(self._follower.conn, session_id, after, limit)

    def change_token(self) -> object:
        return self._follower.change_token()

    def wait(self, token: object, stop: threading.Event | None, timeout_s: float) -> None:
        self._follower.wait(token, stop, timeout_s)

    def close(self) -> None:
        self._follower.release()


class SQLiteEvents:
    """Append-only event logs with generation-checked cursors (SPEC §3.2)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def _append(self, session_id: str, is_gap: bool, event_type: str, body: bytes) -> str:
        validate_session_id(session_id)

        def op(conn: apsw.Connection) -> str:
            now_ns = clock.now_ns()
            generation, pos = rows.append_record(
                conn, session_id, is_gap=is_gap, event_type=event_type, body=body, now_ns=now_ns
            )
            rows.touch_session(conn, session_id, now_ns)
            return encode_cursor(session_id, generation, pos)

        return self._db.write(op)

    def append(self, session_id: str, event: Event) -> None:
        """Append an event; returns once it is on stable storage (per durability).

        On error the outcome is unknown and the caller must not retry.

        Raises:
            InvalidSessionId: the id is not valid (nothing written).
            InvalidEvent: the event is not JSON-serialisable or too large (nothing written).
            StoreBusy: the write lock was not free within the busy timeout.
        """
        self.append_event(session_id, event)

    def append_event(self, session_id: str, event: Event) -> str:
        """Append an event durably and return the cursor just after it."""
        body = encode_event(event)
        return self._append(session_id, False, event.type, body)

    def append_gap(self, session_id: str, reason: str) -> str:
        """Append a gap marker durably and return the cursor just after it."""
        if not isinstance(reason, str):
            raise TypeError("gap reason must be str")
        body = check_record_size(reason.encode("utf-8"), "gap reason")
        return self._append(session_id, True, "", body)

    def append_events(self, session_id: str, events: Sequence[Event]) -> builtins.list[str]:
        """Append a batch of events as one unit: all or none, one transaction, one fsync.

        The batch is one write of the group commit (it commits with other writers'
        appends queued at the same time, and fails alone). Returns the cursor just
        after each event, in order; an empty batch writes nothing and returns ``[]``.
        On a store error the outcome is unknown (nothing or the whole batch) and the
        caller must not retry; input errors are raised before anything is written.

        Raises:
            InvalidSessionId: the id is not valid.
            TypeError: ``events`` is not a sequence of events.
            InvalidEvent: an event is not JSON-serialisable or too large (its index
                is named); nothing written.
            StoreBusy, StoreFull, StoreIOError: the transaction failed; nothing written.
        """
        changes = prepare(session_id, events=events)
        if not changes.events:
            return []
        return self._db.write(lambda conn: apply_changes(conn, changes).cursors)

    def read_tail(self, session_id: str, limit: int) -> builtins.list[LogRecord]:
        """Return the last ``limit`` records in append order, by index seek (``sqlstore.backward``).

        Raises:
            InvalidSessionId, TypeError, ValueError: bad arguments (``limit`` < 1).
        """
        return self.read_before(session_id, "", limit=limit)

    def read_before(self, session_id: str, before: str, *, limit: int) -> builtins.list[LogRecord]:
        """Return at most ``limit`` records strictly before cursor ``before`` (``""`` = the end).

        In append order, gaps included; one short read transaction and an index seek,
        whatever the log's length. Page backwards with ``before=page[0].cursor``.

        Raises:
            CursorMalformed: the cursor is not of this session's log, or past its end.
            CursorExpired: the cursor is of an earlier generation of the log.
            InvalidSessionId, TypeError, ValueError: bad arguments (``limit`` < 1).
        """
        check_request(session_id, before, limit)
        if before == "":
            return _fetch_tail(self._db, session_id, limit)
        generation, found = self._db.read(
            lambda conn: _fetch_before(conn, session_id, before, limit)
        )
        return tail_records(session_id, generation, found)

    def read_data_before(self, session_id: str, before: str = "", *, limit: int) -> DataPage:
        """Return ``read_before``'s records as a lean ``DataPage`` (see ``sqlstore.backward``).

        The tail (``before=""``) is one statement; errors as ``read_before``.
        """
        check_request(session_id, before, limit)
        if before == "":
            found = self._db.read_statement(TAIL_END_SQL, (session_id, row_limit(limit)))
            return data_rows(session_id, str(found[0][0]) if found else None, found)
        generation, raw = self._db.read(lambda conn: _fetch_before(conn, session_id, before, limit))
        return data_rows(session_id, generation, [(r.pos, r.is_gap, r.body) for r in reversed(raw)])

    def read(self, session_id: str) -> Iterator[Event]:
        """Yield the events of a log in append order, gaps skipped; unknown id → empty."""
        return read_events(_PooledSource(self._db), session_id)

    def read_after(
        self,
        session_id: str,
        after: str = "",
        *,
        limit: int = 0,
        follow: bool = False,
        stop: threading.Event | None = None,
    ) -> Iterator[LogRecord]:
        """Yield records strictly after ``after``; see :func:`sqlstore.tail.read_after`.

        A following read holds one reader connection until it ends (stop set,
        limit reached, iterator closed, or an error).
        """
        source = _FollowSource(self._db) if follow else _PooledSource(self._db)
        return read_after(source, session_id, after, limit=limit, follow=follow, stop=stop)
