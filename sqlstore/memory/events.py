"""Event logs of a ``MemoryStore``, read through :mod:`sqlstore.tail` like every backend's."""

from __future__ import annotations

import builtins
import threading
import time
from collections.abc import Iterator, Sequence

from sqlstore import clock
from sqlstore.backward import check_request, data_page, end_position, tail_records
from sqlstore.changes import prepare
from sqlstore.cursor import encode_cursor, new_generation
from sqlstore.events import DataPage, Event, LogRecord, check_record_size, encode_event
from sqlstore.memory.state import Log, MemoryState
from sqlstore.memory.units import apply_changes
from sqlstore.model import validate_session_id
from sqlstore.tail import RawRecord, read_after, read_events


class _MemorySource:
    def __init__(self, state: MemoryState) -> None:
        self._s = state

    def head(self, session_id: str) -> tuple[str | None, int]:
        with self._s.lock:
            self._s.check_open()
            log = self._s.logs.get(session_id)
            return (None, 0) if log is None else (log.generation, len(log.records))

    def fetch(self, session_id: str, after: int, limit: int) -> tuple[str | None, list[RawRecord]]:
        with self._s.lock:
            self._s.check_open()
            log = self._s.logs.get(session_id)
            if log is None:
                return None, []
            return log.generation, log.records[after : after + limit]

    def change_token(self) -> object:
        return self._s.change_count

    def wait(self, token: object, stop: threading.Event | None, timeout_s: float) -> None:
        deadline = clock_monotonic() + timeout_s
        with self._s.lock:
            while self._s.change_count == token and not self._s.closed:
                if stop is not None and stop.is_set():
                    return
                left = deadline - clock_monotonic()
                if left <= 0:
                    return
                self._s.changed.wait(min(left, 0.05))

    def close(self) -> None:
        return None


def clock_monotonic() -> float:
    """Monotonic seconds for wait deadlines (not wall time, so freezegun cannot stall waits)."""
    return time.monotonic()


class MemoryEvents:
    """Event logs of a ``MemoryStore``."""

    def __init__(self, state: MemoryState) -> None:
        self._s = state

    def _append(self, session_id: str, is_gap: bool, body: bytes | str) -> str:
        validate_session_id(session_id)
        now_ns = clock.now_ns()
        with self._s.lock:
            self._s.check_open()
            log = self._s.logs.get(session_id)
            if log is None:
                log = self._s.logs[session_id] = Log(new_generation())
            pos = len(log.records) + 1
            log.records.append(RawRecord(pos, is_gap, body))
            self._s.touch(session_id, now_ns)
            self._s.notify()
            return encode_cursor(session_id, log.generation, pos)

    def append(self, session_id: str, event: Event) -> None:
        """Append an event."""
        self._append(session_id, False, encode_event(event))

    def append_event(self, session_id: str, event: Event) -> str:
        """Append an event and return the cursor after it."""
        return self._append(session_id, False, encode_event(event))

    def append_gap(self, session_id: str, reason: str) -> str:
        """Append a gap marker and return the cursor after it."""
        if not isinstance(reason, str):
            raise TypeError("gap reason must be str")
        check_record_size(reason.encode("utf-8"), "gap reason")
        return self._append(session_id, True, reason)

    def append_events(self, session_id: str, events: Sequence[Event]) -> builtins.list[str]:
        """Append a batch of events as one unit (all or none); return a cursor per event."""
        changes = prepare(session_id, events=events)
        if not changes.events:
            return []
        return apply_changes(self._s, changes).cursors

    def read_tail(self, session_id: str, limit: int) -> builtins.list[LogRecord]:
        """Return the last ``limit`` records in append order (see ``sqlstore.backward``)."""
        return self.read_before(session_id, "", limit=limit)

    def read_before(self, session_id: str, before: str, *, limit: int) -> builtins.list[LogRecord]:
        """Return at most ``limit`` records strictly before cursor ``before`` (``""`` = end)."""
        check_request(session_id, before, limit)
        with self._s.lock:
            self._s.check_open()
            log = self._s.logs.get(session_id)
            generation = None if log is None else log.generation
            records = [] if log is None else log.records
            end = end_position(before, session_id, generation, len(records))
            found = records[max(0, end - 1 - limit) : max(0, end - 1)]
        return tail_records(session_id, generation, found)

    def read_data_before(self, session_id: str, before: str = "", *, limit: int) -> DataPage:
        """Return ``read_before``'s records as a lean ``DataPage`` (see ``sqlstore.backward``)."""
        return data_page(session_id, self.read_before(session_id, before, limit=limit))

    def read(self, session_id: str) -> Iterator[Event]:
        """Yield the events in append order, skipping gaps."""
        return read_events(_MemorySource(self._s), session_id)

    def read_after(
        self,
        session_id: str,
        after: str = "",
        *,
        limit: int = 0,
        follow: bool = False,
        stop: threading.Event | None = None,
    ) -> Iterator[LogRecord]:
        """Yield records strictly after ``after`` (see :func:`sqlstore.tail.read_after`)."""
        return read_after(
            _MemorySource(self._s), session_id, after, limit=limit, follow=follow, stop=stop
        )

    def reset(self, session_id: str) -> None:
        """Drop a session's log so the next append starts a new generation."""
        with self._s.lock:
            if self._s.logs.pop(session_id, None) is not None:
                self._s.notify()
