"""SqlstoreSaver beyond the conformance suite: bad input, storage shape, listing, deletion."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest
from click.testing import CliRunner
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.base.id import uuid6
from redis_server import redis_server, redis_url  # noqa: F401  (fixtures)

from cli.main import cli
from sqlstore import MemoryStore, SQLiteStore
from sqlstore.errors import InvalidSessionId, StoreClosed
from sqlstore.integrations.langgraph import InvalidConfig, SqlstoreSaver, UnsupportedValue

HOSTILE_KEYS = ["x'); DROP TABLE checkpoints; --", 'a"b', "$.step", "source') OR ('1'='1"]


def cfg(thread: str, checkpoint_id: str | None = None, ns: str = "") -> dict[str, Any]:
    """Return a config for a thread (and checkpoint)."""
    conf: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ns}
    if checkpoint_id is not None:
        conf["checkpoint_id"] = checkpoint_id
    return {"configurable": conf}


def put_chain(
    saver: SqlstoreSaver, thread: str, n: int, *, big: str = "", writes: bool = False
) -> list[dict[str, Any]]:
    """Put ``n`` checkpoints in a chain; ``big`` is written once as an unchanged channel."""
    stored: list[dict[str, Any]] = []
    parent: str | None = None
    for step in range(n):
        cp = empty_checkpoint()
        cp["id"] = str(uuid6(clock_seq=step))
        cp["channel_values"] = {"step": step, "big": big}
        cp["channel_versions"] = {"step": str(step + 1), "big": "1"}
        new = {"step": str(step + 1)} | ({"big": "1"} if step == 0 else {})
        config = cfg(thread, parent)
        got = saver.put(config, cp, {"source": "loop", "step": step, "parents": {}}, new)
        if writes:
            saver.put_writes(got, [("step", step), ("note", f"w{step}")], f"task-{step}")
        parent = got["configurable"]["checkpoint_id"]
        stored.append(got)
    return stored


@pytest.fixture
def saver(tmp_path: Path) -> Iterator[SqlstoreSaver]:
    """A saver that owns a SQLite file."""
    with SqlstoreSaver.from_conn_string(tmp_path / "s.db") as made:
        yield made


def test_missing_thread_id_is_a_clear_error(saver: SqlstoreSaver) -> None:
    """Configs without thread_id (or checkpoint_id for writes) raise InvalidConfig with a hint."""
    cp = empty_checkpoint()
    with pytest.raises(InvalidConfig, match="thread_id") as caught:
        saver.put({"configurable": {}}, cp, {}, {})
    assert "configurable" in (caught.value.hint or "")
    with pytest.raises(InvalidConfig):
        saver.get_tuple({})
    with pytest.raises(InvalidConfig, match="checkpoint_id"):
        saver.put_writes(cfg("t"), [("c", 1)], "task")
    with pytest.raises(InvalidSessionId):
        saver.put(cfg("bad\x00id"), cp, {}, {})
    assert saver.store.sessions.list() == []


def test_unknown_ids_give_none_and_empty(saver: SqlstoreSaver) -> None:
    """Unknown threads and checkpoint ids read as None / empty listings, as LangGraph specifies."""
    stored = put_chain(saver, "t", 2)
    assert saver.get_tuple(cfg("t", "no-such-id")) is None
    assert saver.get_tuple(cfg("nobody")) is None
    assert list(saver.list(cfg("nobody"))) == []
    assert list(saver.list(cfg("t"), before=cfg("t", "0"))) == []
    assert len(list(saver.list(cfg("t"), before=stored[-1]))) == 1


def test_refused_value_fails_at_put_and_stores_nothing(saver: SqlstoreSaver) -> None:
    """A value the JSON serializer has no form for raises UnsupportedValue; nothing is stored."""

    class Opaque:
        pass

    cp = empty_checkpoint()
    cp["channel_values"] = {"ok": 1, "bad": Opaque()}
    cp["channel_versions"] = {"ok": "1", "bad": "1"}
    with pytest.raises(UnsupportedValue, match="Opaque") as caught:
        saver.put(cfg("t"), cp, {}, {"ok": "1", "bad": "1"})
    assert "allow" in (caught.value.hint or "")
    assert saver.store.sessions.list() == [] and saver.checkpoints.thread_ids() == []
    stored = put_chain(saver, "t", 1)
    with pytest.raises(UnsupportedValue):
        saver.put_writes(stored[0], [("a", 1), ("b", Opaque())], "task")
    tup = saver.get_tuple(stored[0])
    assert tup is not None and tup.pending_writes == []


def test_filter_keys_with_quotes_and_sql(saver: SqlstoreSaver) -> None:
    """Metadata filter keys with quotes or SQL match nothing extra and change nothing."""
    put_chain(saver, "t", 3)
    for key in HOSTILE_KEYS:
        assert list(saver.list(cfg("t"), filter={key: "loop"})) == []
    cp = empty_checkpoint()
    saver.put(cfg("t"), cp, {HOSTILE_KEYS[0]: "v", "step": 9}, {})
    found = list(saver.list(cfg("t"), filter={HOSTILE_KEYS[0]: "v"}))
    assert [t.checkpoint["id"] for t in found] == [cp["id"]]
    assert len(list(saver.list(cfg("t")))) == 4


def test_unchanged_channel_is_stored_once(saver: SqlstoreSaver) -> None:
    """A 200-step thread whose large channel never changes stores that value once."""
    big = "x" * 100_000
    put_chain(saver, "t", 200, big=big)
    summary = saver.checkpoints.summary("t")
    assert summary.checkpoints == 200
    assert summary.blobs == 201
    assert summary.bytes < 200_000
    latest = saver.get_tuple(cfg("t"))
    assert latest is not None and latest.checkpoint["channel_values"]["big"] == big


def _count_statements() -> tuple[list[str], Any]:
    seen: list[str] = []

    def hook(conn: apsw.Connection) -> None:
        def trace(_cursor: apsw.Cursor, sql: str, _bindings: Any) -> bool:
            seen.append(sql)
            return True

        conn.exec_trace = trace

    return seen, hook


def test_list_with_writes_is_not_a_query_per_checkpoint(tmp_path: Path) -> None:
    """Listing 300 checkpoints with pending writes runs a handful of statements per page."""
    with SqlstoreSaver(str(tmp_path / "s.db")) as saver:
        put_chain(saver, "t", 300, writes=True)
    seen, hook = _count_statements()
    apsw.connection_hooks.append(hook)
    try:
        with SqlstoreSaver(str(tmp_path / "s.db")) as saver:
            seen.clear()
            listed = list(saver.list(cfg("t")))
    finally:
        apsw.connection_hooks.remove(hook)
    assert len(listed) == 300
    assert all(len(t.pending_writes or []) == 2 for t in listed)
    selects = [s for s in seen if "checkpoint" in s]
    assert len(selects) <= 4 * 3 + 2, selects


def test_paused_alist_holds_no_read_transaction(tmp_path: Path) -> None:
    """A paused alist blocks no write and a TRUNCATE checkpoint empties the WAL."""
    db = tmp_path / "s.db"

    async def go() -> None:
        async with SqlstoreSaver.from_conn_string(db) as saver:
            await asyncio.to_thread(put_chain, saver, "t", 250)
            history = saver.alist(cfg("t"))
            first = await anext(history)
            assert first.metadata["step"] == 249
            cp = empty_checkpoint()
            await asyncio.wait_for(saver.aput(cfg("u"), cp, {}, {}), timeout=10)
            other = apsw.Connection(str(db))
            busy, _log, _done = other.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            other.close()
            assert busy == 0
            assert (tmp_path / "s.db-wal").stat().st_size == 0
            rest = [t async for t in history]
            assert len(rest) == 249
            await history.aclose()

    asyncio.run(go())


def test_rm_leaves_nothing_of_the_thread_in_any_table(tmp_path: Path) -> None:
    """After ``sqlstore rm ID`` (the installed console script) no table holds the thread id."""
    db = tmp_path / "s.db"
    with SqlstoreSaver(str(db)) as saver:
        put_chain(saver, "gone", 5, writes=True)
        put_chain(saver, "kept", 2, writes=True)
        saver.put(cfg("gone", ns="child:1"), empty_checkpoint(), {}, {})
    exe = shutil.which("sqlstore", path=str(Path(__import__("sys").executable).parent))
    assert exe is not None
    done = subprocess.run(
        [exe, "--db", str(db), "rm", "gone", "--yes"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    conn = apsw.Connection(str(db))
    tables = [t for (t,) in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")]
    assert {"checkpoints", "checkpoint_blobs", "checkpoint_writes"} <= set(tables)
    for table in tables:
        for row in conn.execute(f'SELECT * FROM "{table}"'):
            assert "gone" not in row, (table, row)
    kept = conn.execute("SELECT count(*) FROM checkpoints WHERE session_id = 'kept'").fetchone()
    conn.close()
    assert kept == (2,)


def test_retention_delete_removes_checkpoints(tmp_path: Path) -> None:
    """A retention-style conditional delete of a thread's session removes its checkpoint rows."""
    with SQLiteStore(tmp_path / "s.db") as store, SqlstoreSaver(store) as saver:
        put_chain(saver, "t", 3, writes=True)
        assert store.sessions.delete_if_unchanged(store.sessions.meta("t"))
        assert saver.checkpoints.summary("t").checkpoints == 0
        assert saver.get_tuple(cfg("t")) is None


