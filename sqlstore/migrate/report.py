"""The outcome of one migration run, for the CLI summary and ``--json``."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from sqlstore.imports import OUTCOME_IMPORTED as OUTCOME_IMPORTED
from sqlstore.imports import SKIP_ALREADY_IMPORTED as SKIP_ALREADY_IMPORTED
from sqlstore.imports import SKIP_CHANGED as SKIP_CHANGED
from sqlstore.imports import SKIP_EXISTS as SKIP_EXISTS
from sqlstore.model import JSON

OUTCOME_FAILED = "failed"
SKIP_DUPLICATE = "duplicate_id"
SKIP_NOT_A_SESSION = "not_a_session"
SKIP_UNVERSIONED = "unversioned"
SKIP_SUPERSEDED = "superseded"


@dataclass(frozen=True, slots=True)
class ItemOutcome:
    """What happened to one source item."""

    item: str
    outcome: str
    session_id: str = ""
    detail: str = ""

    def to_json(self) -> dict[str, JSON]:
        return {
            "item": self.item,
            "outcome": self.outcome,
            "session_id": self.session_id,
            "detail": self.detail,
        }


@dataclass(slots=True)
class MigrationReport:
    """Counts and details of one ``run_migration`` call.

    ``skipped`` counts by reason; ``warnings`` are ``file:line: reason`` strings
    (torn tails, malformed lines, mapping notes) that did not stop an import.
    """

    job_id: str
    source: str
    format: str
    dry_run: bool = False
    imported: int = 0
    failed: int = 0
    incomplete: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    events: int = 0
    audit_rows: int = 0
    bytes: int = 0
    seconds: float = 0.0
    verified: int = 0
    warnings: list[str] = field(default_factory=list)
    items: list[ItemOutcome] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when no item failed (skips and warnings are not failures)."""
        return self.failed == 0

    def add(self, outcome: ItemOutcome) -> None:
        """Count one item's outcome."""
        self.items.append(outcome)
        if outcome.outcome == OUTCOME_IMPORTED:
            self.imported += 1
        elif outcome.outcome == OUTCOME_FAILED:
            self.failed += 1
        else:
            self.skipped[outcome.outcome] += 1

    @property
    def megabytes_per_second(self) -> float:
        """Source bytes imported per second (0 when nothing was timed)."""
        return self.bytes / 1_000_000 / self.seconds if self.seconds > 0 else 0.0

    def to_json(self) -> dict[str, JSON]:
        return {
            "job_id": self.job_id,
            "source": self.source,
            "format": self.format,
            "dry_run": self.dry_run,
            "ok": self.ok,
            "imported": self.imported,
            "skipped": dict(sorted(self.skipped.items())),
            "failed": self.failed,
            "incomplete": self.incomplete,
            "events": self.events,
            "audit_rows": self.audit_rows,
            "bytes": self.bytes,
            "seconds": round(self.seconds, 6),
            "verified": self.verified,
            "warnings": list(self.warnings),
            "items": [item.to_json() for item in self.items],
        }
