"""Every conformance suite against ``SQLiteStore``: one handle, two handles, two processes."""

from __future__ import annotations

from pathlib import Path

from sqlstore import SQLiteStore
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


class SQLiteFactories:
    """Factories shared by the SQLiteStore suites (default durability: full)."""

    def make_store(self, tmp_path: Path) -> Store:
        """Return a store on a new file."""
        return SQLiteStore(tmp_path / "single.db")

    def make_pair(self, tmp_path: Path) -> tuple[Store, Store]:
        """Return two independently opened stores on one new file."""
        path = tmp_path / "shared.db"
        return SQLiteStore(path), SQLiteStore(path)

    def second_process_target(self, tmp_path: Path) -> ProcessTarget:
        """A child process opens the pair's file with ``sqlstore.open(path)``."""
        return ProcessTarget(str(tmp_path / "shared.db"))


class TestSQLiteStore(SQLiteFactories, StoreSuite):
    """StoreSuite on SQLiteStore."""


class TestSQLitePrunable(SQLiteFactories, PrunableSuite):
    """PrunableSuite on SQLiteStore."""


class TestSQLitePager(SQLiteFactories, PagerSuite):
    """PagerSuite on SQLiteStore."""


class TestSQLiteConditionalPrune(SQLiteFactories, ConditionalPruneSuite):
    """ConditionalPruneSuite on SQLiteStore."""


class TestSQLiteCreator(SQLiteFactories, CreatorSuite):
    """CreatorSuite on two SQLiteStore handles and two OS processes on one file."""


class TestSQLiteEventLog(SQLiteFactories, EventLogSuite):
    """EventLogSuite on SQLiteStore."""


class TestSQLiteCursor(SQLiteFactories, CursorSuite):
    """CursorSuite on SQLiteStore, including a second handle and a second OS process."""


class TestSQLiteLeases(SQLiteFactories, LeaseSuite):
    """LeaseSuite on SQLiteStore."""


class TestSQLiteAuditQuery(SQLiteFactories, AuditQuerySuite):
    """AuditQuerySuite on SQLiteStore."""


class TestSQLiteImportTarget(SQLiteFactories, ImportTargetSuite):
    """ImportTargetSuite on SQLiteStore."""


class TestSQLiteSweepHistory(SQLiteFactories, SweepHistorySuite):
    """SweepHistorySuite on SQLiteStore."""


class TestSQLiteBatch(SQLiteFactories, BatchSuite):
    """BatchSuite on SQLiteStore, with a second OS process and kill -9 mid-batch."""


class TestSQLiteTail(SQLiteFactories, TailSuite):
    """TailSuite on SQLiteStore."""


class TestSQLiteVersion(SQLiteFactories, VersionSuite):
    """VersionSuite on SQLiteStore."""


class TestSQLiteApply(SQLiteFactories, ApplySuite):
    """ApplySuite on SQLiteStore."""


class TestSQLiteScopes(SQLiteFactories, ScopesSuite):
    """ScopesSuite on SQLiteStore."""


class TestSQLiteCheckpoints(SQLiteFactories, CheckpointSuite):
    """CheckpointSuite on SQLiteStore."""