def test_shared_store_is_not_closed(tmp_path: Path) -> None:
    """A saver built on an existing store shares it and leaves it open on close."""
    store = MemoryStore()
    with SqlstoreSaver(store) as saver:
        put_chain(saver, "t", 1)
    assert [s.id for s in store.sessions.list()] == ["t"]
    store.close()
    with pytest.raises(TypeError, match="checkpoint port"):
        SqlstoreSaver(object())


def test_cli_prune_and_show_json_on_thread(tmp_path: Path) -> None:
    """``sqlstore rm`` through CliRunner deletes a thread; ``show`` of the other still works."""
    db = tmp_path / "s.db"
    with SqlstoreSaver(str(db)) as saver:
        put_chain(saver, "a", 2)
        put_chain(saver, "b", 2)
    runner = CliRunner()
    assert runner.invoke(cli, ["--db", str(db), "rm", "a", "--yes"]).exit_code == 0
    shown = runner.invoke(cli, ["--db", str(db), "show", "b"])
    assert shown.exit_code == 0 and "step         1" in shown.output


def test_migrate_to_copies_threads_with_their_checkpoints(tmp_path: Path, redis_url: str) -> None:  # noqa: F811
    """``sqlstore migrate --to`` copies a thread's checkpoints (SQLite -> Redis -> SQLite)."""
    src, back = tmp_path / "src.db", tmp_path / "back.db"
    with SqlstoreSaver(str(src)) as saver:
        put_chain(saver, "t", 4, big="payload", writes=True)
        before = saver.store.sessions.meta("t").modified_at
    runner = CliRunner()
    there = runner.invoke(cli, ["--db", str(src), "migrate", "--to", redis_url])
    assert there.exit_code == 0, there.output
    again = runner.invoke(cli, ["migrate", "--from", redis_url, "--to", str(back)])
    assert again.exit_code == 0, again.output
    with SqlstoreSaver(str(back)) as saver:
        assert saver.store.sessions.meta("t").modified_at == before
        history = list(saver.list(cfg("t")))
        assert [t.metadata["step"] for t in history] == [3, 2, 1, 0]
        assert history[0].checkpoint["channel_values"] == {"step": 3, "big": "payload"}
        assert [w[2] for w in history[0].pending_writes or []] == [3, "w3"]


