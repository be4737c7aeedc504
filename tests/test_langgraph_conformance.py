"""LangGraph's own checkpointer conformance suite against SqlstoreSaver on all three backends."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES
from redis_server import redis_server, redis_url  # noqa: F401  (fixtures)

from sqlstore import MemoryStore, SQLiteStore
from sqlstore.integrations.langgraph import SqlstoreSaver
from sqlstore.ports import Store


def run_conformance(name: str, make_store: Callable[[], Store]) -> None:
    """Run every capability of the suite; assert all eight are detected and pass."""

    @checkpointer_test(name=name)
    async def factory() -> AsyncIterator[SqlstoreSaver]:
        store = make_store()
        saver = SqlstoreSaver(store)
        try:
            yield saver
        finally:
            saver.close()
            store.close()

    report = asyncio.run(validate(factory))
    detected = {cap for cap, result in report.results.items() if result.detected}
    assert detected == {cap.value for cap in ALL_CAPABILITIES}
    failures = {cap: r.failures for cap, r in report.results.items() if not r.passed}
    assert failures == {}
    assert all(r.tests_passed > 0 for r in report.results.values())


def test_conformance_sqlite(tmp_path: Path) -> None:
    """Every capability of langgraph-checkpoint-conformance passes on a SQLite file."""
    run_conformance("SqlstoreSaver[sqlite]", lambda: SQLiteStore(tmp_path / "lg.db"))


def test_conformance_memory() -> None:
    """Every capability of langgraph-checkpoint-conformance passes on MemoryStore."""
    run_conformance("SqlstoreSaver[memory]", MemoryStore)


def test_conformance_redis(redis_url: str) -> None:  # noqa: F811  (fixture parameter)
    """Every capability of langgraph-checkpoint-conformance passes on RedisStore."""
    from sqlstore.redis import RedisStore

    run_conformance("SqlstoreSaver[redis]", lambda: RedisStore(redis_url))
