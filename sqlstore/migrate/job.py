"""The migration job: scan a source, map items to sessions, write them in bounded batches.

Bounded: at most ``batch_sessions`` items (default 25, at most 100) and about
``MIGRATE_BATCH_BYTES_MAX`` source bytes per transaction; each session's
snapshot, events, audit rows and its ``migration_items`` checkpoint row commit
together.

Durable: a batch is one transaction, committed with the store's durability
(one commit, so one ``fsync`` with ``durability="full"``, per batch, not per
session) before the report counts any of its items imported, so an item
reported imported survives a crash or power loss. (``progress`` counts items read and
mapped, so it may run up to one batch ahead of what is committed.)

Resumable: the job id is derived from the resolved source path, and every item
is checkpointed with its fingerprint (size, newest mtime, sha256). Running the
same import again after a crash, ``kill -9`` or Ctrl-C re-imports nothing that
committed (``already_imported``) and finishes the rest. An item whose
fingerprint changed since it was imported is reported ``changed`` and left alone
unless ``overwrite``. A session id that exists already (not from this item) is
skipped as ``exists`` unless ``overwrite``. The source is only ever read.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sqlstore import clock
from sqlstore.errors import InvalidEvent, MigrationError, SnapshotError, StoreError
from sqlstore.migrate.items import (
    FORMAT_MECATL,
    FORMAT_RUNLOG,
    FORMATS,
    Fingerprint,
    ItemBytes,
    ItemFailed,
    ItemSkipped,
    SessionImport,
    SourceItem,
    read_item,
)
from sqlstore.migrate.mecatl_source import V1_DIR, import_mecatl, is_mecatl_store, scan_mecatl
from sqlstore.migrate.report import (
    OUTCOME_FAILED,
    OUTCOME_IMPORTED,
    SKIP_ALREADY_IMPORTED,
    SKIP_CHANGED,
    SKIP_DUPLICATE,
    SKIP_EXISTS,
    SKIP_NOT_A_SESSION,
    SKIP_SUPERSEDED,
    ItemOutcome,
    MigrationReport,
)
from sqlstore.migrate.runlog_source import import_runlog, scan_runlogs
from sqlstore.migrate.target import BatchEntry, ImportTarget, ItemRow, target_for
from sqlstore.ports import Store

MIGRATE_BATCH_SESSIONS = 25
MIGRATE_BATCH_SESSIONS_MAX = 100
MIGRATE_BATCH_BYTES_MAX = 64 * 1024 * 1024
"""A batch is committed early once its items hold this many source bytes."""

JOB_ID_HEX = 32

Progress = Callable[[int, int], None]
"""Called as ``progress(items_done, items_total)`` after each item."""

Scanner = Callable[[Path], tuple[list[SourceItem], list[tuple[str, str]]]]
Importer = Callable[[ItemBytes], SessionImport]
_SOURCES: dict[str, tuple[Scanner, Importer]] = {
    FORMAT_RUNLOG: (scan_runlogs, import_runlog),
    FORMAT_MECATL: (scan_mecatl, import_mecatl),
}


def job_id_for(source: str | os.PathLike[str]) -> str:
    """Return the job id of a source: 32 hex chars of sha256 of its resolved path."""
    resolved = os.fspath(Path(source).resolve())
    return hashlib.sha256(resolved.encode("utf-8", "surrogateescape")).hexdigest()[:JOB_ID_HEX]


def detect_format(root: Path) -> str:
    """Return ``mecatl`` for a store directory, ``runlog`` for a directory of run logs.

    Raises:
        MigrationError: neither layout is recognised.
    """
    if is_mecatl_store(root):
        return FORMAT_MECATL
    if any(p.is_file() for p in root.glob("*.jsonl")):
        return FORMAT_RUNLOG
    raise MigrationError(
        f"{root}: neither a mecatl store (sid-v2/ or sid-v1/) nor a directory of run logs",
        hint="Pass --format runlog or --format mecatl if the layout is right.",
    )


@dataclass(slots=True)
class _Expected:
    session_id: str
    messages: int
    records: int
    audit: int


@dataclass(slots=True)
class _Job:
    job_id: str
    target: ImportTarget
    importer: Importer
    report: MigrationReport
    rows: dict[str, ItemRow]
    overwrite: bool
    dry_run: bool
    owner_of: dict[str, str] = field(default_factory=dict)
    seen: dict[str, str] = field(default_factory=dict)
    expected: list[_Expected] = field(default_factory=list)


def run_migration(
    store: Store,
    source: str | os.PathLike[str],
    *,
    fmt: str | None = None,
    batch_sessions: int = MIGRATE_BATCH_SESSIONS,
    overwrite: bool = False,
    dry_run: bool = False,
    verify: bool = False,
    progress: Progress | None = None,
) -> MigrationReport:
    """Import a run-log directory or a mecatl store into ``store``; resumable and idempotent.

    Args:
        store: a ``SQLiteStore`` or ``MemoryStore``.
        source: the source directory (never modified).
        fmt: ``"runlog"`` or ``"mecatl"``; detected when None.
        batch_sessions: items per transaction (1 to 100).
        overwrite: replace sessions that exist already, and re-import changed items.
        dry_run: inspect and report only; nothing is written.
        verify: load every session imported by this call back and compare counts.
        progress: called after each item with (done, total).

    Raises:
        MigrationError: the source or the options are unusable.
        StoreError: the store failed (the committed batches stay; run again to resume).
    """
    started = time.monotonic()
    root = Path(source).resolve()
    if not root.is_dir():
        raise MigrationError(f"{source}: not a directory", hint="Pass the source directory.")
    if not 1 <= batch_sessions <= MIGRATE_BATCH_SESSIONS_MAX:
        raise MigrationError(f"batch size must be 1..{MIGRATE_BATCH_SESSIONS_MAX} sessions")
    fmt = fmt or detect_format(root)
    if fmt not in FORMATS:
        raise MigrationError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    scan, importer = _SOURCES[fmt]
    items, skipped = scan(root)
    job_id = job_id_for(root)
    source_text = text_of_name(os.fspath(root))
    report = MigrationReport(job_id=job_id, source=source_text, format=fmt, dry_run=dry_run)
    for name, reason in skipped:
        report.add(ItemOutcome(text_of_name(name), SKIP_NOT_A_SESSION, detail=reason))
    items = _drop_undecodable_names(items, report)
    target = target_for(store)
    rows = target.load_items(job_id)
    job = _Job(job_id, target, importer, report, rows, overwrite, dry_run)
    for row in rows.values():
        if row.outcome == OUTCOME_IMPORTED and row.session_id:
            job.owner_of[row.session_id] = row.item
    if not dry_run:
        target.start_job(job_id, source_text, fmt, clock.now_ns())
    batch: list[BatchEntry] = []
    batch_bytes = 0
    for done, item in enumerate(items, start=1):
        entry = _plan(job, item)
        if entry is not None:
            batch.append(entry)
            batch_bytes += entry.row.fingerprint.size
        if len(batch) >= batch_sessions or batch_bytes >= MIGRATE_BATCH_BYTES_MAX:
            _flush(job, batch)
            batch, batch_bytes = [], 0
        if progress is not None:
            progress(done, len(items))
    _flush(job, batch)
    if not dry_run:
        target.finish_job(job_id, "done" if report.ok else "failed", clock.now_ns())
    if verify and not dry_run:
        _verify(store, job)
    report.seconds = time.monotonic() - started
    return report


def text_of_name(name: str) -> str:
    """Return a file name as valid UTF-8 text: bytes that are not UTF-8 become ``\\xNN``.

    ``os`` decodes such bytes to lone surrogates, which can be neither stored
    (SQLite text is UTF-8) nor printed.
    """
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return name


def _drop_undecodable_names(items: list[SourceItem], report: MigrationReport) -> list[SourceItem]:
    """Report every item whose name is not valid UTF-8 as failed (it gets no checkpoint row)."""
    kept: list[SourceItem] = []
    for item in items:
        shown = text_of_name(item.name)
        if shown == item.name:
            kept.append(item)
        else:
            detail = "the file name is not valid UTF-8; rename the file to import it"
            report.add(ItemOutcome(shown, OUTCOME_FAILED, detail=detail))
    return kept


def _plan(job: _Job, item: SourceItem) -> BatchEntry | None:
    """Read and map one item; return what to write, or None when nothing is to be written."""
    try:
        data = read_item(item)
    except OSError as exc:
        zero = Fingerprint(0, 0, "")
        return BatchEntry(ItemRow(item.name, zero, OUTCOME_FAILED, None, f"cannot read: {exc}"))
    fingerprint = data.fingerprint
    prev = job.rows.get(item.name)
    if prev is not None and prev.outcome == OUTCOME_IMPORTED:
        if prev.fingerprint == fingerprint:
            job.report.add(ItemOutcome(item.name, SKIP_ALREADY_IMPORTED, prev.session_id or ""))
            return None
        if not job.overwrite:
            detail = "changed since it was imported (--overwrite re-imports it)"
            job.report.add(ItemOutcome(item.name, SKIP_CHANGED, prev.session_id or "", detail))
            return None
    try:
        payload = job.importer(data)
        payload.encode()  # validates; the SQLite target writes these bytes
    except ItemSkipped as skip:
        return BatchEntry(ItemRow(item.name, fingerprint, skip.reason, None, skip.detail))
    except (ItemFailed, ValueError, TypeError, SnapshotError, InvalidEvent) as exc:
        return BatchEntry(ItemRow(item.name, fingerprint, OUTCOME_FAILED, None, str(exc)))
    sid = payload.session.id
    other = job.seen.get(sid) or job.owner_of.get(sid)
    if other is not None and other != item.name:
        reason = SKIP_SUPERSEDED if item.name.startswith(f"{V1_DIR}/") else SKIP_DUPLICATE
        detail = f"session id {sid!r} was already imported from {other}"
        return BatchEntry(ItemRow(item.name, fingerprint, reason, sid, detail))
    job.seen[sid] = item.name
    detail = "incomplete: run log ended without a result record" if payload.incomplete else ""
    return BatchEntry(ItemRow(item.name, fingerprint, OUTCOME_IMPORTED, sid, detail), payload)


def _flush(job: _Job, batch: list[BatchEntry]) -> None:
    if not batch:
        return
    if job.dry_run:
        outcomes = [
            SKIP_EXISTS
            if e.payload is not None
            and not job.overwrite
            and job.target.exists(e.payload.session.id)
            else e.row.outcome
            for e in batch
        ]
    else:
        outcomes = job.target.write_batch(
            job.job_id, batch, overwrite=job.overwrite, now_ns=clock.now_ns()
        )
    report = job.report
    for entry, outcome in zip(batch, outcomes, strict=True):
        row, payload = entry.row, entry.payload
        detail = "session id already exists (--overwrite replaces it)"
        if outcome != SKIP_EXISTS:
            detail = row.detail
        report.add(ItemOutcome(row.item, outcome, row.session_id or "", detail))
        if outcome != OUTCOME_IMPORTED or payload is None:
            continue
        report.events += len(payload.log)
        report.audit_rows += len(payload.audit)
        report.bytes += row.fingerprint.size
        report.incomplete += int(payload.incomplete)
        report.warnings.extend(str(w) for w in payload.warnings)
        job.expected.append(
            _Expected(
                payload.session.id,
                len(payload.session.messages),
                len(payload.log),
                len(payload.audit),
            )
        )


def _verify(store: Store, job: _Job) -> None:
    """Load every session this call imported and compare message, record and audit counts."""
    for want in job.expected:
        try:
            got = _Expected(
                want.session_id,
                len(store.sessions.load(want.session_id).messages),
                sum(1 for _ in store.events.read_after(want.session_id)),
                len(store.audit.list(want.session_id)),
            )
        except StoreError as exc:
            job.report.failed += 1
            job.report.warnings.append(f"verify {want.session_id}: {exc}")
            continue
        if got != want:
            job.report.failed += 1
            job.report.warnings.append(f"verify {want.session_id}: expected {want}, found {got}")
        else:
            job.report.verified += 1
