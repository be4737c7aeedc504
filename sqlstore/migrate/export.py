"""``sqlstore export``: write sessions back as openzot run logs or as a mecatl ``sid-v2`` store.

The inverse of the import mappings, so ``export → migrate`` into a fresh store is
lossless for sessions that came from that format (JSONL-FORMATS.md defines the
equality). Files are created exclusively (an existing file is never
overwritten: that session is reported as failed), with mode 0600, fsynced, and
their mtime set to the session's ``modified_at`` so a re-import keeps the
session's real age.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import re
import stat
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from sqlstore import clock
from sqlstore.errors import MigrationError, SessionNotFound, SnapshotError
from sqlstore.events import Event
from sqlstore.files import make_private_dirs
from sqlstore.jsonl import dumps_line
from sqlstore.migrate.items import FORMAT_MECATL, FORMAT_RUNLOG, FORMATS
from sqlstore.migrate.mecatl_events import (
    EVENT_VERSION,
    GAP_VERSION,
    GENERATION_VERSION,
    audit_to_mecatl,
    event_to_mecatl,
)
from sqlstore.migrate.mecatl_mapping import session_to_snapshot
from sqlstore.migrate.mecatl_source import (
    ENVELOPE_VERSION,
    EVENTS_SUFFIX,
    SNAPSHOT_SUFFIX,
    TOOLS_SUFFIX,
    V2_DIR,
    family_token,
)
from sqlstore.migrate.runlog_mapping import runlog_from_session
from sqlstore.model import JSON
from sqlstore.ports import Store
from sqlstore.runlog import BLOBS_SUFFIX, RUNLOG_SUFFIX, Record, open_exclusive
from sqlstore.session import Session

EXPORT_DIR_MODE = 0o700
MAX_FILE_NAME_BYTES = 255
_BLOB_EXTENSION = re.compile(r"[A-Za-z0-9]{1,16}")


@dataclass(slots=True)
class ExportReport:
    """What ``export_sessions`` wrote."""

    format: str
    out: str
    exported: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    events: int = 0
    audit_rows: int = 0
    bytes: int = 0
    seconds: float = 0.0
    orphans: int = 0  # with every session: orphans (events/audit, no snapshot) not exported

    @property
    def ok(self) -> bool:
        """True when every requested session was written."""
        return not self.failed

    def to_json(self) -> dict[str, JSON]:
        return {
            "format": self.format,
            "out": self.out,
            "ok": self.ok,
            "exported": list(self.exported),
            "failed": [{"session_id": s, "reason": r} for s, r in self.failed],
            "events": self.events,
            "audit_rows": self.audit_rows,
            "bytes": self.bytes,
            "seconds": round(self.seconds, 6),
            "orphans": self.orphans,
        }


def export_sessions(
    store: Store,
    fmt: str,
    out: str | os.PathLike[str],
    *,
    session_ids: Sequence[str] | None = None,
) -> ExportReport:
    """Write the given sessions (every session when None) under ``out`` in format ``fmt``.

    A session that cannot be read (its snapshot does not decode) or written (a
    bad file name, an OS error) is reported in ``failed``, the files already
    written for it are removed, and the export goes on. An error that ends the
    export (the file is damaged: ``StoreCorrupt``, including one damaged stored
    record; the store cannot be read) removes every file and directory this call
    created before it propagates, so a failed export leaves nothing behind.

    Raises:
        MigrationError: unknown format, or ``out`` exists and is not a directory.
        StoreError: the store could not be read; nothing written is left.
    """
    started = time.monotonic()
    if fmt not in FORMATS:
        raise MigrationError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    root = Path(out)
    if os.path.exists(root) and not os.path.isdir(root):
        raise MigrationError(f"{root} exists and is not a directory")
    folder = root / V2_DIR if fmt == FORMAT_MECATL else root
    if folder != root and os.path.islink(folder):
        raise MigrationError(
            f"{folder} is a symbolic link; export writes only inside {root}",
            hint="Export into a new directory with --out.",
        )
    # Every directory created here is 0700, intermediate ones too, whatever the umask.
    created = _Created(dirs=make_private_dirs(os.fspath(folder)))
    report = ExportReport(format=fmt, out=str(root))
    try:
        _export_each(store, fmt, folder, session_ids, report, created)
    except BaseException:
        created.undo((0, 0))
        raise
    report.seconds = time.monotonic() - started
    return report


@dataclass
class _Created:
    """The files and directories an export created, in creation order."""

    files: list[Path] = field(default_factory=list)
    dirs: list[str] = field(default_factory=list)

    def mark(self) -> tuple[int, int]:
        """Return a position to :meth:`undo` back to."""
        return len(self.files), len(self.dirs)

    def undo(self, mark: tuple[int, int]) -> None:
        """Delete what was created after ``mark`` (directories only if empty)."""
        files, dirs = mark
        for path in reversed(self.files[files:]):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        for directory in reversed(self.dirs[dirs:]):
            with contextlib.suppress(OSError):
                os.rmdir(directory)
        del self.files[files:]
        del self.dirs[dirs:]


def _export_each(
    store: Store,
    fmt: str,
    folder: Path,
    session_ids: Sequence[str] | None,
    report: ExportReport,
    created: _Created,
) -> None:
    if session_ids is None:
        session_ids = sorted(s.id for s in store.sessions.list())
        # Both formats are files per session: an orphan (no snapshot) has none to write.
        listing = getattr(store.sessions, "orphans", None)  # a backend may not track them
        report.orphans = len(listing()) if listing else 0
    ids = list(session_ids)
    for session_id in ids:
        try:
            session = store.sessions.load(session_id)
            modified_at = store.sessions.meta(session_id).modified_at
            records = list(store.events.read_after(session_id))
            audit = store.audit.list(session_id)
        except SessionNotFound as exc:
            report.failed.append((session_id, str(exc)))
            continue
        except SnapshotError as exc:  # this session's snapshot does not decode
            report.failed.append((session_id, f"cannot be read: {exc}"))
            continue
        mark = created.mark()
        try:
            if fmt == FORMAT_RUNLOG:
                events = [r.event for r in records if r.event]
                written = _write_runlog(folder, session, events, created)
            else:
                log = [(r.event, r.gap_reason) for r in records]
                generation = _generation(records[0].cursor) if records else ""
                lines = [dumps_line(audit_to_mecatl(a)) for a in audit]
                written = _write_mecatl(
                    folder, session, modified_at, log, generation, lines, created
                )
        except (OSError, ValueError, TypeError) as exc:  # TypeError: a malformed stored event
            created.undo(mark)  # no half-written session is left for a later import
            report.failed.append((session_id, str(exc)))
            continue
        for path in written:
            _set_mtime(path, modified_at)
            report.bytes += path.stat().st_size
        report.exported.append(session_id)
        report.events += len(records)
        report.audit_rows += len(audit) if fmt == FORMAT_MECATL else 0


def _generation(cursor: str) -> str:
    raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    value = json.loads(raw)["g"]
    return value if isinstance(value, str) else ""


def _write_file(path: Path, data: bytes, created: _Created) -> Path:
    fd = open_exclusive(path)
    created.files.append(path)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    return path


def _set_mtime(path: Path, moment: datetime) -> None:
    ns = clock.to_ns(moment)
    os.utime(path, ns=(ns, ns))


def _check_file_name(session_id: str) -> None:
    name = session_id + RUNLOG_SUFFIX
    if (
        "/" in session_id
        or "\x00" in session_id
        or session_id in (".", "..")
        or len(name.encode("utf-8", "surrogateescape")) > MAX_FILE_NAME_BYTES
    ):
        raise ValueError(f"session id {session_id!r} cannot be a run-log file name")


def _write_runlog(
    folder: Path, session: Session, events: list[Event], created: _Created
) -> list[Path]:
    _check_file_name(session.id)
    exported = runlog_from_session(session, events)
    body = b"".join(
        dumps_line(Record(kind, at, payload).to_json()) for kind, at, payload in exported.records
    )
    written = [_write_file(folder / f"{session.id}{RUNLOG_SUFFIX}", body, created)]
    if exported.blobs:
        blobs = folder / f"{session.id}{BLOBS_SUFFIX}"
        try:
            blobs.mkdir(mode=EXPORT_DIR_MODE)
            created.dirs.append(os.fspath(blobs))
        except FileExistsError:
            # Its files are created exclusively, so nothing in it is overwritten; but a
            # symlink (or a file) there would send the blobs outside --out.
            if not stat.S_ISDIR(os.lstat(blobs).st_mode):
                raise ValueError(f"{blobs} exists and is not a directory") from None
        named = {blob_file_name(name, data): data for name, data in exported.blobs.items()}
        for name, data in sorted(named.items()):
            written.append(_write_file(blobs / name, data, created))
    return written


def blob_file_name(stored: str, data: bytes) -> str:
    """Return the file name a blob is exported under: ``<sha256 of data>.<ext>``.

    The name is derived from the bytes, never taken from the stored session (whose
    ``runlog_blobs`` are untrusted text: ``/abs/path`` or ``../../x`` would
    otherwise name a file outside ``--out``). Only the extension of the stored
    name is kept, when it is 1-16 ASCII letters or digits; otherwise it is
    ``bin``. For a blob imported from a run log the result is its original name.
    """
    ext = stored.rsplit(".", 1)[1] if "." in stored else ""
    if not _BLOB_EXTENSION.fullmatch(ext):
        ext = "bin"
    return f"{hashlib.sha256(data).hexdigest()}.{ext}"


def _write_mecatl(
    folder: Path,
    session: Session,
    modified_at: datetime,
    log: list[tuple[Event | None, str]],
    generation: str,
    audit_lines: list[bytes],
    created: _Created,
) -> list[Path]:
    token = family_token(session.id)
    stamp = clock.format_rfc3339(modified_at)
    envelope: dict[str, JSON] = {
        "v": ENVELOPE_VERSION,
        "modified_at": stamp,
        "metadata": {
            "id": session.id,
            "kind": str(session.kind),
            "state": str(session.state),
            "title": session.title,
            "model_id": session.model_id,
            "created_at": clock.format_rfc3339(session.created_at),
            "modified_at": stamp,
            "turns": session.counters.turns,
        },
        "activity": {"state": str(session.state), "updated_at": stamp},
        "snapshot": session_to_snapshot(session),
    }
    snap = json.dumps(envelope, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    written = [_write_file(folder / f"{token}{SNAPSHOT_SUFFIX}", snap, created)]
    if log:
        lines = [dumps_line({"v": GENERATION_VERSION, "g": generation})]
        for event, reason in log:
            if event is None:
                lines.append(dumps_line({"v": GAP_VERSION, "r": reason}))
            else:
                lines.append(dumps_line({"v": EVENT_VERSION, "ev": event_to_mecatl(event)}))
        written.append(_write_file(folder / f"{token}{EVENTS_SUFFIX}", b"".join(lines), created))
    if audit_lines:
        path = folder / f"{token}{TOOLS_SUFFIX}"
        written.append(_write_file(path, b"".join(audit_lines), created))
    return written
