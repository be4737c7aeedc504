"""What every page of the viewer shares: the read-only store, templates, live streams.

The store is opened with ``readonly=True`` (``SQLITE_OPEN_READONLY``, no
checkpoint on close), so the viewer cannot change the file whatever a request
asks; :mod:`sqlstore.ui.security` also refuses every method but GET and HEAD.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import jinja2

from sqlstore.sqlite import SQLiteStore, browse
from sqlstore.ui import present

TEMPLATES_DIR = Path(__file__).parent / "templates"
STATIC_DIR = Path(__file__).parent / "static"

MAX_LIVE_STREAMS = 32
"""Live timelines served at once (each holds a thread and a reader connection)."""


class RetentionSource(Protocol):
    """Where the retention page gets its data (given by the caller: ``sqlstore`` never
    imports ``retention``; the CLI passes one built on it)."""

    def describe(self) -> str:
        """Return the policy in one line."""

    def plan(self, store: SQLiteStore) -> dict[str, Any]:
        """Return what a sweep would delete now, as ``retention.Plan.to_json()`` does."""

    def history(self, store: SQLiteStore, limit: int) -> list[dict[str, Any]]:
        """Return the newest ``limit`` recorded sweeps, as ``RunRecord.to_json()`` does."""


class ThreadSource(Protocol):
    """How the session page describes a graph thread's checkpoints (given by the caller:
    the CLI passes the text of ``sqlstore show``, so both read the same)."""

    def lines(self, store: SQLiteStore, session_id: str) -> list[str] | None:
        """Return the latest checkpoint and its conversation as text, or None (no thread)."""


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES_DIR),
        autoescape=True,  # every template, every value: stored content is untrusted
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["utc"] = present.utc_text
    env.filters["iso"] = present.iso
    env.filters["duration"] = present.duration_text
    env.filters["bytes"] = present.human_bytes
    env.filters["one_line"] = present.one_line
    env.filters["pretty_json"] = present.pretty_json
    env.filters["clip"] = present.clip
    env.filters["json_text"] = present.json_text
    return env


@dataclass
class Viewer:
    """The state of one running viewer."""

    store: SQLiteStore
    retention: RetentionSource | None = None
    threads: ThreadSource | None = None
    templates: jinja2.Environment = field(default_factory=_environment)
    stopping: threading.Event = field(default_factory=threading.Event)
    _streams: set[threading.Event] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _counts: browse.StoreCounts | None = None

    def counts(self) -> browse.StoreCounts:
        """Return the store's counts by state and kind, recounted only when they may differ.

        Cached per inventory generation, which every snapshot save, create and
        delete moves (one tiny read checks it); see :func:`browse.inventory_generation`.
        """
        cached = self._counts
        if cached is not None and cached.generation == browse.inventory_generation(self.store.db):
            return cached
        fresh = browse.store_counts(self.store.db)
        self._counts = fresh
        return fresh

    def drop_caches(self) -> None:
        """Forget the cached counts (the next page recounts)."""
        self._counts = None

    def render(self, name: str, **values: Any) -> str:
        """Render a template with ``values``."""
        return self.templates.get_template(name).render(db_path=self.store.path, **values)

    def open_stream(self) -> threading.Event | None:
        """Register a live stream; return its stop event, or None when too many run."""
        with self._lock:
            if self.stopping.is_set() or len(self._streams) >= MAX_LIVE_STREAMS:
                return None
            stop = threading.Event()
            self._streams.add(stop)
            return stop

    def close_stream(self, stop: threading.Event) -> None:
        """Stop and forget a live stream."""
        stop.set()
        with self._lock:
            self._streams.discard(stop)

    def stop(self) -> None:
        """End every live stream (the server is shutting down); idempotent."""
        with self._lock:
            self.stopping.set()
            streams = list(self._streams)
        for stop in streams:
            stop.set()
