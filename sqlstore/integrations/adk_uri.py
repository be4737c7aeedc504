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
    ADK's keyword arguments (``agents_dir``, ...) are ignored.
    """
    parsed = urlparse(uri)
    if parsed.scheme != URI_SCHEME:
        raise ValueError(f"not a {URI_SCHEME}: URI: {uri!r}")
    rest = uri[len(URI_SCHEME) + 1 :]
    if rest.startswith("//"):
        target = unquote(urlparse(uri).path)
        if not target:
            raise ValueError(f"{uri!r} names no file; use sqlstore:///path/to/sessions.db")
    else:
        target = rest
    return make(target)
