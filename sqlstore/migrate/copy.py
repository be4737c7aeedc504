"""``copy_store``: copy every session from one store to another (SQLite ⇄ Redis), resumably.

The copy reads the source's inventory as a stream (``iter_meta``, bounded
memory) and writes ``batch`` sessions at a time through the destination's
import target (the same one ``sqlstore migrate`` uses). Each copied session
keeps its ``modified_at`` (so retention sees its real age), its event log with
gaps in order under the same log generation (so event cursors issued by the
source keep working on the destination), and its audit rows.

Resumable: every copied session leaves a checkpoint row in the destination
(job id derived from the source), fingerprinted by the source row's
``version`` and ``modified_at``. A second run skips sessions whose source row
is unchanged (``already_imported``), copies new ones, and — with
``overwrite=True`` — re-copies those that changed. A session written while it
is being copied is skipped as ``changed`` and picked up by the next run.

A session that is a graph thread (``store.checkpoints``, e.g. a LangGraph
thread) has its checkpoint data copied right after its batch is written, with
the session's ``modified_at`` kept. A run interrupted between the two is
repaired by the next one: a session already copied whose checkpoints are
missing at the destination gets them then.

Only sessions with a snapshot are copied. An orphan — an event log or audit
trail under an id that has no snapshot (``sessions.orphans()``) — has no kind,
state or owner to give the destination, so it is left behind and counted as
skipped ``orphan`` (``sqlstore ls --orphans`` lists them, ``sqlstore rm``
removes them); the exit status is not affected.

``dry_run=True`` reads the source and the destination's checkpoints and reports
what a real run would do (``copied`` counts the sessions it would write,
``exists`` those it would skip) without writing anything to the destination,
not even the job row. ``verify=True`` loads every session this call copied
back from the destination and compares message, log record and audit counts;
a mismatch is reported in ``failed``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlstore import clock
from sqlstore.checkpoints import all_entries
from sqlstore.errors import MigrationError, SessionNotFound, StoreError
from sqlstore.inventory import SessionMeta
from sqlstore.migrate.items import Fingerprint, LogEntry, SessionImport
from sqlstore.migrate.report import (
    OUTCOME_IMPORTED,
    SKIP_ALREADY_IMPORTED,
    SKIP_CHANGED,
    SKIP_EXISTS,
)
from sqlstore.migrate.target import BatchEntry, ItemRow, target_for
from sqlstore.model import JSON
from sqlstore.ports import Store, checkpoints_of

COPY_BATCH_SESSIONS = 25
"""Sessions read and written per batch by default."""

COPY_BATCH_SESSIONS_MAX = 1_000
SKIP_ORPHAN = "orphan"
"""Skip reason of an orphan (events or audit rows without a snapshot): not copied."""

COPY_FORMAT = "store"
"""The ``format`` recorded on the destination's job row."""


@dataclass(slots=True)
class CopyReport:
    """What ``copy_store`` did: per-outcome counts, records moved, failures."""

    job_id: str
    copied: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    failed: list[tuple[str, str]] = field(default_factory=list)
    events: int = 0
    audit_rows: int = 0
    seconds: float = 0.0
    dry_run: bool = False
    verified: int = 0

    @property
    def ok(self) -> bool:
        """True when no session failed."""
        return not self.failed

    def to_json(self) -> dict[str, JSON]:
        """Return the report as JSON-compatible data (``migrate --to/--from --json`` prints it)."""
        return {
            "job_id": self.job_id,
            "dry_run": self.dry_run,
            "verified": self.verified,
            "copied": self.copied,
            "skipped": dict(self.skipped),
            "failed": [{"id": sid, "error": why} for sid, why in self.failed],
            "events": self.events,
            "audit_rows": self.audit_rows,
            "seconds": round(self.seconds, 3),
        }


def describe(store: Store) -> str:
    """Return a stable description of a store (its ``repr``), used to derive the job id."""
    return repr(store)


def copy_job_id(source: str) -> str:
    """Return the job id of copies from ``source`` (a :func:`describe` text)."""
    return "copy-" + hashlib.sha256(source.encode("utf-8")).hexdigest()[:24]


def fingerprint(meta: SessionMeta) -> Fingerprint:
    """Fingerprint a source row: size, modified_at and a hash of (id, version)."""
    digest = hashlib.sha256(f"{meta.id}\0{meta.version}".encode())
    return Fingerprint(meta.estimated_bytes, clock.to_ns(meta.modified_at), digest.hexdigest())


def _generation(cursor: str) -> str | None:
    raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    value = json.loads(raw).get("g")
    return value if isinstance(value, str) and value else None


def _read(src: Store, meta: SessionMeta) -> SessionImport | None:
    """Read one session whole; None when it changed (or vanished) while being read."""
    try:
        session = src.sessions.load(meta.id)
        log: list[LogEntry] = []
        generation = None
        for record in src.events.read_after(meta.id):
            generation = generation or _generation(record.cursor)
            if record.kind == "gap":
                log.append(LogEntry(gap_reason=record.gap_reason))
            else:
                log.append(LogEntry(event=record.event))
        audit = src.audit.list(meta.id)
        after = src.sessions.meta(meta.id)
    except SessionNotFound:
        return None
    if after.version != meta.version:
        return None
    return SessionImport(
        session=session,
        log=log,
        audit=audit,
        modified_at_ns=clock.to_ns(meta.modified_at),
        generation=generation,
    )


