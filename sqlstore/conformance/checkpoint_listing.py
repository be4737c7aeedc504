"""Listing tests of the checkpoint port, run by :class:`~sqlstore.conformance.CheckpointSuite`.

Pins keyset paging across the namespaces of a thread (including more
namespaces than a backend may merge scan by scan) and ``documents``: the one
JSON text per checkpoint that the LangGraph saver parses once, equal to what
the pieces of ``page`` say, ``None`` when a piece is of another type.
"""

from __future__ import annotations

import json
from typing import Any

from sqlstore.checkpoints import (
    EMPTY_BLOB_TYPE,
    JSON_TYPE,
    ChannelBlob,
    CheckpointKey,
    CheckpointQuery,
    CheckpointRecord,
    PendingWrite,
)
from sqlstore.conformance.base import SuiteBase
from sqlstore.ports import CheckpointStore, Store, checkpoints_of


def _cid(n: int) -> str:
    return f"1f0{n:05d}-0000-6000-8000-000000000000"


def _json_record(thread: str, n: int, ns: str = "", **metadata: Any) -> CheckpointRecord:
    return CheckpointRecord(
        thread_id=thread,
        ns=ns,
        checkpoint_id=_cid(n),
        parent_id=_cid(n - 1) if n > 1 else None,
        type=JSON_TYPE,
        body=json.dumps({"id": _cid(n), "v": 2}).encode(),
        metadata=json.dumps({"step": n, **metadata}).encode(),
        versions={"a": f"{n:03}", "e": "001"},
    )


def _json_write(task: str, idx: int, value: Any, path: str) -> PendingWrite:
    return PendingWrite(task, idx, "ch", JSON_TYPE, json.dumps(value).encode(), path)


class CheckpointPortBase(SuiteBase):
    """What the checkpoint suites share: the port of the store under test."""

    __test__ = False

    @staticmethod
    def port(store: Store) -> CheckpointStore:
        """Return the store's checkpoint port (every sqlstore backend has one)."""
        found = checkpoints_of(store)
        assert isinstance(found, CheckpointStore), "the store has no checkpoint port"
        return found


class CheckpointListingTests(CheckpointPortBase):
    """Listing order and documents of one backend's checkpoint port."""

    __test__ = False

    def _walk(self, cp: CheckpointStore, query: CheckpointQuery, limit: int) -> list[Any]:
        keys: list[Any] = []
        after: CheckpointKey | None = None
        while True:
            page = cp.page(query, after=after, limit=limit)
            docs = cp.documents(query, after=after, limit=limit)
            assert [e.key for e in page.entries] == [
                (d.checkpoint_id, d.thread_id, d.ns) for d in docs.documents
            ]
            assert docs.next == page.next
            keys += [e.key for e in page.entries]
            if page.next is None:
                return keys
            after = page.next

    def test_checkpoint_listing_pages_across_namespaces(self, store: Store) -> None:
        """A thread listed without a namespace pages in (id, thread, ns) order, also past 16 ns."""
        cp = self.port(store)
        for spaces in (3, 20):
            thread = f"t{spaces}"
            for n in range(1, 6):
                for s in range(spaces):
                    # Namespaces share ids, so ties on the id are broken by the namespace.
                    cp.put(_json_record(thread, n if s % 2 else n + 1, ns=f"ns{s:02}"), [])
            expected = sorted(
                ((_cid(n if s % 2 else n + 1), thread, f"ns{s:02}")
                 for n in range(1, 6) for s in range(spaces)),
                reverse=True,
            )  # fmt: skip
            for limit in (1, 4, 7, 100):
                assert self._walk(cp, CheckpointQuery(thread_id=thread), limit) == expected
            before = CheckpointQuery(thread_id=thread, before=_cid(3))
            assert self._walk(cp, before, 2) == [k for k in expected if k[0] < _cid(3)]

    def test_checkpoint_documents_join_the_stored_pieces(self, store: Store) -> None:
        """A document is [body, values, metadata, writes in order]; other types give None."""
        cp = self.port(store)
        for n in (1, 2):
            blobs = [
                ChannelBlob("a", f"{n:03}", JSON_TYPE, json.dumps({"n": n, "s": 'é"x'}).encode()),
                ChannelBlob("e", "001", EMPTY_BLOB_TYPE, b""),
            ]
            cp.put(_json_record("t", n, source="loop"), blobs if n == 1 else blobs[:1])
        writes = [_json_write("t2", 0, [1], "b"), _json_write("t1", 1, "y", "a")]
        cp.put_writes("t", "", _cid(2), [*writes, _json_write("t1", 0, None, "a")])
        cp.put(_json_record("t", 3), [ChannelBlob("a", "003", "msgpack", b"\x81\xa1")])
        docs = cp.documents(CheckpointQuery(thread_id="t"), limit=10)
        assert [d.checkpoint_id for d in docs.documents] == [_cid(3), _cid(2), _cid(1)]
        assert docs.documents[0].text is None
        assert docs.documents[1].parent_id == _cid(1) and docs.documents[2].parent_id is None
        texts = [d.text for d in docs.documents[1:]]
        assert all(t is not None for t in texts)
        assert [json.loads(t) for t in texts if t is not None] == [
            [
                {"id": _cid(2), "v": 2},
                {"a": {"n": 2, "s": 'é"x'}},
                {"step": 2, "source": "loop"},
                [["t1", "ch", None], ["t1", "ch", "y"], ["t2", "ch", [1]]],
            ],
            [
                {"id": _cid(1), "v": 2},
                {"a": {"n": 1, "s": 'é"x'}},
                {"step": 1, "source": "loop"},
                [],
            ],
        ]
        loop = cp.documents(CheckpointQuery(thread_id="t", filter={"source": "loop"}), limit=10)
        assert [d.checkpoint_id for d in loop.documents] == [_cid(2), _cid(1)]
