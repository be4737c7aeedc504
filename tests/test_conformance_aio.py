"""Every suite of the four parts once more, through ``sqlstore.aio`` (sync tests drive it).

(``ImportTargetSuite`` and ``SweepHistorySuite`` test capabilities reached as
``store.imports`` / ``store.history``, which the asyncio facade does not carry.)

Each store of a suite is an ``AsyncStore`` run on an event loop in a thread of
its own (``sqlstore.conformance.aio_bridge``): SQLite and Redis stores are
opened with ``sqlstore.aio.open`` — the second OS process too — and the memory
store is put behind ``sqlstore.aio.wrap``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import cast

import freezegun.config
import pytest
from redis_server import redis_server, redis_url  # noqa: F401  (fixtures)

from sqlstore import MemoryStore
from sqlstore.conformance import (
    ApplySuite,
    AuditQuerySuite,
    BatchSuite,
    ConditionalPruneSuite,
    CreatorSuite,
    CursorSuite,
    EventLogSuite,
    LeaseSuite,
    PagerSuite,
    ProcessTarget,
    PrunableSuite,
    StoreSuite,
    TailSuite,
    VersionSuite,
)
from sqlstore.conformance.aio_bridge import open_blocking, wrap_blocking
from sqlstore.ports import Store

BRIDGE = "sqlstore.conformance.aio_bridge:open_blocking"
SUITES = (
    StoreSuite,
    PrunableSuite,
    PagerSuite,
    ConditionalPruneSuite,
    CreatorSuite,
    EventLogSuite,
    CursorSuite,
    BatchSuite,
    TailSuite,
    VersionSuite,
    ApplySuite,
    LeaseSuite,
    AuditQuerySuite,
)


class AioSQLiteFactories:
    """SQLite files opened through ``sqlstore.aio.open``."""

    def make_store(self, tmp_path: Path) -> Store:
        """Return a facade over a store on a new file."""
        return cast(Store, open_blocking(str(tmp_path / "single.db")))

    def make_pair(self, tmp_path: Path) -> tuple[Store, Store]:
        """Return two facades, each over its own store on one new file."""
        path = str(tmp_path / "shared.db")
        return cast(Store, open_blocking(path)), cast(Store, open_blocking(path))

    def second_process_target(self, tmp_path: Path) -> ProcessTarget:
        """The child opens the pair's file through the facade as well."""
        return ProcessTarget(str(tmp_path / "shared.db"), opener=BRIDGE)


class AioMemoryFactories:
    """A MemoryStore behind ``sqlstore.aio.wrap``."""

    cross_process = False

    def make_store(self, tmp_path: Path) -> Store:
        """Return a facade over a fresh MemoryStore."""
        return cast(Store, wrap_blocking(MemoryStore()))

    def make_pair(self, tmp_path: Path) -> tuple[Store, Store]:
        """Return one facade twice (a MemoryStore shares its state with no other object)."""
        store = cast(Store, wrap_blocking(MemoryStore()))
        return store, store


class AioRedisFactories:
    """RedisStores opened through ``sqlstore.aio.open`` on a private server and prefix."""

    url = ""

    @pytest.fixture(autouse=True)
    def _redis_target(self, redis_url: str) -> None:  # noqa: F811  (fixture parameter)
        """Remember this test's store URL (server + private prefix)."""
        self.url = redis_url

    def make_store(self, tmp_path: Path) -> Store:
        """Return a facade over a store on an empty prefix."""
        return cast(Store, open_blocking(self.url))

    def make_pair(self, tmp_path: Path) -> tuple[Store, Store]:
        """Return two facades, each with its own connection, on one prefix."""
        return cast(Store, open_blocking(self.url)), cast(Store, open_blocking(self.url))

    def second_process_target(self, tmp_path: Path) -> ProcessTarget:
        """The child opens the same server and prefix through the facade."""
        return ProcessTarget(self.url, opener=BRIDGE)


@pytest.fixture(autouse=True)
def _frozen_time_reaches_worker_threads() -> Iterator[None]:
    """Let freezegun's frozen clock reach the facade's worker threads during each test.

    freezegun returns the real time to any call with a ``threading`` frame within
    a few frames of it (its default ignore list), so a shallow call in a pool
    thread (``leases.held()``) would see the real clock while a deeper one
    (``leases.acquire``) sees the frozen one. The suites freeze time on the test
    thread and mean it for the store's work; the module is taken off the list
    for the test, and the list restored after it.
    """
    saved = list(freezegun.config.settings.default_ignore_list)
    freezegun.configure(default_ignore_list=[m for m in saved if m != "threading"])
    try:
        yield
    finally:
        freezegun.configure(default_ignore_list=saved)


def _suite_classes() -> dict[str, type]:
    """Build ``TestAio<Backend><Suite>`` for every backend and suite (one docstring each)."""
    made: dict[str, type] = {}
    for backend, factories in (
        ("SQLite", AioSQLiteFactories),
        ("Memory", AioMemoryFactories),
        ("Redis", AioRedisFactories),
    ):
        for suite in SUITES:
            name = f"TestAio{backend}{suite.__name__.removesuffix('Suite')}"
            doc = f"{suite.__name__} on {backend} through sqlstore.aio."
            made[name] = type(name, (factories, suite), {"__doc__": doc})
    return made


globals().update(_suite_classes())
