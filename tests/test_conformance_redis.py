"""Every conformance suite against ``RedisStore`` on a private redis-server (handles, processes)."""

from __future__ import annotations

from pathlib import Path

import pytest
from redis_server import redis_server, redis_url  # noqa: F401  (fixtures)

from sqlstore.conformance import (
    ApplySuite,
    AuditQuerySuite,
    BatchSuite,
    CheckpointSuite,
    ConditionalPruneSuite,
    CreatorSuite,
    CursorSuite,
    EventLogSuite,
    ImportTargetSuite,
    LeaseSuite,
    PagerSuite,
    ProcessTarget,
    PrunableSuite,
    ScopesSuite,
    StoreSuite,
    SweepHistorySuite,
    TailSuite,
    VersionSuite,
)
from sqlstore.ports import Store
from sqlstore.redis import RedisStore


class RedisFactories:
    """Factories shared by the RedisStore suites: each test gets its own key prefix."""

    url = ""

    @pytest.fixture(autouse=True)
    def _redis_target(self, redis_url: str) -> None:  # noqa: F811  (fixture parameter)
        """Remember this test's store URL (server + private prefix)."""
        self.url = redis_url

    def make_store(self, tmp_path: Path) -> Store:
        """Return a store on an empty prefix."""
        return RedisStore(self.url)

    def make_pair(self, tmp_path: Path) -> tuple[Store, Store]:
        """Return two independently connected stores on one prefix."""
        return RedisStore(self.url), RedisStore(self.url)

    def second_process_target(self, tmp_path: Path) -> ProcessTarget:
        """A child process opens the same server and prefix with ``sqlstore.open(url)``."""
        return ProcessTarget(self.url)


class TestRedisStore(RedisFactories, StoreSuite):
    """StoreSuite on RedisStore."""


class TestRedisPrunable(RedisFactories, PrunableSuite):
    """PrunableSuite on RedisStore."""


class TestRedisPager(RedisFactories, PagerSuite):
    """PagerSuite on RedisStore."""


class TestRedisConditionalPrune(RedisFactories, ConditionalPruneSuite):
    """ConditionalPruneSuite on RedisStore."""


class TestRedisCreator(RedisFactories, CreatorSuite):
    """CreatorSuite on two RedisStore handles and two OS processes on one server."""


class TestRedisEventLog(RedisFactories, EventLogSuite):
    """EventLogSuite on RedisStore."""


class TestRedisCursor(RedisFactories, CursorSuite):
    """CursorSuite on RedisStore, including a second handle and a second OS process."""


class TestRedisLeases(RedisFactories, LeaseSuite):
    """LeaseSuite on RedisStore."""


class TestRedisAuditQuery(RedisFactories, AuditQuerySuite):
    """AuditQuerySuite on RedisStore."""


class TestRedisImportTarget(RedisFactories, ImportTargetSuite):
    """ImportTargetSuite on RedisStore."""


class TestRedisSweepHistory(RedisFactories, SweepHistorySuite):
    """SweepHistorySuite on RedisStore."""


class TestRedisBatch(RedisFactories, BatchSuite):
    """BatchSuite on RedisStore."""


class TestRedisTail(RedisFactories, TailSuite):
    """TailSuite on RedisStore."""


class TestRedisVersion(RedisFactories, VersionSuite):
    """VersionSuite on RedisStore."""


class TestRedisApply(RedisFactories, ApplySuite):
    """ApplySuite on RedisStore."""


class TestRedisScopes(RedisFactories, ScopesSuite):
    """ScopesSuite on RedisStore."""


class TestRedisCheckpoints(RedisFactories, CheckpointSuite):
    """CheckpointSuite on RedisStore."""
