"""The ``sqlstore:`` URI of ``--session_service_uri`` (ADK's service registry)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar
from urllib.parse import unquote, urlparse

URI_SCHEME = "sqlstore"
"""The ``--session_service_uri`` scheme: ``sqlstore:///abs/path.db`` or ``sqlstore:rel.db``."""

T = TypeVar("T")


def service_from_uri(uri: str, make: Callable[[str], T]) -> T:
    """Build the service from a ``sqlstore:`` URI (for ADK's service registry).

    ``sqlstore:///abs/path/sessions.db`` is an absolute path, ``sqlstore:rel.db``
    a path relative to the working directory; other ``sqlstore.open`` targets go
    after the scheme's colon (``sqlstore:memory:``, ``sqlstore:redis://host:6379/0``).
    ADK's keyword arguments (``agents_dir``, ...) are ignored. Store options
    follow a ``?`` as in ``sqlstore.open``'s ``sqlite:///`` URLs
    (``sqlstore:///abs.db?durability=normal``); a bad one raises
    ``InvalidOption`` and nothing is created.
    """
    parsed = urlparse(uri)
    if parsed.scheme != URI_SCHEME:
        raise ValueError(f"not a {URI_SCHEME}: URI: {uri!r}")
    rest = uri[len(URI_SCHEME) + 1 :]
    if rest.startswith("//"):
        target = unquote(parsed.path)
        if not target:
            raise ValueError(f"{uri!r} names no file; use sqlstore:///path/to/sessions.db")
        if parsed.query or uri.endswith("?"):  # options: checked by sqlstore.open's URL parser
            target = f"sqlite:///{target}?{parsed.query}"
    else:
        target = rest
        if "?" in target and "://" not in target and not target.startswith("memory:"):
            target = f"sqlite:///{target}"  # a relative path with options
    return make(target)
