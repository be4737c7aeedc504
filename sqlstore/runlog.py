"""openzot run logs: one JSON Lines file per agent run (JSONL-FORMATS.md §1).

Every line is one record whose first key is ``kind`` (``meta``, ``message``,
``event``, ``reset``, ``result``) followed by ``at`` (RFC 3339, UTC) and the
payload under the key named by the kind. Payloads are kept as plain JSON objects
because the format is open: message types and fields this version does not know
are carried through unchanged.

Writing: :func:`create` claims ``<dir>/<id>.jsonl`` exclusively (mode 0600) and
refuses an existing id; :func:`start` picks a free time-derived id
``YYYYMMDD-HHMMSS`` (UTC, read at call time), then ``-2`` … ``-99``. Every record
is written with one ``write`` and fsynced before the call returns. ``token`` and
``reasoningToken`` events are dropped (token-level narration).

Reading (:func:`load`) is tolerant: blank lines are skipped, a malformed complete
line sets ``truncated`` and reading goes on, a final line without ``\\n`` is a torn
write that is ignored, counted in ``torn`` and reported in ``problems``.
:func:`list_runs` lists a directory newest first by id, decoding only the ``meta``
and ``result`` lines.
"""

from __future__ import annotations

import errno
import json
import os
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Self

from sqlstore import clock
from sqlstore.jsonl import LineProblem, dumps_line, parse_jsonl
from sqlstore.model import JSON

RUNLOG_SUFFIX = ".jsonl"
BLOBS_SUFFIX = ".blobs"
RUNLOG_FILE_MODE = 0o600
MAX_ID_SUFFIX = 99
"""``start`` tries ``<stamp>``, ``<stamp>-2`` … ``<stamp>-99`` before giving up."""

DROPPED_EVENT_KINDS = frozenset({"token", "reasoningToken"})
RECORD_KINDS = frozenset({"meta", "message", "event", "reset", "result"})
_KIND_PREFIX = re.compile(rb'^\s*\{\s*"kind"\s*:\s*"([A-Za-z]+)"')


@dataclass(frozen=True, slots=True)
class Record:
    """One record of a run log, in file order; ``payload`` is ``{}`` for ``reset``."""

    kind: str
    at: str
    payload: dict[str, JSON]
    line: int = 0

    def to_json(self) -> dict[str, JSON]:
        """Return the line object, ``kind`` first."""
        out: dict[str, JSON] = {"kind": self.kind, "at": self.at}
        if self.kind != "reset":
            out[self.kind] = self.payload
        return out


@dataclass(slots=True)
class RunLog:
    """The decoded state of one run log.

    ``messages`` is the resumable conversation (the messages after the last
    ``reset``); ``discarded`` holds, in order, every message a reset removed.
    """

    id: str
    meta: dict[str, JSON] | None = None
    messages: list[dict[str, JSON]] = field(default_factory=list)
    discarded: list[dict[str, JSON]] = field(default_factory=list)
    events: list[dict[str, JSON]] = field(default_factory=list)
    result: dict[str, JSON] | None = None
    records: list[Record] = field(default_factory=list)
    truncated: bool = False
    torn: int = 0
    problems: list[LineProblem] = field(default_factory=list)

    @property
    def started(self) -> datetime | None:
        """Time of the first record, or None for an empty log."""
        return _first_time(self.records)

    @property
    def ended(self) -> datetime | None:
        """Time of the last record, or None for an empty log."""
        return _first_time(list(reversed(self.records)))

    def apply(self, record: Record) -> None:
        """Fold one record into the decoded state (used by both reader and writer)."""
        self.records.append(record)
        if record.kind == "meta" and self.meta is None:
            self.meta = record.payload
        elif record.kind == "message":
            self.messages.append(record.payload)
        elif record.kind == "event":
            self.events.append(record.payload)
        elif record.kind == "reset":
            self.discarded.extend(self.messages)
            self.messages = []
        elif record.kind == "result":
            self.result = record.payload


