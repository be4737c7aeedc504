"""The record of one retention sweep, as a backend's sweep history stores it.

:mod:`retention` builds these records (:func:`retention.history.run_record`)
and each backend keeps them through its ``history`` part
(:class:`sqlstore.ports.SweepHistory`); the type lives here so that no backend
imports ``retention``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlstore import clock


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One recorded sweep. ``id`` is 0 until the record is stored."""

    started_at: datetime
    ended_at: datetime
    policy_hash: str
    planned: int
    deleted: int
    changed: int
    failed: int
    dry_run: bool = False
    detail: str = ""
    id: int = 0

    def to_json(self) -> dict[str, Any]:
        """Return the record as JSON-compatible data."""
        return {
            "id": self.id,
            "started_at": clock.format_rfc3339(self.started_at),
            "ended_at": clock.format_rfc3339(self.ended_at),
            "policy_hash": self.policy_hash,
            "planned": self.planned,
            "deleted": self.deleted,
            "changed": self.changed,
            "failed": self.failed,
            "dry_run": self.dry_run,
            "detail": self.detail,
        }
