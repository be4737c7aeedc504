"""Every conformance suite once more, through ``sqlstore.aio`` (sync tests drive the facade).

Each store of a suite is an ``AsyncStore`` run on an event loop in a thread of
its own (``sqlstore.conformance.aio_bridge``): SQLite and Redis stores are
opened with ``sqlstore.aio.open`` — the second OS process too — and the memory
store is put behind ``sqlstore.aio.wrap``.
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest
from redis_server import redis_server, redis_url  # noqa: F401  (fixtures)

from sqlstore import MemoryStore
from sqlstore.conformance import (
    ApplySuite,
    BatchSuite,
    ConditionalPruneSuite,
    CreatorSuite,
    CursorSuite,
    EventLogSuite,
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