def _first_time(records: list[Record]) -> datetime | None:
    for record in records:
        try:
            return clock.parse_rfc3339(record.at)
        except ValueError:
            continue
    return None


def parse_record(value: JSON, path: str, line: int) -> Record | LineProblem:
    """Return the record a decoded line holds, or the problem that makes it malformed."""
    if not isinstance(value, dict):
        return LineProblem(path, line, "malformed record skipped: not a JSON object")
    kind = value.get("kind")
    if not isinstance(kind, str) or kind not in RECORD_KINDS:
        return LineProblem(path, line, f"malformed record skipped: unknown kind {kind!r}")
    at = value.get("at", "")
    if not isinstance(at, str):
        return LineProblem(path, line, "malformed record skipped: 'at' is not a string")
    payload = {} if kind == "reset" else value.get(kind)
    if not isinstance(payload, dict):
        return LineProblem(path, line, f"malformed record skipped: {kind!r} is not an object")
    return Record(kind, at, payload, line)


def decode(data: bytes, run_id: str, path: str = "") -> RunLog:
    """Decode the bytes of a run log whose id is ``run_id``; never raises on bad lines."""
    where = path or run_id
    parsed = parse_jsonl(data, where)
    log = RunLog(id=run_id, torn=int(parsed.torn))
    log.problems.extend(parsed.problems)
    log.truncated = len(parsed.problems) > int(parsed.torn)
    for line, value in parsed.lines:
        record = parse_record(value, where, line)
        if isinstance(record, LineProblem):
            log.problems.append(record)
            log.truncated = True
            continue
        if record.kind == "meta" and log.meta is not None:
            log.problems.append(LineProblem(where, line, "second meta record ignored"))
            continue
        log.apply(record)
    log.problems.sort(key=lambda p: p.line)
    return log


def load(path: str | os.PathLike[str]) -> RunLog:
    """Read the run log at ``path`` (its id is the file stem).

    Raises:
        OSError: the file cannot be read.
    """
    file = Path(path)
    return decode(file.read_bytes(), run_id=_stem(file), path=str(file))


def _stem(file: Path) -> str:
    name = file.name
    return name[: -len(RUNLOG_SUFFIX)] if name.endswith(RUNLOG_SUFFIX) else file.stem


@dataclass(frozen=True, slots=True)
class RunSummary:
    """One run of a directory listing: its id, meta and result (None when absent)."""

    id: str
    path: Path
    meta: dict[str, JSON] | None
    result: dict[str, JSON] | None


def list_runs(directory: str | os.PathLike[str]) -> list[RunSummary]:
    """List the run logs of ``directory`` newest first (by id, string order).

    Only the ``meta`` and ``result`` lines are decoded; malformed ones are skipped.
    """
    out: list[RunSummary] = []
    for file in Path(directory).iterdir():
        if not file.name.endswith(RUNLOG_SUFFIX) or not file.is_file():
            continue
        meta: dict[str, JSON] | None = None
        result: dict[str, JSON] | None = None
        with file.open("rb") as handle:
            for raw in handle:
                if not raw.endswith(b"\n"):
                    break  # torn final line
                match = _KIND_PREFIX.match(raw)
                if match is None or match.group(1) not in (b"meta", b"result"):
                    continue
                try:
                    value = json.loads(raw)
                except ValueError:
                    continue
                record = parse_record(value, str(file), 0)
                if isinstance(record, LineProblem):
                    continue
                if record.kind == "meta" and meta is None:
                    meta = record.payload
                elif record.kind == "result":
                    result = record.payload
        out.append(RunSummary(_stem(file), file, meta, result))
    out.sort(key=lambda run: run.id, reverse=True)
    return out


