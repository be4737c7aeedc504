"""The cursored read loop shared by every backend: resume, page, follow, expire.

A backend supplies a :class:`LogSource` (how to read one page of raw records and
how to wait for a change); :func:`read_after` supplies the contract of SPEC §3.2:
records strictly after the cursor, a total ``limit`` that gaps use up and that
ends even a follow, ``live`` only after the initial drain, ``CursorExpired`` as
soon as the log a reader is positioned in is deleted or replaced, and adoption of
the generation of a log that appears while a follower waits at the start.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from sqlstore.cursor import CursorEncoder, check_boundary, decode_cursor
from sqlstore.errors import CursorExpired, StoreCorrupt
from sqlstore.events import Event, LogRecord, decode_event
from sqlstore.model import validate_session_id

READ_PAGE_RECORDS = 512
"""Records fetched per short read transaction."""

FOLLOW_RECHECK_S = 1.0
"""A parked follower re-reads the tail at least this often even without a wake-up."""


@dataclass(frozen=True, slots=True)
class RawRecord:
    """One stored record: its 1-based position, kind and encoded body (event JSON or gap reason)."""

    pos: int
    is_gap: bool
    body: bytes | str


class LogSource(Protocol):
    """What :func:`read_after` needs from a backend for one read."""

    def head(self, session_id: str) -> tuple[str | None, int]:
        """Return (generation, length) of the log, or (None, 0) when there is none."""

    def fetch(self, session_id: str, after: int, limit: int) -> tuple[str | None, list[RawRecord]]:
        """Return the current generation and up to ``limit`` records with pos > ``after``."""

    def change_token(self) -> object:
        """Return a token that changes whenever any log may have changed."""

    def wait(self, token: object, stop: threading.Event | None, timeout_s: float) -> None:
        """Block until the change token differs from ``token``, ``stop`` is set, or timeout."""

    def close(self) -> None:
        """Release what the source holds (for example a dedicated connection)."""


def read_after(
    source: LogSource,
    session_id: str,
    after: str,
    *,
    limit: int = 0,
    follow: bool = False,
    stop: threading.Event | None = None,
) -> Iterator[LogRecord]:
    """Validate the cursor now, then return an iterator over the records after it.

    Raises:
        InvalidSessionId: the id is not valid.
        CursorMalformed: the cursor is not a cursor of this session's log.
        CursorExpired: the cursor is from an earlier generation of the log.
        TypeError: ``limit`` is not an int (a bool neither).
        ValueError: ``limit`` is negative.
    """
    validate_session_id(session_id)
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise TypeError(f"limit must be an int, not {type(limit).__name__}")
    if limit < 0:
        raise ValueError("limit must be >= 0 (0 means no limit)")
    try:
        generation, length = source.head(session_id)
        position = decode_cursor(after, session_id, generation)
        check_boundary(position, length)
    except BaseException:
        source.close()
        raise
    return _records(source, session_id, generation, position, limit, follow, stop)


def _records(
    source: LogSource,
    session_id: str,
    generation: str | None,
    position: int,
    limit: int,
    follow: bool,
    stop: threading.Event | None,
) -> Iterator[LogRecord]:
    remaining = limit if limit > 0 else -1
    live = False
    encoder: CursorEncoder | None = None
    try:
        while remaining != 0:
            if stop is not None and stop.is_set():
                return
            token = source.change_token()
            want = READ_PAGE_RECORDS if remaining < 0 else min(READ_PAGE_RECORDS, remaining)
            current, rows = source.fetch(session_id, position, want)
            if generation is None:
                generation = current  # adopt a log that appeared while we waited at the start
            elif current != generation:
                raise CursorExpired(
                    f"the event log of {session_id!r} was deleted or replaced while reading "
                    f"(cursor generation {generation!r})"
                )
            if rows:
                assert generation is not None
                if encoder is None:
                    encoder = CursorEncoder(session_id, generation)
                for row in rows:
                    position = row.pos
                    yield to_record(session_id, encoder(row.pos), row, live)
                    if remaining > 0:
                        remaining -= 1
                        if remaining == 0:
                            return
                continue
            if not follow:
                return
            live = True
            source.wait(token, stop, FOLLOW_RECHECK_S)
    finally:
        source.close()


def to_record(session_id: str, cursor: str, row: RawRecord, live: bool) -> LogRecord:
    """Build the ``LogRecord`` of one stored record (``StoreCorrupt`` if its bytes are damaged)."""
    if row.is_gap:
        reason = _gap_reason(session_id, row)
        return LogRecord(kind="gap", event=None, gap_reason=reason, cursor=cursor, live=live)
    event = _decode(session_id, row)
    return LogRecord(kind="event", event=event, gap_reason="", cursor=cursor, live=live)


def _decode(session_id: str, row: RawRecord) -> Event:
    """Decode a stored event; damage in the stored bytes is reported as ``StoreCorrupt``."""
    try:
        return decode_event(row.body)
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        raise StoreCorrupt(
            f"record {row.pos} of the event log of {session_id!r} is damaged "
            f"({type(exc).__name__}: {exc})"
        ) from exc


def _gap_reason(session_id: str, row: RawRecord) -> str:
    if isinstance(row.body, str):
        return row.body
    try:
        return row.body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StoreCorrupt(
            f"gap record {row.pos} of the event log of {session_id!r} is damaged"
        ) from exc


def read_events(source: LogSource, session_id: str) -> Iterator[Event]:
    """Yield the events of a log in append order, skipping gaps (no cursors built)."""
    validate_session_id(session_id)
    return _events(source, session_id)


def _events(source: LogSource, session_id: str) -> Iterator[Event]:
    position = 0
    generation: str | None = None
    try:
        while True:
            current, rows = source.fetch(session_id, position, READ_PAGE_RECORDS)
            if generation is None:
                generation = current
            elif current != generation:
                raise CursorExpired(f"the event log of {session_id!r} was replaced while reading")
            if not rows:
                return
            for row in rows:
                position = row.pos
                if not row.is_gap:
                    yield _decode(session_id, row)
    finally:
        source.close()
