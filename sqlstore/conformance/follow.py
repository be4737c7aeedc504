"""A follower thread for tests: runs ``read_after(follow=True)`` and hands records over a queue.

Every wait is bounded by a timeout so a backend bug fails the test instead of
hanging CI; nothing here asserts how fast anything happens.
"""

from __future__ import annotations

import queue
import threading
from types import TracebackType
from typing import Self

from sqlstore.conformance.base import FOLLOW_TIMEOUT_S
from sqlstore.events import LogRecord
from sqlstore.ports import EventLog

_POLL_S = 0.05


class Follower:
    """Follow one session's log on a background thread until stopped or the read ends."""

    def __init__(
        self,
        events: EventLog,
        session_id: str,
        after: str = "",
        *,
        limit: int = 0,
        timeout_s: float = FOLLOW_TIMEOUT_S,
    ) -> None:
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.ended = threading.Event()
        self.timeout_s = timeout_s
        self._records: queue.Queue[LogRecord] = queue.Queue()
        self._events = events
        self._args = (session_id, after, limit)
        self._thread = threading.Thread(target=self._run, name="conformance-follower", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        session_id, after, limit = self._args
        try:
            for record in self._events.read_after(
                session_id, after, limit=limit, follow=True, stop=self.stop
            ):
                self._records.put(record)
        except BaseException as exc:  # handed to the test thread, which re-raises or inspects it
            self.error = exc
        finally:
            self.ended.set()

    def take(self, count: int) -> list[LogRecord]:
        """Return the next ``count`` records, failing if they do not all arrive in time."""
        got: list[LogRecord] = []
        waited = 0.0
        while len(got) < count:
            try:
                got.append(self._records.get(timeout=_POLL_S))
                continue
            except queue.Empty:
                waited += _POLL_S
            if self.ended.is_set() and self._records.empty():
                raise AssertionError(
                    f"follower ended after {len(got)} of {count} records (error: {self.error!r})"
                )
            if waited >= self.timeout_s:
                raise AssertionError(
                    f"follower delivered {len(got)} of {count} records in {self.timeout_s} s"
                )
        return got

    def pending(self) -> list[LogRecord]:
        """Return the records delivered but not yet taken, without waiting."""
        out: list[LogRecord] = []
        while True:
            try:
                out.append(self._records.get_nowait())
            except queue.Empty:
                return out

    def wait_end(self) -> BaseException | None:
        """Wait (bounded) for the read to end by itself; return the error it raised, if any."""
        if not self.ended.wait(self.timeout_s):
            self.stop.set()
            raise AssertionError(f"the follow did not end within {self.timeout_s} s")
        self._thread.join(self.timeout_s)
        return self.error

    def close(self) -> None:
        """Set ``stop`` and wait (bounded) for the read to end."""
        self.stop.set()
        self._thread.join(self.timeout_s)
        if self._thread.is_alive():
            raise AssertionError(f"the follow did not end within {self.timeout_s} s of stop")

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.stop.set()
