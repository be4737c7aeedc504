"""Event logs in Redis streams (``RedisStore.events``): appends, cursored reads, follow.

A log is one stream per session. Entry ids are explicit: record number ``n``
(1-based) is stored as ``<n>-0``, so the cursor position — the decimal count of
records up to and including this one, as in every sqlstore backend — *is* the
entry id, and ``XRANGE key <n+1>-0 +`` reads strictly after it. (mecatl's Redis
store uses auto ids instead; our cursors are the same ``cur/1`` text as the
SQLite and memory backends, not mecatl-Redis positions.) The generation lives
in its own key, minted by the first append and deleted with the session.

A follower parks in ``XREAD BLOCK`` for short slices and re-reads the
generation after every slice, so a log deleted (and perhaps recreated) under a
parked follower raises ``CursorExpired`` within about one slice.
"""

from __future__ import annotations

import builtins
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

from sqlstore import clock
from sqlstore.backward import check_request, data_page, end_position, row_limit, tail_records
from sqlstore.changes import prepare
from sqlstore.cursor import encode_cursor, new_generation
from sqlstore.errors import CursorExpired
from sqlstore.events import DataPage, Event, LogRecord, check_record_size, encode_event
from sqlstore.model import validate_session_id
from sqlstore.redis import keys
from sqlstore.redis.connection import Connection
from sqlstore.redis.units import apply_unit
from sqlstore.tail import RawRecord, read_after, read_events

FOLLOW_SLICE_MS = 200
"""Longest ``XREAD BLOCK`` of a parked follower; stop and generation are re-checked after it."""


class _StreamSource:
    """A :class:`sqlstore.tail.LogSource` over one session's stream."""

    def __init__(self, conn: Connection) -> None:
        self._c = conn
        self._session_id = ""
        self._after = 0
        self._generation: str | None = None

    def head(self, session_id: str) -> tuple[str | None, int]:
        k = self._c.keys
        with self._c.guard():
            generation, length = self._c.log_read(
                keys=[k.generation(session_id), k.events(session_id)], args=["", "0"]
            )
        return (None, 0) if not generation else (generation.decode(), int(length))

    def fetch(self, session_id: str, after: int, limit: int) -> tuple[str | None, list[RawRecord]]:
        k = self._c.keys
        with self._c.guard():
            generation, entries = self._c.log_read(
                keys=[k.generation(session_id), k.events(session_id)],
                args=[str(after + 1), str(limit)],
            )
        current = generation.decode() if generation else None
        self._session_id, self._after, self._generation = session_id, after, current
        if current is None:
            return None, []
        return current, [_raw(entry_id, _pairs(fields)) for entry_id, fields in entries]

    def change_token(self) -> object:
        return None

    def wait(self, token: object, stop: threading.Event | None, timeout_s: float) -> None:
        """Park on the stream after the last fetched position, in short blocking slices."""
        k = self._c.keys
        stream = k.events(self._session_id)
        gen_key = k.generation(self._session_id)
        deadline = time.monotonic() + timeout_s
        while not self._c.closed:
            if stop is not None and stop.is_set():
                return
            left_ms = int((deadline - time.monotonic()) * 1000)
            if left_ms <= 0:
                return
            with self._c.guard():
                got = self._c.client.xread(
                    {stream: f"{self._after}-0"}, count=1, block=min(FOLLOW_SLICE_MS, left_ms)
                )
                if got:
                    return
                generation = self._c.client.get(gen_key)
            if (None if generation is None else generation.decode()) != self._generation:
                return

    def close(self) -> None:
        return None


def _pairs(flat: list[bytes]) -> dict[bytes, bytes]:
    return dict(zip(flat[::2], flat[1::2], strict=True))


def _raw(entry_id: bytes, fields: dict[bytes, bytes]) -> RawRecord:
    pos = int(entry_id.split(b"-", 1)[0])
    body = fields[b"b"]
    if fields[b"k"] == b"g":
        return RawRecord(pos, True, body.decode("utf-8"))
    return RawRecord(pos, False, body)


