"""The ``store`` argument every integration takes: a path/URL it opens, or a store it shares."""

from __future__ import annotations

import os
from typing import Any

import sqlstore
from sqlstore.ports import Store

StoreTarget = str | os.PathLike[str] | Any
"""A path, an ``sqlstore.open`` URL, a sync store or an ``sqlstore.aio`` async store."""


def resolve_store(target: StoreTarget) -> tuple[Store, bool]:
    """Return (sync store, owned) for an integration's ``store`` argument.

    A ``str`` or path-like is opened with :func:`sqlstore.open` and is owned: the
    integration closes it. A store object (anything with ``sessions`` and
    ``events``) is shared and never closed by the integration; an async store
    (``sqlstore.aio``) is used through its ``sync`` store, so one worker thread
    carries a whole operation (read, conditional write, retry).

    Raises:
        TypeError: ``target`` is neither a path nor a store.
        StoreError, ValueError: the path or URL cannot be opened.
    """
    if isinstance(target, str | os.PathLike):
        path = os.fspath(target)
        if not isinstance(path, str):
            raise TypeError("store paths must be text, not bytes")
        return sqlstore.open(path), True
    sync = getattr(target, "sync", None)
    if sync is not None and hasattr(sync, "sessions"):
        return sync, False
    if hasattr(target, "sessions") and hasattr(target, "events"):
        return target, False
    raise TypeError(f"store must be a path, a URL or a sqlstore store, not {type(target).__name__}")
