"""The base every conformance suite shares: backend hooks, store fixtures, collection rules.

A backend's test module subclasses one or more suites and overrides the hooks
below. The suites are collected by pytest only through such subclasses: the
base classes carry ``__test__ = False`` and :meth:`SuiteBase.__init_subclass__`
turns collection back on for every subclass that does not set ``__test__``
itself, so forgetting a flag cannot silently drop a backend's tests.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from sqlstore.ports import Store

FOLLOW_TIMEOUT_S = 30.0
"""Longest a test waits for a follower, a thread or a child process before failing."""


@dataclass(frozen=True, slots=True)
class ProcessTarget:
    """How a child process opens the same durable state as the parent's store.

    The child imports ``opener`` (``"package.module:callable"``) and calls it
    with ``arg``; the result must be a store (see :class:`sqlstore.ports.Store`).
    The default opener is :func:`sqlstore.open`, so for sqlstore's own backends
    ``ProcessTarget(str(path))`` is enough. Both fields must be importable /
    picklable in a fresh interpreter (multiprocessing ``spawn``).
    """

    arg: str
    opener: str = "sqlstore:open"

    def open(self) -> Store:
        """Import the opener and return a new store handle."""
        module_name, _, attr = self.opener.partition(":")
        if not module_name or not attr:
            raise ValueError(f"opener must be 'module:callable', got {self.opener!r}")
        opener: Any = getattr(importlib.import_module(module_name), attr)
        store: Store = opener(self.arg)
        return store


F = TypeVar("F", bound=Callable[..., Any])


def needs_second_process(test: F) -> F:
    """Mark a suite test that shares the backend's state with a child OS process."""
    test.needs_second_process = True  # type: ignore[attr-defined]
    return test


class SuiteBase:
    """Hooks and fixtures common to every suite (override the hooks in a subclass)."""

    __test__ = False

    cross_process: bool | None = None
    """Set ``cross_process = False`` on a backend whose state cannot be shared by two
    OS processes (an in-memory store): the cross-process tests are then not part of
    its suite at all. Left at None, a backend without ``second_process_target``
    sees those tests skipped with a reason, so a forgotten hook stays visible."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "__test__" not in cls.__dict__:
            cls.__test__ = True
        if cls.cross_process is False:
            for name in dir(cls):
                if getattr(getattr(cls, name, None), "needs_second_process", False):
                    setattr(cls, name, None)

    # -- hooks -------------------------------------------------------------------

    def make_store(self, tmp_path: Path) -> Store:
        """Return a fresh, empty store (hook; required by every suite)."""
        raise NotImplementedError(f"{type(self).__name__} must implement make_store(tmp_path)")

    def make_pair(self, tmp_path: Path) -> tuple[Store, Store]:
        """Return two independently built handles over the same, empty durable state.

        Hook, required by ``CreatorSuite`` and ``CursorSuite``. A backend that
        has no durable state shared between objects (``MemoryStore``) returns
        the same object twice.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement make_pair(tmp_path)")

    def second_process_target(self, tmp_path: Path) -> ProcessTarget | str | None:
        """Return how a child process opens the state of ``make_pair(tmp_path)``, or None.

        Hook. ``None`` (the default) means the backend cannot be shared across
        OS processes; the cross-process tests then skip with that reason. A
        plain ``str`` is shorthand for ``ProcessTarget(arg)`` (``sqlstore.open``).
        """
        return None

    def reset_log(self, store: Store, session_id: str) -> None:
        """Replace the positional basis of a session's log, as delete + recreate would.

        Hook. The default deletes the session (snapshot, events, audit); the
        next append then starts a new log generation.
        """
        store.sessions.delete(session_id)

    # -- fixtures ----------------------------------------------------------------

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[Store]:
        """A fresh store from ``make_store``, closed after the test."""
        made = self.make_store(tmp_path)
        try:
            yield made
        finally:
            made.close()

    @pytest.fixture
    def pair(self, tmp_path: Path) -> Iterator[tuple[Store, Store]]:
        """Two handles from ``make_pair``, both closed after the test."""
        first, second = self.make_pair(tmp_path)
        try:
            yield first, second
        finally:
            first.close()
            if second is not first:
                second.close()

    @pytest.fixture
    def process_target(self, tmp_path: Path, pair: tuple[Store, Store]) -> ProcessTarget:
        """The child-process target of ``pair``'s state; skips when the backend has none."""
        target = self.second_process_target(tmp_path)
        if target is None:
            pytest.skip(f"{type(self).__name__} declares no second-process target")
        return ProcessTarget(target) if isinstance(target, str) else target