def test_interrupted_copy_is_repaired(tmp_path: Path) -> None:
    """A copied session missing its checkpoints at the destination gets them on the next run."""
    from sqlstore.migrate.copy import copy_store

    with SQLiteStore(tmp_path / "a.db") as src, SQLiteStore(tmp_path / "b.db") as dst:
        with SqlstoreSaver(src) as saver:
            put_chain(saver, "t", 3)
        assert copy_store(src, dst).copied == 1
        dst.checkpoints.import_thread("t", [])
        report = copy_store(src, dst)
        assert report.copied == 0 and dst.checkpoints.summary("t").checkpoints == 3


def test_retention_sweeps_old_threads_and_spares_leased_ones(tmp_path: Path) -> None:
    """A retention sweep deletes an old thread with its checkpoints; a leased one survives."""
    from datetime import UTC, datetime, timedelta

    from freezegun import freeze_time

    import retention

    start = datetime(2026, 3, 1, tzinfo=UTC)
    with SQLiteStore(tmp_path / "s.db") as store, SqlstoreSaver(store) as saver:
        with freeze_time(start):
            put_chain(saver, "old", 2, writes=True)
            put_chain(saver, "leased", 2)
        with freeze_time(start + timedelta(days=9)):
            put_chain(saver, "fresh", 1)
        with freeze_time(start + timedelta(days=10)):
            store.leases.acquire("leased", "worker", timedelta(hours=1))
            policy = retention.Policy(
                main=retention.Rule(max_age=timedelta(days=5)), acknowledge_main_deletion=True
            )
            plan = retention.plan(store, policy)
            report = retention.sweep(store, plan)
        assert report.deleted == 1
        assert saver.checkpoints.thread_ids() == ["fresh", "leased"]
        assert saver.checkpoints.summary("old").writes == 0


