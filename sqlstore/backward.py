"""Reading a log from its end: ``read_tail`` and backward paging with ``read_before``.

The rules every backend shares (each backend reads its rows by an index seek,
newest first, and hands them here in append order):

* ``read_tail(id, limit)`` — the last ``limit`` records, in append order, gaps
  included, each with its cursor (``live`` is always False). It is exactly
  ``read_before(id, "", limit=limit)``.
* ``read_before(id, before, *, limit)`` — the at most ``limit`` records whose
  cursors come strictly before ``before``, in append order; ``before=""`` means
  the end of the log. A record's cursor is the position just after it, so
  ``read_before(id, page[0].cursor, limit=n)`` is the page before ``page``
  (no record twice, none skipped); an empty list means the start was reached.
  ``read_after(id, page[-1].cursor)`` resumes forwards from any page.
* ``limit`` must be an ``int`` >= 1 (``TypeError``/``ValueError`` otherwise): 0
  would be ambiguous with ``read_after``'s "no limit", which here would mean a
  scan of the whole log. A limit beyond 64 bits reads as many records as exist
  (:func:`row_limit`), on every backend.
* Cursors are checked as by ``read_after``: a cursor of another session, a bad
  one, or one past the end → ``CursorMalformed``; one of an earlier generation
  of the log (or of a log that no longer exists) → ``CursorExpired``. An unknown
  id with ``before=""`` reads ``[]``.
* ``read_data_before(id, before="", *, limit)`` — the same records as
  ``read_before`` in lean form (:class:`sqlstore.events.DataPage`): each as
  (position, type, data), no cursors or ``Event`` objects built, with the log's
  generation to build the one cursor a caller pages on. For adapters that keep
  their own records in event data and read the end of long logs on every call
  (the OpenAI Agents session's ``get_items``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlstore.cursor import CursorEncoder, check_boundary, decode_cursor, parse_cursor
from sqlstore.events import DataPage, LogRecord, decode_event, decode_type_and_data
from sqlstore.model import JSON, validate_session_id
from sqlstore.tail import RawRecord, to_record


def check_request(session_id: str, before: str, limit: int) -> None:
    """Validate the arguments of ``read_tail``/``read_before`` before anything is read.

    Raises:
        InvalidSessionId: the id is not valid.
        TypeError: ``before`` is not a str or ``limit`` not an int.
        ValueError: ``limit`` is below 1.
    """
    validate_session_id(session_id)
    if not isinstance(before, str):
        raise TypeError(f"before must be a cursor string, not {type(before).__name__}")
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise TypeError(f"limit must be an int, not {type(limit).__name__}")
    if limit < 1:
        raise ValueError(
            f"limit must be >= 1, got {limit} (read_after(id) reads a whole log from the start)"
        )


ROWS_MAX = 2**63 - 1
"""The largest row count SQLite's ``LIMIT`` and Redis's ``COUNT`` take (a signed 64-bit int)."""


def row_limit(limit: int) -> int:
    """Return ``limit`` capped to what the databases take: a larger one reads as many rows."""
    return min(limit, ROWS_MAX)


def end_position(before: str, session_id: str, generation: str | None, length: int) -> int:
    """Return the position the records must lie below (``before=""`` → past the last one).

    Raises:
        CursorMalformed: the cursor is not one of this session's log, or is past its end.
        CursorExpired: the cursor is of another generation of the log.
    """
    if before == "":
        return length + 1
    position = decode_cursor(before, session_id, generation)
    check_boundary(position, length)
    return position


def tail_rows(session_id: str, generation: str, rows: Sequence[Sequence[Any]]) -> list[LogRecord]:
    """Return the records of ``(…, pos, is_gap, body)`` rows given newest first, in append order.

    The lean twin of :func:`tail_records` for a tail read: no intermediate
    record objects; the same records, cursors and ``StoreCorrupt`` errors.
    """
    encoder = CursorEncoder(session_id, generation)
    out: list[LogRecord] = []
    for row in reversed(rows):
        pos, is_gap, body = row[-3], row[-2], row[-1]
        if is_gap:
            out.append(to_record(session_id, encoder(pos), RawRecord(pos, True, body), False))
            continue
        try:
            event = decode_event(body)
        except (ValueError, KeyError, TypeError, RecursionError):
            # Damaged bytes: the shared path raises its StoreCorrupt.
            out.append(to_record(session_id, encoder(pos), RawRecord(pos, False, body), False))
            continue
        out.append(LogRecord("event", event, "", encoder(pos)))
    return out


def data_rows(session_id: str, generation: str | None, rows: Sequence[Sequence[Any]]) -> DataPage:
    """Return the ``DataPage`` of ``(…, pos, is_gap, body)`` rows given newest first.

    Raises:
        StoreCorrupt: an event's stored bytes are damaged.
    """
    if not rows or generation is None:
        return DataPage("", [])
    out: list[tuple[int, str, dict[str, JSON] | None]] = []
    for row in reversed(rows):
        pos, is_gap, body = row[-3], row[-2], row[-1]
        if is_gap:
            out.append((pos, "", None))
            continue
        try:
            kind, data = decode_type_and_data(body)
        except (ValueError, KeyError, TypeError, RecursionError):
            to_record(session_id, "", RawRecord(pos, False, body), False)  # raises StoreCorrupt
            raise  # pragma: no cover - to_record raised
        out.append((pos, kind, data))
    return DataPage(generation, out)


def data_page(session_id: str, records: Sequence[LogRecord]) -> DataPage:
    """Return the ``DataPage`` of consecutive records of one backward read (append order).

    For backends whose ``read_data_before`` is ``read_before`` reshaped.
    """
    if not records:
        return DataPage("", [])
    generation, last = parse_cursor(records[-1].cursor, session_id)
    first = last - len(records) + 1
    out: list[tuple[int, str, dict[str, JSON] | None]] = []
    for pos, rec in enumerate(records, start=first):
        event = rec.event
        out.append((pos, "", None) if event is None else (pos, event.type, event.data))
    return DataPage(generation, out)


def tail_records(
    session_id: str, generation: str | None, rows: Sequence[RawRecord]
) -> list[LogRecord]:
    """Return the records of ``rows`` (append order) with their cursors."""
    if not rows or generation is None:
        return []
    encoder = CursorEncoder(session_id, generation)
    return [to_record(session_id, encoder(row.pos), row, False) for row in rows]
