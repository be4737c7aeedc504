"""The store-wide pages of the viewer: retention (plan and history) and store (stats, check)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import HTMLResponse

from sqlstore.sqlite import maintenance
from sqlstore.sqlite.connection import SCHEMA_VERSION
from sqlstore.ui.context import Viewer

HISTORY_SHOWN = 50
"""Recorded sweeps shown on the retention page."""

PLAN_ENTRIES_SHOWN = 500
"""Planned deletions listed (the counts cover all of them)."""


def retention_page(viewer: Viewer, request: Request) -> HTMLResponse:
    """What a sweep would delete now under the configured policy (read-only), and the history."""
    source = viewer.retention
    plan = None if source is None else source.plan(viewer.store)
    history = [] if source is None else source.history(viewer.store, HISTORY_SHOWN)
    return HTMLResponse(
        viewer.render(
            "retention.html",
            title="Retention",
            nav="retention",
            policy="" if source is None else source.describe(),
            plan=plan,
            entries=[] if plan is None else plan["entries"][:PLAN_ENTRIES_SHOWN],
            history=history,
        )
    )


def store_page(viewer: Viewer, request: Request) -> HTMLResponse:
    """``sqlstore stats`` and ``sqlstore check`` as a page (quick check unless ?check=full)."""
    full = request.query_params.get("check") == "full"
    stats = maintenance.stats(viewer.store)
    report = maintenance.check(viewer.store.path, quick=not full)
    return HTMLResponse(
        viewer.render(
            "store.html",
            title="Store",
            nav="store",
            stats=stats,
            report=report,
            full=full,
            schema_version=SCHEMA_VERSION,
        )
    )