def copy_store(
    src: Store,
    dst: Store,
    *,
    batch: int = COPY_BATCH_SESSIONS,
    overwrite: bool = False,
    dry_run: bool = False,
    verify: bool = False,
    progress: Callable[[int], None] | None = None,
) -> CopyReport:
    """Copy every session (snapshot, events with gaps, audit) from ``src`` to ``dst``.

    Args:
        src: any store (read only).
        dst: a ``SQLiteStore``, ``RedisStore`` or ``MemoryStore``.
        batch: sessions per written batch (1 to ``COPY_BATCH_SESSIONS_MAX``); memory use
            is bounded by this many sessions.
        overwrite: replace destination sessions that exist already (otherwise they are
            skipped as ``exists``), and re-copy sessions changed since an earlier run.
        dry_run: report what would be copied; write nothing to ``dst``.
        verify: load every copied session back from ``dst`` and compare counts.
        progress: called with the number of source rows handled so far, after each batch.

    Returns the report; run again to resume after an error or interruption.

    Raises:
        MigrationError: ``batch`` is out of range, or ``src`` and ``dst`` are the same store.
        StoreError: a store failed (batches written so far stay; run again to resume).
    """
    started = time.monotonic()
    if not 1 <= batch <= COPY_BATCH_SESSIONS_MAX:
        raise MigrationError(f"batch must be 1..{COPY_BATCH_SESSIONS_MAX} sessions")
    source = describe(src)
    if src is dst or source == describe(dst):
        raise MigrationError("source and destination are the same store")
    job_id = copy_job_id(source)
    report = CopyReport(job_id=job_id, dry_run=dry_run)
    target = target_for(dst)
    rows = target.load_items(job_id)
    if not dry_run:
        target.start_job(job_id, source, COPY_FORMAT, clock.now_ns())
    pending: list[BatchEntry] = []
    handled = 0
    threads = _Threads(src, dst)

    def flush() -> None:
        if not pending:
            return
        if dry_run:
            outcomes = [
                SKIP_EXISTS
                if not overwrite and e.payload is not None and target.exists(e.payload.session.id)
                else OUTCOME_IMPORTED
                for e in pending
            ]
        else:
            outcomes = target.write_batch(
                job_id, pending, overwrite=overwrite, now_ns=clock.now_ns()
            )
        for entry, outcome in zip(pending, outcomes, strict=True):
            if outcome == OUTCOME_IMPORTED:
                threads.copy(entry.row.session_id)
                report.copied += 1
                if entry.payload is not None:
                    report.events += len(entry.payload.log)
                    report.audit_rows += len(entry.payload.audit)
                    if verify and not dry_run:
                        _verify(dst, entry.payload, report)
            else:
                report.skipped[outcome] += 1
        pending.clear()
        if progress is not None:
            progress(handled)

    try:
        for meta in src.sessions.iter_meta():
            handled += 1
            item = "session:" + meta.id
            print_ = fingerprint(meta)
            old = rows.get(item)
            if old is not None and old.outcome == OUTCOME_IMPORTED and old.fingerprint == print_:
                threads.repair(meta.id)
                report.skipped[SKIP_ALREADY_IMPORTED] += 1
                continue
            if old is not None and old.outcome == OUTCOME_IMPORTED and not overwrite:
                # Copied before and changed since: copy again only when asked to overwrite.
                report.skipped[SKIP_CHANGED] += 1
                continue
            try:
                payload = _read(src, meta)
            except StoreError as exc:
                report.failed.append((meta.id, f"{type(exc).__name__}: {exc}"))
                continue
            if payload is None:
                report.skipped[SKIP_CHANGED] += 1
                continue
            pending.append(BatchEntry(ItemRow(item, print_, OUTCOME_IMPORTED, meta.id), payload))
            if len(pending) >= batch:
                flush()
        flush()
        listing = getattr(src.sessions, "orphans", None)  # a backend may not track them
        orphans = len(listing()) if listing else 0
        if orphans:
            report.skipped[SKIP_ORPHAN] += orphans
    finally:
        if not dry_run:
            target.finish_job(job_id, "done" if report.ok else "failed", clock.now_ns())
    report.seconds = time.monotonic() - started
    return report


def _verify(dst: Store, payload: SessionImport, report: CopyReport) -> None:
    """Load one copied session back from ``dst`` and compare its counts with the source's."""
    sid = payload.session.id
    want = (len(payload.session.messages), len(payload.log), len(payload.audit))
    try:
        got = (
            len(dst.sessions.load(sid).messages),
            sum(1 for _ in dst.events.read_after(sid)),
            len(dst.audit.list(sid)),
        )
    except StoreError as exc:
        report.failed.append((sid, f"verify: {type(exc).__name__}: {exc}"))
        return
    if got != want:
        report.failed.append(
            (sid, f"verify: expected (messages, records, audit) {want}, found {got}")
        )
    else:
        report.verified += 1


class _Threads:
    """Copies the checkpoint data of graph threads along with their sessions."""

    def __init__(self, src: Store, dst: Store) -> None:
        self._src = checkpoints_of(src)
        self._dst = checkpoints_of(dst)
        self._ids = set(self._src.thread_ids()) if self._src and self._dst else set()

    def copy(self, session_id: str | None) -> None:
        """Replace the destination's checkpoints of a copied session with the source's."""
        if session_id is None or session_id not in self._ids:
            return
        if self._src is not None and self._dst is not None:
            self._dst.import_thread(session_id, all_entries(self._src, session_id))

    def repair(self, session_id: str) -> None:
        """Copy the checkpoints of an already-copied session that lacks them at the destination."""
        dst = self._dst
        if session_id in self._ids and dst is not None and dst.summary(session_id).checkpoints == 0:
            self.copy(session_id)