def test_saver_on_an_aio_store_and_cancelled_aput(tmp_path: Path) -> None:
    """A saver shares an sqlstore.aio store; a cancelled aput still completes (shielded)."""
    import sqlstore.aio

    async def go() -> None:
        async with sqlstore.aio.open(str(tmp_path / "s.db")) as astore:
            saver = SqlstoreSaver(astore)
            cp = empty_checkpoint()
            task = asyncio.create_task(saver.aput(cfg("t"), cp, {"step": 1}, {}))
            await asyncio.sleep(0)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await saver.aclose()
            assert astore.sync.checkpoints.get("t", "", cp["id"]) is not None
            assert (await astore.sessions.meta("t")).id == "t"

    asyncio.run(go())


def test_listing_decodes_as_get_tuple_does(tmp_path: Path) -> None:
    """Listed tuples (one parse per checkpoint) equal get_tuple's, tagged values and NaN too."""
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.types import Send

    db = str(tmp_path / "s.db")
    with SqlstoreSaver(db) as saver:
        config = cfg("t")
        for step in range(3):
            cp = empty_checkpoint()
            cp["id"] = str(uuid6(clock_seq=step))
            cp["channel_values"] = {
                "messages": [HumanMessage("hi"), AIMessage(f"answer {step}")],
                "pair": (step, float("nan") if step == 1 else 1.5),
                "plain": {"n": step, "s": 'quote " and é'},
            }
            cp["channel_versions"] = {k: str(step + 1) for k in cp["channel_values"]}
            meta = {"source": "loop", "step": step, "parents": {}}
            config = saver.put(config, cp, meta, cp["channel_versions"])
            saver.put_writes(config, [("x", Send("node", {"k": step})), ("y", step)], "task")
        listed = list(saver.list(cfg("t")))
        got = [saver.get_tuple(t.config) for t in listed]
    assert [t.metadata["step"] for t in listed] == [2, 1, 0]
    for one, other in zip(listed, got, strict=True):
        assert other is not None
        assert repr(one) == repr(other)  # NaN != NaN, so compare the text of both
    assert isinstance(listed[0].checkpoint["channel_values"]["messages"][1], AIMessage)
    assert listed[0].pending_writes == [("task", "x", Send("node", {"k": 2})), ("task", "y", 2)]


@pytest.mark.parametrize(
    "corrupt",
    [
        "UPDATE checkpoint_writes SET data = CAST('1],[\"x' AS BLOB) WHERE idx = 1",
        "UPDATE checkpoint_blobs SET data = X'22ff22' WHERE channel = 'step'",
    ],
    ids=["not-json", "not-utf8"],
)
def test_listing_a_corrupt_value_reports_it(tmp_path: Path, corrupt: str) -> None:
    """A stored value that is not JSON (or not UTF-8) fails the listing with CorruptValue."""
    from sqlstore.integrations.langgraph.serde import CorruptValue

    db = str(tmp_path / "s.db")
    with SqlstoreSaver(db) as saver:
        put_chain(saver, "t", 3, writes=True)
    conn = apsw.Connection(db)
    conn.execute(corrupt)
    conn.close()
    with SqlstoreSaver(db) as saver:
        with pytest.raises(CorruptValue, match="not JSON"):
            list(saver.list(cfg("t")))
        with pytest.raises(CorruptValue, match="not JSON"):
            saver.get_tuple(cfg("t"))


def test_concurrent_aputs_share_one_job_and_fail_alone(tmp_path: Path) -> None:
    """Eight aputs of one loop round are one put_many; a refused value fails only its caller."""
    calls: list[int] = []

    async def go() -> None:
        async with SqlstoreSaver.from_conn_string(tmp_path / "s.db") as saver:
            real = saver.checkpoints.put_many

            def counted(items: Any) -> Any:
                calls.append(len(items))
                return real(items)

            saver.checkpoints.put_many = counted  # type: ignore[method-assign]
            checkpoints = []
            for n in range(8):
                cp = empty_checkpoint()
                cp["channel_values"] = {"v": object() if n == 3 else n}
                cp["channel_versions"] = {"v": "1"}
                checkpoints.append(cp)
            got = await asyncio.gather(
                *(
                    saver.aput(cfg(f"t{n}"), cp, {"step": n}, {"v": "1"})
                    for n, cp in enumerate(checkpoints)
                ),
                return_exceptions=True,
            )
            assert isinstance(got[3], UnsupportedValue)
            for n, result in enumerate(got):
                if n == 3:
                    continue
                assert result == cfg(f"t{n}", checkpoints[n]["id"])
                tup = await saver.aget_tuple(cfg(f"t{n}"))
                assert tup is not None and tup.checkpoint["channel_values"] == {"v": n}
            assert await saver.aget_tuple(cfg("t3")) is None
        with pytest.raises(StoreClosed):
            await saver.aput(cfg("late"), empty_checkpoint(), {}, {})

    asyncio.run(go())
    assert calls == [7]
