"""The viewer's ASGI application: routes, error pages, static files, the guard.

:func:`create_app` wires the pages of :mod:`sqlstore.ui.pages`,
:mod:`sqlstore.ui.store_pages` and the live stream of :mod:`sqlstore.ui.live`
to a :class:`~sqlstore.ui.context.Viewer`, and wraps the whole application in
:class:`~sqlstore.ui.security.Guard` (Host check, GET/HEAD only, token,
security headers). Errors become small escaped pages: an unknown session is a
404, a bad parameter or cursor a 400, any other ``StoreError`` a 500 that names
the problem.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from sqlstore.errors import (
    CursorExpired,
    CursorMalformed,
    InvalidSessionId,
    SessionNotFound,
    StoreError,
)
from sqlstore.ui import live, pages, store_pages
from sqlstore.ui.context import STATIC_DIR, Viewer
from sqlstore.ui.security import ASGIApp, Guard, GuardConfig

Handler = Callable[[Viewer, Request], Response]


def _page(viewer: Viewer, handler: Handler) -> Callable[[Request], Any]:
    async def endpoint(request: Request) -> Response:
        try:
            return await run_in_threadpool(handler, viewer, request)
        except SessionNotFound as exc:
            return _error(viewer, 404, "No such session", str(exc), exc.hint)
        except (pages.BadRequest, CursorMalformed, CursorExpired, InvalidSessionId) as exc:
            hint = getattr(exc, "hint", "") or ""
            return _error(viewer, 400, "Bad request", str(exc), hint)
        except StoreError as exc:
            return _error(viewer, 500, "The store could not answer", str(exc), exc.hint)

    return endpoint


def _error(viewer: Viewer, status: int, heading: str, message: str, hint: str | None) -> Response:
    body = viewer.render(
        "error.html", title=heading, nav="", heading=heading, message=message, hint=hint or ""
    )
    return HTMLResponse(body, status_code=status)


def create_app(viewer: Viewer, guard: GuardConfig) -> ASGIApp:
    """Return the guarded ASGI application serving ``viewer``."""

    async def stream(request: Request) -> Response:
        return await live.stream(viewer, request)

    async def not_found(request: Request, exc: Exception) -> Response:
        return _error(viewer, 404, "Not found", f"no page at {request.url.path}", "")

    routes = [
        Route("/", _page(viewer, pages.sessions_page), name="sessions"),
        Route("/session", _page(viewer, pages.session_page), name="session"),
        Route("/timeline", _page(viewer, pages.timeline_page), name="timeline"),
        Route("/tools", _page(viewer, pages.tools_page), name="tools"),
        Route("/retention", _page(viewer, store_pages.retention_page), name="retention"),
        Route("/store", _page(viewer, store_pages.store_page), name="store"),
        Route("/stream", stream, name="stream"),
        Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
    ]
    app = Starlette(routes=routes, exception_handlers={404: not_found})
    return Guard(app, guard)
