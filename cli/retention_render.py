"""What the retention commands print: plan tables, sweep summaries, sweep history."""

from __future__ import annotations

from collections.abc import Iterator

from sqlstore import clock, retention
from sqlstore.retention import RunRecord

from . import render


def plan_lines(plan: retention.Plan) -> Iterator[str]:
    """Yield the exact candidate table of a plan, then a summary line."""
    if plan.entries:
        body = [
            [
                render.visible(e.meta.id),
                str(e.meta.kind),
                str(e.meta.state),
                clock.format_rfc3339(e.meta.modified_at),
                e.reason,
            ]
            for e in plan.entries
        ]
        yield from render.table(["ID", "KIND", "STATE", "MODIFIED (UTC)", "REASON"], body)
    else:
        yield "No sessions to delete."
    if plan.orphans:
        yield "Orphans (events or audit rows without a snapshot), by last write:"
        yield from render.orphan_rows(plan.orphans)
    yield plan_summary(plan)


def plan_summary(plan: retention.Plan) -> str:
    """Return the one-line summary of a plan: counts, protections, policy, generation."""
    reasons = " ".join(f"{k}={v}" for k, v in sorted(plan.counts.by_reason.items()))
    kept = " ".join(f"{k}={v}" for k, v in sorted(plan.protected.items()))
    return (
        f"{plan.counts.total} of {plan.scanned} sessions planned"
        + (f" ({reasons})" if reasons else "")
        + (f"; protected: {kept}" if kept else "")
        + (f"; {len(plan.orphans)} orphans planned" if plan.orphans else "")
        + f"; policy {plan.policy.describe()}; generation {plan.generation[:16]}"
    )


def report_lines(report: retention.Report) -> Iterator[str]:
    """Yield the human summary of a sweep."""
    yield (
        f"Deleted {report.deleted} of {report.planned} planned sessions "
        f"(changed since planning: {report.changed}, leased since: {report.leased}, "
        f"failed: {report.failed}) in {report.seconds:.2f}s"
    )
    if report.orphans:
        yield f"({report.orphans} of the deleted were orphans: events or audit rows, no snapshot)"
    if report.bytes_before or report.bytes_after:
        yield (
            f"File size {render.human_bytes(report.bytes_before)} -> "
            f"{render.human_bytes(report.bytes_after)}"
        )
    if report.interrupted:
        yield "Stopped before the end; the rest is left for the next sweep."
    for error in report.errors:
        yield f"error: {render.one_line(error, 200)}"


HISTORY_HEADERS = (
    "ID",
    "STARTED (UTC)",
    "TOOK",
    "PLANNED",
    "DELETED",
    "SKIPPED",
    "FAILED",
    "POLICY",
    "DETAIL",
)


def history_lines(runs: list[RunRecord]) -> Iterator[str]:
    """Yield the ``retention history`` table."""
    if not runs:
        yield "No retention sweeps recorded."
        return
    body = [
        [
            str(r.id),
            render.short_time(r.started_at),
            f"{(r.ended_at - r.started_at).total_seconds():.1f}s",
            str(r.planned),
            str(r.deleted),
            str(r.changed),
            str(r.failed),
            r.policy_hash[:12],
            render.one_line(r.detail, 60),
        ]
        for r in runs
    ]
    yield from render.table(HISTORY_HEADERS, body)
