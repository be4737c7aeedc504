"""``sqlstore ui``: a local, read-only web viewer of a SQLite store (extra ``ui``).

Built on Starlette (routing, responses, static files), uvicorn (the ASGI
server) and Jinja2 (server-side templates, autoescaped): three small,
well-kept libraries with no JavaScript build step. The one script and one
stylesheet ship in ``static/``; nothing is fetched from another host.

Importing this package needs nothing beyond sqlstore; the modules that serve
pages import the extra, and :func:`require_extra` turns its absence into an
``ImportError`` that names ``pip install 'sqlstore[ui]'``.

* :mod:`sqlstore.ui.server` — bind checks, start, clean stop.
* :mod:`sqlstore.ui.security` — Host check, GET/HEAD only, token, CSP.
* :mod:`sqlstore.ui.app`, :mod:`~sqlstore.ui.pages`, :mod:`~sqlstore.ui.store_pages`,
  :mod:`~sqlstore.ui.live` — routes, pages, live timeline (server-sent events).
* :mod:`sqlstore.sqlite.browse` — the viewer's read-only queries.
"""

from __future__ import annotations

import importlib.util

EXTRA_MODULES = ("starlette", "uvicorn", "jinja2")
INSTALL_HINT = "pip install 'sqlstore[ui]'"


def missing_extra() -> list[str]:
    """Return the modules of the ``ui`` extra that are not installed."""
    return [name for name in EXTRA_MODULES if importlib.util.find_spec(name) is None]


def require_extra() -> None:
    """Raise ``ImportError`` naming the install command when the ``ui`` extra is missing."""
    missing = missing_extra()
    if missing:
        raise ImportError(
            f"sqlstore ui needs {', '.join(missing)}: {INSTALL_HINT}", name=missing[0]
        )


require_extra()
