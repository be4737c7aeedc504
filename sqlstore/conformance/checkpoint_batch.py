"""``put_many`` tests of the checkpoint port, run by :class:`~sqlstore.conformance.CheckpointSuite`.

Pins that every item of a batch is its own unit: stored items read back as
after ``put`` (sessions created for new threads, ``modified_at`` moved), a
malformed item fails alone with the error ``put`` gives, and nothing of it is
stored.
"""

from __future__ import annotations

import json

from sqlstore.checkpoints import ChannelBlob, CheckpointQuery, CheckpointRecord, InvalidCheckpoint
from sqlstore.conformance.checkpoint_listing import CheckpointPortBase
from sqlstore.errors import InvalidSessionId
from sqlstore.ports import Store
from sqlstore.session import Session


def _record(thread: str, checkpoint_id: str, *, metadata: bytes = b"{}") -> CheckpointRecord:
    return CheckpointRecord(
        thread, "", checkpoint_id, None, "json", b'{"n": 1}', metadata, {"a": "1"}
    )


class CheckpointBatchTests(CheckpointPortBase):
    """``put_many`` of one backend's checkpoint port."""

    __test__ = False

    def test_checkpoint_put_many_stores_each_item_as_its_own_unit(self, store: Store) -> None:
        """Good items are stored with their sessions; each bad item fails alone, storing nothing."""
        cp = self.port(store)
        blob = ChannelBlob("a", "1", "json", b'"v"')
        errors = cp.put_many(
            [
                (_record("t1", "c1"), [blob], Session.new("t1", title="one")),
                (_record("", "c1"), [blob], None),
                (_record("t2", "c1", metadata=b"[1]"), [blob], Session.new("t2")),
                (_record("t1", "c2"), [], Session.new("t1", title="other")),
                (_record("t3", "c1"), [blob], Session.new("t3")),
            ]
        )
        assert [type(e) if e is not None else None for e in errors] == [
            None,
            InvalidSessionId,
            InvalidCheckpoint,
            None,
            None,
        ]
        assert [
            e.record.checkpoint_id
            for e in cp.page(CheckpointQuery(thread_id="t1"), limit=10).entries
        ] == [
            "c2",
            "c1",
        ]
        first = cp.get("t1", "", "c1")
        assert first is not None and first.blobs["a"].data == b'"v"'
        assert json.loads(first.record.body) == {"n": 1}
        assert store.sessions.meta("t1").title == "one"  # created by the first item only
        assert cp.get("t2", "") is None and "t2" not in [m.id for m in store.sessions.list()]
        assert cp.get("t3", "") is not None
        assert cp.put_many([]) == []