class RunLogWriter:
    """Appends records to one run log; every record is fsynced before the call returns.

    Use :func:`create` or :func:`start` to get one. ``log`` mirrors what was written.
    """

    def __init__(self, fd: int, path: Path, log: RunLog) -> None:
        self._fd = fd
        self.path = path
        self.log = log

    @property
    def id(self) -> str:
        """The run id (the file stem)."""
        return self.log.id

    def _write(self, kind: str, payload: dict[str, JSON]) -> Record:
        if self._fd < 0:
            raise ValueError(f"run log {self.log.id} is closed")
        record = Record(kind, clock.format_rfc3339(clock.now()), payload, len(self.log.records) + 1)
        data = dumps_line(record.to_json())
        written = 0
        while written < len(data):
            written += os.write(self._fd, data[written:])
        os.fsync(self._fd)
        self.log.apply(record)
        return record

    def message(self, message: dict[str, JSON]) -> None:
        """Append a ``message`` record (``{"type": ..., "text": ..., ...}``)."""
        self._write("message", dict(message))

    def event(self, event: dict[str, JSON]) -> bool:
        """Append an ``event`` record; returns False (writes nothing) for token-level kinds."""
        if event.get("kind") in DROPPED_EVENT_KINDS:
            return False
        self._write("event", dict(event))
        return True

    def reset(self) -> None:
        """Append a ``reset``: the messages so far move to ``log.discarded``."""
        self._write("reset", {})

    def finish(self, result: dict[str, JSON]) -> None:
        """Append the ``result`` record, which closes the log, and close the file."""
        self._write("result", dict(result))
        self.close()

    def close(self) -> None:
        """Close the file without a result; idempotent."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def open_exclusive(path: Path) -> int:
    """Create ``path`` for appending, mode 0600 whatever the umask; never reuse a file.

    Raises:
        FileExistsError: the path exists (a symlink there counts too).
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_NOFOLLOW
    fd = os.open(path, flags, RUNLOG_FILE_MODE)
    os.fchmod(fd, RUNLOG_FILE_MODE)
    return fd


def _claim(directory: Path, run_id: str) -> int:
    if not run_id or "/" in run_id or run_id in (".", "..") or "\x00" in run_id:
        raise ValueError(f"run id {run_id!r} cannot be used as a file name")
    return open_exclusive(directory / f"{run_id}{RUNLOG_SUFFIX}")


def _open_writer(directory: Path, run_id: str, fd: int, meta: dict[str, JSON]) -> RunLogWriter:
    writer = RunLogWriter(fd, directory / f"{run_id}{RUNLOG_SUFFIX}", RunLog(id=run_id))
    try:
        writer._write("meta", {**meta, "id": run_id})
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)  # make the new directory entry durable too
        finally:
            os.close(dir_fd)
    except BaseException:
        writer.close()
        raise
    return writer


def create(directory: str | os.PathLike[str], run_id: str, meta: dict[str, JSON]) -> RunLogWriter:
    """Create the run log ``<directory>/<run_id>.jsonl`` and write its ``meta`` record.

    ``meta["id"]`` is set to ``run_id``.

    Raises:
        FileExistsError: a run log with this id already exists (nothing is changed).
        ValueError: the id cannot be a file name.
    """
    folder = Path(directory)
    return _open_writer(folder, run_id, _claim(folder, run_id), meta)


def start(directory: str | os.PathLike[str], meta: dict[str, JSON]) -> RunLogWriter:
    """Create a run log under a free time-derived id and write its ``meta`` record.

    The id is the current UTC time as ``YYYYMMDD-HHMMSS``; when taken, ``-2``,
    ``-3`` … ``-99`` are tried, each claimed by creating the file exclusively.

    Raises:
        FileExistsError: all 99 ids of this second are taken.
    """
    folder = Path(directory)
    stamp = clock.now().strftime("%Y%m%d-%H%M%S")
    for number in range(1, MAX_ID_SUFFIX + 1):
        run_id = stamp if number == 1 else f"{stamp}-{number}"
        try:
            fd = _claim(folder, run_id)
        except FileExistsError:
            continue
        return _open_writer(folder, run_id, fd, meta)
    raise FileExistsError(
        errno.EEXIST, f"run ids {stamp} to {stamp}-{MAX_ID_SUFFIX} are all taken", str(folder)
    )
