"""``CheckpointSuite``: the graph-checkpoint port (``store.checkpoints``) of every backend.

Pins :class:`sqlstore.ports.CheckpointStore`: round trips with parent link,
metadata and per-channel blobs; blobs stored once per (channel, version);
pending writes idempotent on (task_id, idx) and returned in (task_path,
task_id, idx) order; listings newest first with ``before``, keyset paging and
metadata filters whose keys are data (quotes and SQL in a key match only that
key); ``delete_for_runs``, ``copy_thread``, ``prune``; the thread as a session
(created on first put, ``modified_at`` moving on every write, deleted with all
of its checkpoint data). A backend's test module subclasses it with
``make_store``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from freezegun import freeze_time

from sqlstore.checkpoints import (
    EMPTY_BLOB_TYPE,
    ChannelBlob,
    CheckpointQuery,
    CheckpointRecord,
    InvalidCheckpoint,
    PendingWrite,
)
from sqlstore.conformance.checkpoint_batch import CheckpointBatchTests
from sqlstore.conformance.checkpoint_listing import CheckpointListingTests
from sqlstore.errors import InvalidSessionId, SessionNotFound
from sqlstore.ports import Store
from sqlstore.session import Session

T0 = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)

HOSTILE_KEYS = ["a'b", 'k"); DROP TABLE checkpoints; --', "$.source", "x') OR 1=1 --", "é ü"]
"""Metadata keys that would break (or rewrite) a query that put keys into its text."""


def cid(n: int) -> str:
    """Return the n-th checkpoint id (ids sort as LangGraph's do: by time)."""
    return f"1f0{n:05d}-0000-6000-8000-000000000000"


def record(
    thread: str,
    n: int,
    *,
    ns: str = "",
    parent: int | None = None,
    versions: dict[str, str] | None = None,
    **metadata: Any,
) -> CheckpointRecord:
    """Return checkpoint ``n`` of a thread with the given metadata."""
    return CheckpointRecord(
        thread_id=thread,
        ns=ns,
        checkpoint_id=cid(n),
        parent_id=None if parent is None else cid(parent),
        type="json",
        body=json.dumps({"n": n}).encode(),
        metadata=json.dumps({"step": n, **metadata}).encode(),
        versions=versions or {},
    )


def blob(channel: str, version: str, value: str) -> ChannelBlob:
    """Return one channel blob holding ``value``."""
    return ChannelBlob(channel, version, "json", value.encode())


def write(task: str, idx: int, channel: str, value: str, path: str = "") -> PendingWrite:
    """Return one pending write."""
    return PendingWrite(task, idx, channel, "json", value.encode(), path)


class CheckpointSuite(CheckpointListingTests, CheckpointBatchTests):
    """The checkpoint port of one backend (with the tests of ``checkpoint_listing``/``_batch``)."""

    __test__ = False

    def test_checkpoint_round_trip(self, store: Store) -> None:
        """A put checkpoint reads back with its body, parent, metadata and blobs."""
        cp = self.port(store)
        cp.put(record("t", 1, versions={"a": "1"}), [blob("a", "1", "alpha")])
        cp.put(record("t", 2, parent=1, versions={"a": "1"}, run_id="r"), [])
        got = cp.get("t", "", cid(2))
        assert got is not None
        assert got.record.parent_id == cid(1)
        assert json.loads(got.record.body) == {"n": 2}
        assert json.loads(got.record.metadata) == {"step": 2, "run_id": "r"}
        assert dict(got.record.versions) == {"a": "1"}
        assert got.blobs["a"].data == b"alpha" and got.writes == []
        first = cp.get("t", "", cid(1))
        assert first is not None and first.record.parent_id is None

    def test_checkpoint_get_latest_and_missing(self, store: Store) -> None:
        """Without an id the newest of the namespace is returned; unknown ids give None."""
        cp = self.port(store)
        for n in (1, 3, 2):
            cp.put(record("t", n), [])
        latest = cp.get("t", "")
        assert latest is not None and latest.record.checkpoint_id == cid(3)
        assert cp.get("t", "", cid(9)) is None
        assert cp.get("t", "child") is None
        assert cp.get("nobody", "") is None

    def test_checkpoint_blobs_are_kept_per_version(self, store: Store) -> None:
        """A channel left out of a put is read from the blob of its unchanged version."""
        cp = self.port(store)
        cp.put(
            record("t", 1, versions={"a": "1", "b": "1"}),
            [blob("a", "1", "a1"), blob("b", "1", "b1")],
        )
        cp.put(record("t", 2, versions={"a": "2", "b": "1"}), [blob("a", "2", "a2")])
        second, first = cp.get("t", "", cid(2)), cp.get("t", "", cid(1))
        assert second is not None and first is not None
        assert {k: v.data for k, v in second.blobs.items()} == {"a": b"a2", "b": b"b1"}
        assert {k: v.data for k, v in first.blobs.items()} == {"a": b"a1", "b": b"b1"}
        assert cp.summary("t").blobs == 3

    def test_checkpoint_empty_blob_is_returned_with_its_type(self, store: Store) -> None:
        """A version without a value is stored as an ``empty`` blob and returned as such."""
        cp = self.port(store)
        cp.put(record("t", 1, versions={"a": "1"}), [ChannelBlob("a", "1", EMPTY_BLOB_TYPE, b"")])
        got = cp.get("t", "")
        assert got is not None and got.blobs["a"].type == EMPTY_BLOB_TYPE

    def test_checkpoint_writes_idempotent_and_ordered(self, store: Store) -> None:
        """Writes keep the first value per (task_id, idx) unless replaced; path/task/idx order."""
        cp = self.port(store)
        cp.put(record("t", 1), [])
        cp.put_writes(
            "t", "", cid(1), [write("t2", 0, "c", "x", "b"), write("t2", 1, "c", "y", "b")]
        )
        cp.put_writes("t", "", cid(1), [write("t1", 0, "c", "z", "a")])
        cp.put_writes("t", "", cid(1), [write("t1", 0, "c", "again", "a")])
        cp.put_writes("t", "", cid(1), [write("t1", -3, "__interrupt__", "i1", "a")], replace=True)
        cp.put_writes("t", "", cid(1), [write("t1", -3, "__interrupt__", "i2", "a")], replace=True)
        got = cp.get("t", "")
        assert got is not None
        assert [(w.task_id, w.idx, w.data) for w in got.writes] == [
            ("t1", -3, b"i2"),
            ("t1", 0, b"z"),
            ("t2", 0, b"x"),
            ("t2", 1, b"y"),
        ]

    def test_checkpoint_writes_are_per_checkpoint_and_namespace(self, store: Store) -> None:
        """Writes of one checkpoint or namespace are not seen by another."""
        cp = self.port(store)
        cp.put(record("t", 1), [])
        cp.put(record("t", 1, ns="child"), [])
        cp.put(record("t", 2), [])
        cp.put_writes("t", "", cid(1), [write("a", 0, "c", "root")])
        cp.put_writes("t", "child", cid(1), [write("a", 0, "c", "child")])
        root, child, newer = cp.get("t", "", cid(1)), cp.get("t", "child"), cp.get("t", "")
        assert root is not None and child is not None and newer is not None
        assert [w.data for w in root.writes] == [b"root"]
        assert [w.data for w in child.writes] == [b"child"]
        assert newer.writes == []

    def test_checkpoint_page_order_before_and_continuation(self, store: Store) -> None:
        """Pages run newest first; ``before`` and the page key continue without repeats."""
        cp = self.port(store)
        for n in range(1, 8):
            cp.put(record("t", n), [])
        cp.put(record("other", 9), [])
        seen: list[str] = []
        after = None
        while True:
            page = cp.page(CheckpointQuery(thread_id="t", ns=""), after=after, limit=3)
            seen += [e.record.checkpoint_id for e in page.entries]
            if page.next is None:
                break
            after = page.next
        assert seen == [cid(n) for n in range(7, 0, -1)]
        before = cp.page(CheckpointQuery(thread_id="t", before=cid(3)), limit=10)
        assert [e.record.checkpoint_id for e in before.entries] == [cid(2), cid(1)]
        assert before.next is None
        everything = cp.page(CheckpointQuery(), limit=100)
        assert everything.entries[0].record.checkpoint_id == cid(9)
        assert len(everything.entries) == 8

    def test_checkpoint_page_carries_writes_and_blobs(self, store: Store) -> None:
        """Listed entries hold their own blobs and pending writes."""
        cp = self.port(store)
        for n in range(1, 4):
            cp.put(record("t", n, versions={"a": str(n)}), [blob("a", str(n), f"v{n}")])
            cp.put_writes("t", "", cid(n), [write("task", 0, "c", f"w{n}")])
        page = cp.page(CheckpointQuery(thread_id="t"), limit=10)
        assert [(e.blobs["a"].data, [w.data for w in e.writes]) for e in page.entries] == [
            (b"v3", [b"w3"]),
            (b"v2", [b"w2"]),
            (b"v1", [b"w1"]),
        ]

    def test_checkpoint_metadata_filter(self, store: Store) -> None:
        """Filters compare decoded metadata: every key equal; a missing key equals None."""
        cp = self.port(store)
        cp.put(record("t", 1, source="input"), [])
        cp.put(record("t", 2, source="loop", score=42), [])
        cp.put(record("t", 3, source="loop", nested={"x": [1, 2]}, flag=True), [])

        def ids(**wanted: Any) -> list[str]:
            page = cp.page(CheckpointQuery(thread_id="t", filter=wanted), limit=10)
            return [e.record.checkpoint_id for e in page.entries]

        assert ids(source="loop") == [cid(3), cid(2)]
        assert ids(source="loop", step=2) == [cid(2)]
        assert ids(score=42) == [cid(2)]
        assert ids(nested={"x": [1, 2]}) == [cid(3)]
        assert ids(flag=True) == [cid(3)]
        assert ids(flag=1) == []
        assert ids(score=None) == [cid(3), cid(1)]
        assert ids(source="update") == []

    def test_checkpoint_metadata_filter_keys_are_data(self, store: Store) -> None:
        """Keys with quotes, SQL or JSON-path syntax match only a key of that exact text."""
        cp = self.port(store)
        for n, key in enumerate(HOSTILE_KEYS, start=1):
            cp.put(record("t", n, **{key: "yes"}), [])  # type: ignore[arg-type]
        for n, key in enumerate(HOSTILE_KEYS, start=1):
            page = cp.page(CheckpointQuery(thread_id="t", filter={key: "yes"}), limit=50)
            assert [e.record.checkpoint_id for e in page.entries] == [cid(n)], key
        page = cp.page(CheckpointQuery(thread_id="t"), limit=50)
        assert len(page.entries) == len(HOSTILE_KEYS)

    def test_checkpoint_delete_for_runs(self, store: Store) -> None:
        """Checkpoints of the listed runs go with their writes and unshared blobs; others stay."""
        cp = self.port(store)
        cp.put(record("t", 1, run_id="r1", versions={"a": "1"}), [blob("a", "1", "keep")])
        cp.put(record("t", 2, run_id="r2", versions={"a": "2"}), [blob("a", "2", "drop")])
        cp.put(record("t", 3, run_id="r3", versions={"a": "1"}), [])
        cp.put(record("u", 1, ns="n", run_id="r2"), [])
        cp.put_writes("t", "", cid(2), [write("x", 0, "c", "w")])
        assert cp.delete_for_runs(["r2", "unknown"]) == 2
        left = cp.page(CheckpointQuery(), limit=10)
        assert [(e.record.thread_id, e.record.checkpoint_id) for e in left.entries] == [
            ("t", cid(3)),
            ("t", cid(1)),
        ]
        summary = cp.summary("t")
        assert (summary.checkpoints, summary.blobs, summary.writes) == (2, 1, 0)
        assert cp.delete_for_runs([]) == 0

    def test_checkpoint_copy_thread(self, store: Store) -> None:
        """A copy holds every checkpoint, blob and write under the new id; the source is intact."""
        cp = self.port(store)
        cp.put(
            record("src", 1, versions={"a": "1"}), [blob("a", "1", "v")], session=Session.new("src")
        )
        cp.put(record("src", 2, parent=1, versions={"a": "1"}), [])
        cp.put(record("src", 1, ns="child"), [])
        cp.put_writes("src", "", cid(2), [write("t", 0, "c", "w")])
        assert cp.copy_thread("src", "dst", session=Session.new("dst", title="copy")) == 3
        for thread in ("src", "dst"):
            page = cp.page(CheckpointQuery(thread_id=thread), limit=10)
            assert [(e.record.ns, e.record.checkpoint_id) for e in page.entries] == [
                ("", cid(2)),
                ("child", cid(1)),
                ("", cid(1)),
            ]
            newest = cp.get(thread, "")
            assert newest is not None and newest.blobs["a"].data == b"v"
            assert [w.data for w in newest.writes] == [b"w"]
        assert store.sessions.load("dst").title == "copy"
        assert cp.copy_thread("missing", "dst2", session=Session.new("dst2")) == 0
        with pytest.raises(SessionNotFound):
            store.sessions.load("dst2")

    def test_checkpoint_prune_keep_latest_and_delete(self, store: Store) -> None:
        """keep_latest leaves each namespace's newest checkpoint and its writes; delete empties."""
        cp = self.port(store)
        for n in range(1, 4):
            cp.put(record("t", n, versions={"a": str(n)}), [blob("a", str(n), f"v{n}")])
            cp.put(record("t", n, ns="child"), [])
            cp.put_writes("t", "", cid(n), [write("x", 0, "c", f"w{n}")])
        cp.put(record("other", 1), [])
        assert cp.prune(["t", "missing"], strategy="keep_latest") == 4
        page = cp.page(CheckpointQuery(thread_id="t"), limit=10)
        assert [(e.record.ns, e.record.checkpoint_id) for e in page.entries] == [
            ("child", cid(3)),
            ("", cid(3)),
        ]
        assert [w.data for w in page.entries[1].writes] == [b"w3"]
        assert cp.summary("t").blobs == 1
        assert cp.prune(["t"], strategy="delete") == 2
        assert cp.summary("t").checkpoints == 0 and cp.get("other", "") is not None
        assert cp.prune([]) == 0
        with pytest.raises(ValueError, match="strategy"):
            cp.prune(["t"], strategy="everything")  # type: ignore[arg-type]

    def test_checkpoint_thread_is_a_session(self, store: Store) -> None:
        """The first put creates the session; every put and write moves its modified_at."""
        cp = self.port(store)
        with freeze_time(T0) as frozen:
            cp.put(record("t", 1), [], session=Session.new("t", title="chat"))
            meta = store.sessions.meta("t")
            assert meta.title == "chat" and meta.modified_at == T0
            frozen.tick(timedelta(seconds=5))
            cp.put(record("t", 2), [], session=Session.new("t", title="ignored"))
            second = store.sessions.meta("t")
            assert second.modified_at == T0 + timedelta(seconds=5) and second.title == "chat"
            assert second.version > meta.version
            frozen.tick(timedelta(seconds=5))
            cp.put_writes("t", "", cid(2), [write("x", 0, "c", "w")])
            assert store.sessions.meta("t").modified_at == T0 + timedelta(seconds=10)
        assert "t" in {s.id for s in store.sessions.list()}
        assert cp.thread_ids() == ["t"]

    def test_checkpoint_session_delete_removes_checkpoint_data(self, store: Store) -> None:
        """Deleting the session removes every checkpoint, blob and write of the thread."""
        cp = self.port(store)
        cp.put(record("t", 1, versions={"a": "1"}), [blob("a", "1", "v")], session=Session.new("t"))
        cp.put(record("t", 1, ns="child"), [])
        cp.put_writes("t", "", cid(1), [write("x", 0, "c", "w")])
        cp.put(record("keep", 1), [], session=Session.new("keep"))
        store.sessions.delete("t")
        summary = cp.summary("t")
        assert (summary.checkpoints, summary.blobs, summary.writes) == (0, 0, 0)
        assert cp.get("t", "") is None and cp.thread_ids() == ["keep"]

    def test_checkpoint_bad_input_changes_nothing(self, store: Store) -> None:
        """Invalid ids and metadata are refused with a clear error and nothing is stored."""
        cp = self.port(store)
        with pytest.raises(InvalidSessionId):
            cp.put(record("", 1), [])
        bad = CheckpointRecord("t", "", cid(1), None, "json", b"{}", b"[1]", {})
        with pytest.raises(InvalidCheckpoint, match="JSON object"):
            cp.put(bad, [], session=Session.new("t"))
        with pytest.raises(InvalidCheckpoint, match="checkpoint id"):
            cp.put_writes("t", "", "", [write("x", 0, "c", "w")])
        with pytest.raises(ValueError, match="limit"):
            cp.page(CheckpointQuery(), limit=0)
        assert cp.thread_ids() == [] and store.sessions.list() == []

    def test_checkpoint_import_thread_replaces_without_touching(self, store: Store) -> None:
        """import_thread replaces a thread's checkpoint data and leaves its session as it was."""
        cp = self.port(store)
        cp.put(
            record("src", 1, versions={"a": "1"}), [blob("a", "1", "v")], session=Session.new("src")
        )
        cp.put_writes("src", "", cid(1), [write("t", 0, "c", "w")])
        entries = cp.page(CheckpointQuery(thread_id="src"), limit=10).entries
        with freeze_time(T0):
            store.sessions.save(Session.new("dst"))
        cp.put(record("dst", 7), [])
        with freeze_time(T0):
            store.sessions.save(Session.new("dst"))
        cp.import_thread("dst", entries)
        assert store.sessions.meta("dst").modified_at == T0
        page = cp.page(CheckpointQuery(thread_id="dst"), limit=10)
        assert [e.record.checkpoint_id for e in page.entries] == [cid(1)]
        got = page.entries[0]
        assert got.blobs["a"].data == b"v" and [w.data for w in got.writes] == [b"w"]
        assert "dst" in cp.thread_ids()
        cp.import_thread("dst", [])
        assert cp.summary("dst").checkpoints == 0 and "dst" not in cp.thread_ids()