class RedisEvents:
    """Append-only event logs with generation-checked cursors (SPEC §3.2)."""

    def __init__(self, conn: Connection) -> None:
        self._c = conn

    def _append(self, session_id: str, kind: str, body: bytes) -> str:
        validate_session_id(session_id)
        k = self._c.keys
        now_ns = clock.now_ns()
        with self._c.guard():
            reply: list[Any] = self._c.append(
                keys=[
                    k.events(session_id),
                    k.generation(session_id),
                    k.session(session_id),
                    k.page_index,
                    k.age_index,
                    k.write_seq,
                ],
                args=[
                    new_generation(),
                    kind,
                    body,
                    str(now_ns),
                    keys.page_prefix(now_ns),
                    keys.age_prefix(now_ns),
                    keys.hex_id(session_id),
                    self._c.prefix,
                ],
            )
        generation, pos = reply
        return encode_cursor(session_id, generation.decode(), int(pos))

    def append(self, session_id: str, event: Event) -> None:
        """Append an event; returns once Redis acknowledged it (see docs/redis.md).

        On error the outcome is unknown and the caller must not retry.

        Raises:
            InvalidSessionId: the id is not valid (nothing written).
            InvalidEvent: the event is not JSON-serialisable or too large (nothing written).
            StoreUnavailable: Redis cannot be reached.
        """
        self.append_event(session_id, event)

    def append_event(self, session_id: str, event: Event) -> str:
        """Append an event and return the cursor just after it."""
        return self._append(session_id, "e", encode_event(event))

    def append_gap(self, session_id: str, reason: str) -> str:
        """Append a gap marker and return the cursor just after it."""
        if not isinstance(reason, str):
            raise TypeError("gap reason must be str")
        body = check_record_size(reason.encode("utf-8"), "gap reason")
        return self._append(session_id, "g", body)

    def append_events(self, session_id: str, events: Sequence[Event]) -> builtins.list[str]:
        """Append a batch of events as one atomic script (all or none); a cursor per event.

        An empty batch writes nothing and returns ``[]``. Input is checked before
        anything is sent.

        Raises:
            InvalidSessionId, TypeError, InvalidEvent: bad input; nothing written.
            StoreUnavailable, StoreFull: the script did not run; nothing written.
        """
        changes = prepare(session_id, events=events)
        if not changes.events:
            return []
        return apply_unit(self._c, changes).cursors

    def read_tail(self, session_id: str, limit: int) -> builtins.list[LogRecord]:
        """Return the last ``limit`` records in append order (``XREVRANGE``, no scan)."""
        return self.read_before(session_id, "", limit=limit)

    def read_before(self, session_id: str, before: str, *, limit: int) -> builtins.list[LogRecord]:
        """Return at most ``limit`` records strictly before cursor ``before`` (``""`` = end).

        Raises:
            CursorMalformed, CursorExpired: as for ``read_after`` (see ``sqlstore.backward``).
        """
        check_request(session_id, before, limit)
        k = self._c.keys
        log_keys = [k.generation(session_id), k.events(session_id)]
        expected = ""
        last = ""
        if before:
            with self._c.guard():
                head, length = self._c.log_read(keys=log_keys, args=["", "0"])
            expected = head.decode() if head else ""
            end = end_position(before, session_id, expected or None, int(length))
            last = str(end - 1)
        with self._c.guard():
            head, length, entries = self._c.log_tail(
                keys=log_keys, args=[expected, last, str(row_limit(limit))]
            )
        generation = head.decode() if head else None
        if expected and generation != expected:
            raise CursorExpired(
                f"the event log of {session_id!r} was deleted or replaced while reading "
                f"(cursor generation {expected!r})"
            )
        found = [_raw(entry_id, _pairs(fields)) for entry_id, fields in reversed(entries)]
        return tail_records(session_id, generation, found)

    def read_data_before(self, session_id: str, before: str = "", *, limit: int) -> DataPage:
        """Return ``read_before``'s records as a lean ``DataPage`` (see ``sqlstore.backward``)."""
        return data_page(session_id, self.read_before(session_id, before, limit=limit))

    def read(self, session_id: str) -> Iterator[Event]:
        """Yield the events of a log in append order, gaps skipped; unknown id → empty."""
        return read_events(_StreamSource(self._c), session_id)

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

        A following read borrows one pooled connection per blocking slice.
        """
        return read_after(
            _StreamSource(self._c), session_id, after, limit=limit, follow=follow, stop=stop
        )
