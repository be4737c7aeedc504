"""Every conformance suite against ``MemoryStore`` (no second process: nothing is shared)."""

from __future__ import annotations

from pathlib import Path

from sqlstore import MemoryStore
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
    PrunableSuite,
    ScopesSuite,
    StoreSuite,
    SweepHistorySuite,
    TailSuite,
    VersionSuite,
)
from sqlstore.ports import Store


class MemoryFactories:
    """Factories shared by the MemoryStore suites (nothing is shared across processes)."""

    cross_process = False

    def make_store(self, tmp_path: Path) -> Store:
        """Return a fresh MemoryStore."""
        return MemoryStore()

    def make_pair(self, tmp_path: Path) -> tuple[Store, Store]:
        """Return one MemoryStore twice: its state is not shared with any other object."""
        store = MemoryStore()
        return store, store


class TestMemoryStore(MemoryFactories, StoreSuite):
    """StoreSuite on MemoryStore."""


class TestMemoryPrunable(MemoryFactories, PrunableSuite):
    """PrunableSuite on MemoryStore."""


class TestMemoryPager(MemoryFactories, PagerSuite):
    """PagerSuite on MemoryStore."""


class TestMemoryConditionalPrune(MemoryFactories, ConditionalPruneSuite):
    """ConditionalPruneSuite on MemoryStore."""


class TestMemoryCreator(MemoryFactories, CreatorSuite):
    """CreatorSuite on MemoryStore (the two handles are one object)."""


class TestMemoryEventLog(MemoryFactories, EventLogSuite):
    """EventLogSuite on MemoryStore."""


class TestMemoryCursor(MemoryFactories, CursorSuite):
    """CursorSuite on MemoryStore (the two handles are one object)."""


class TestMemoryLeases(MemoryFactories, LeaseSuite):
    """LeaseSuite on MemoryStore."""


class TestMemoryAuditQuery(MemoryFactories, AuditQuerySuite):
    """AuditQuerySuite on MemoryStore."""


class TestMemoryImportTarget(MemoryFactories, ImportTargetSuite):
    """ImportTargetSuite on MemoryStore."""


class TestMemorySweepHistory(MemoryFactories, SweepHistorySuite):
    """SweepHistorySuite on MemoryStore."""


class TestMemoryBatch(MemoryFactories, BatchSuite):
    """BatchSuite on MemoryStore."""


class TestMemoryTail(MemoryFactories, TailSuite):
    """TailSuite on MemoryStore."""


class TestMemoryVersion(MemoryFactories, VersionSuite):
    """VersionSuite on MemoryStore."""


class TestMemoryApply(MemoryFactories, ApplySuite):
    """ApplySuite on MemoryStore."""


class TestMemoryScopes(MemoryFactories, ScopesSuite):
    """ScopesSuite on MemoryStore."""


class TestMemoryCheckpoints(MemoryFactories, CheckpointSuite):
    """CheckpointSuite on MemoryStore."""
