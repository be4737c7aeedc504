"""``ImportTargetSuite``: the write side of ``sqlstore migrate`` and ``copy_store``.

The target is ``store.imports``.

Pins :class:`sqlstore.ports.ImportTarget`, including the "exists" contract: an
id exists when it holds a snapshot, an event log or audit rows, and an import
without ``overwrite`` leaves every such id exactly as it was.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from sqlstore import clock
from sqlstore.audit import ToolCallRecord
from sqlstore.conformance.base import SuiteBase
from sqlstore.conformance.fixtures import assert_same_session, representative_session
from sqlstore.cursor import encode_cursor
from sqlstore.errors import CursorExpired
from sqlstore.events import Event
from sqlstore.imports import (
    OUTCOME_IMPORTED,
    SKIP_ALREADY_IMPORTED,
    SKIP_CHANGED,
    SKIP_EXISTS,
    BatchEntry,
    Fingerprint,
    ItemRow,
    LogEntry,
    SessionImport,
)
from sqlstore.ports import ImportTarget, Store, imports_of
from sqlstore.session import Session

SOURCE_MTIME = datetime(2025, 3, 4, 5, 6, 7, 890123, tzinfo=UTC)
"""The source's modification time every imported session must keep."""

GENERATION = "0123456789abcdef"
"""The source log's generation an import keeps (so source cursors stay valid)."""

NOW_NS = clock.to_ns(datetime(2026, 6, 1, tzinfo=UTC))


def target(store: Store, job_id: str = "conf-job") -> ImportTarget:
    """The store's import target with ``job_id`` started (the suite fails without one).

    A job is started before its first batch, as ``sqlstore migrate`` does.
    """
    found = imports_of(store)
    assert found is not None, "store.imports is missing"
    found.start_job(job_id, "/src", "runlog", NOW_NS)
    return found


def payload(
    session_id: str, *, events: int = 3, generation: str | None = GENERATION
) -> SessionImport:
    """An import of a representative session with ``events`` events, a gap and two audit rows."""
    session = representative_session(session_id)
    log = [LogEntry(event=Event(type="message", text=f"event {i}")) for i in range(events)]
    log.append(LogEntry(gap_reason="torn tail"))
    audit = [
        ToolCallRecord(session_id=session_id, call_id="t1", tool="search", at=SOURCE_MTIME),
        ToolCallRecord(session_id=session_id, call_id="t2", tool="shell", is_error=True),
    ]
    return SessionImport(
        session=session,
        log=log,
        audit=audit,
        modified_at_ns=clock.to_ns(SOURCE_MTIME),
        generation=generation,
    )


def entry(item: str, imported: SessionImport | None) -> BatchEntry:
    """A batch entry for ``item`` (its row says ``imported``; the target decides)."""
    sid = None if imported is None else imported.session.id
    return BatchEntry(
        ItemRow(item, Fingerprint(10, 20, "ab" * 32), OUTCOME_IMPORTED, sid), imported
    )


def contents(store: Store, session_id: str) -> tuple[object, ...]:
    """Everything stored under an id: snapshot (or None), events, audit rows."""
    try:
        snap: object = store.sessions.load(session_id)
    except LookupError:
        snap = None
    return (
        snap,
        [(r.kind, r.event, r.gap_reason) for r in store.events.read_after(session_id)],
        store.audit.list(session_id),
    )


class ImportTargetSuite(SuiteBase):
    """Every backend's import target writes, skips and checkpoints alike."""

    __test__ = False

    def test_import_target_is_offered(self, store: Store) -> None:
        """The store offers ``imports``; a new job has no checkpoint rows."""
        found = imports_of(store)
        assert found is not None, "store.imports is missing"
        assert found.load_items("conf-job") == {}

    def test_import_writes_snapshot_log_and_audit(self, store: Store) -> None:
        """An imported session reads back whole, with the source's modified_at and generation."""
        imports = target(store)
        assert imports.write_batch(
            "conf-job", [entry("a", payload("conf-imp-a"))], overwrite=False, now_ns=NOW_NS
        ) == [OUTCOME_IMPORTED]
        imports.finish_job("conf-job", "done", NOW_NS)
        assert_same_session(store.sessions.load("conf-imp-a"), representative_session("conf-imp-a"))
        assert store.sessions.meta("conf-imp-a").modified_at == SOURCE_MTIME
        records = list(store.events.read_after("conf-imp-a"))
        assert [r.kind for r in records] == ["event", "event", "event", "gap"]
        assert records[-1].gap_reason == "torn tail"
        # The source's cursors stay valid: positions count records, the generation is kept.
        after_two = encode_cursor("conf-imp-a", GENERATION, 2)
        assert [
            r.event.text for r in store.events.read_after("conf-imp-a", after_two) if r.event
        ] == ["event 2"]
        audit = store.audit.list("conf-imp-a")
        assert [(r.call_id, r.is_error) for r in audit] == [("t1", False), ("t2", True)]
        assert audit[0].at == SOURCE_MTIME

    def test_import_checkpoint_rows_are_kept(self, store: Store) -> None:
        """Each entry's row is stored with its final outcome, fingerprint and session id."""
        imports = target(store)
        skipped = BatchEntry(ItemRow("b", Fingerprint(1, 2, "cd" * 32), "not_a_session", None, "x"))
        imports.write_batch(
            "conf-job", [entry("a", payload("conf-imp-a")), skipped], overwrite=False, now_ns=NOW_NS
        )
        rows = imports.load_items("conf-job")
        assert rows == {
            "a": ItemRow("a", Fingerprint(10, 20, "ab" * 32), OUTCOME_IMPORTED, "conf-imp-a", ""),
            "b": ItemRow("b", Fingerprint(1, 2, "cd" * 32), "not_a_session", None, "x"),
        }
        assert imports.load_items("conf-other-job") == {}

    @pytest.mark.parametrize("held", ["snapshot", "events", "audit"])
    def test_import_exists_when_anything_is_stored(self, store: Store, held: str) -> None:
        """An id with only a snapshot, only events or only audit rows exists and is left as is."""
        sid = f"conf-held-{held}"
        if held == "snapshot":
            store.sessions.save(Session.new(sid, title="mine"))
        elif held == "events":
            store.events.append_event(sid, Event(type="message", text="mine"))
        else:
            store.audit.record(ToolCallRecord(session_id=sid, call_id="mine", tool="mine"))
        imports = target(store)
        assert imports.exists(sid) is True
        assert imports.exists("conf-held-nothing") is False
        before = contents(store, sid)
        assert imports.write_batch(
            "conf-job", [entry("a", payload(sid))], overwrite=False, now_ns=NOW_NS
        ) == [SKIP_EXISTS]
        assert contents(store, sid) == before
        row = imports.load_items("conf-job")["a"]
        assert (row.outcome, row.session_id) == (SKIP_EXISTS, sid)

    @pytest.mark.parametrize("held", ["snapshot", "events", "audit"])
    def test_import_overwrite_replaces_everything(self, store: Store, held: str) -> None:
        """With ``overwrite`` the old snapshot, events and audit rows are replaced, not merged."""
        sid = f"conf-over-{held}"
        store.events.append_event(sid, Event(type="message", text="old"))
        store.audit.record(ToolCallRecord(session_id=sid, call_id="old"))
        if held == "snapshot":
            store.sessions.save(Session.new(sid, title="old"))
        imports = target(store)
        assert imports.write_batch(
            "conf-job", [entry("a", payload(sid, events=1))], overwrite=True, now_ns=NOW_NS
        ) == [OUTCOME_IMPORTED]
        texts = [r.event.text for r in store.events.read_after(sid) if r.event is not None]
        assert texts == ["event 0"]
        assert [r.call_id for r in store.audit.list(sid)] == ["t1", "t2"]
        assert store.sessions.load(sid).title == representative_session(sid).title

    def test_import_recognises_items_its_job_imported(self, store: Store) -> None:
        """An item another run of the job imported is ``already_imported`` (same fingerprint)
        or ``changed`` (another), never ``exists``; its row is kept and a session deleted
        since is not brought back (two overlapping runs end like one, issue 20 item 4)."""
        imports = target(store)
        first = [entry("a", payload("conf-own")), entry("b", payload("conf-gone"))]
        assert imports.write_batch("conf-job", first, overwrite=False, now_ns=NOW_NS) == [
            OUTCOME_IMPORTED,
            OUTCOME_IMPORTED,
        ]
        rows = imports.load_items("conf-job")
        store.sessions.delete("conf-gone")
        changed = BatchEntry(
            ItemRow("a", Fingerprint(11, 20, "cd" * 32), OUTCOME_IMPORTED, "conf-own"),
            payload("conf-own", events=1),
        )
        again = [changed, entry("b", payload("conf-gone"))]
        outcomes = imports.write_batch("conf-job", again, overwrite=False, now_ns=NOW_NS + 1)
        assert outcomes == [SKIP_CHANGED, SKIP_ALREADY_IMPORTED]
        assert imports.load_items("conf-job") == rows
        ids = {s.id for s in store.sessions.list()}
        assert "conf-own" in ids and "conf-gone" not in ids
        assert len(list(store.events.read_after("conf-own"))) == 4

    def test_import_replaced_log_gets_a_new_generation(self, store: Store) -> None:
        """Overwriting a log imported under generation G never keeps G: old cursors expire."""
        imports = target(store)
        imports.write_batch(
            "conf-job", [entry("a", payload("conf-gen"))], overwrite=False, now_ns=NOW_NS
        )
        old_cursor = encode_cursor("conf-gen", GENERATION, 1)
        assert len(list(store.events.read_after("conf-gen", old_cursor))) == 3
        # Another job overwrites it: the same job would skip an item it imported already.
        imports = target(store, "conf-other-job")
        imports.write_batch(
            "conf-other-job", [entry("a", payload("conf-gen"))], overwrite=True, now_ns=NOW_NS
        )
        with pytest.raises(CursorExpired):
            list(store.events.read_after("conf-gen", old_cursor))
        assert len(list(store.events.read_after("conf-gen"))) == 4

    def test_import_without_generation_mints_one(self, store: Store) -> None:
        """A source without a generation gets a fresh one; reading from the start works."""
        imports = target(store)
        imports.write_batch(
            "conf-job",
            [entry("a", payload("conf-nogen", generation=None))],
            overwrite=False,
            now_ns=NOW_NS,
        )
        records = list(store.events.read_after("conf-nogen"))
        assert len(records) == 4
        rest = list(store.events.read_after("conf-nogen", records[1].cursor))
        assert rest[0].event == Event(type="message", text="event 2")

    def test_import_batch_of_many_sessions(self, store: Store) -> None:
        """A batch writes each of its sessions and reports one outcome per entry, in order."""
        store.sessions.save(Session.new("conf-many-1"))
        imports = target(store)
        batch = [entry(f"i{n}", payload(f"conf-many-{n}", events=1)) for n in range(4)]
        outcomes = imports.write_batch("conf-job", batch, overwrite=False, now_ns=NOW_NS)
        assert outcomes == [OUTCOME_IMPORTED, SKIP_EXISTS, OUTCOME_IMPORTED, OUTCOME_IMPORTED]
        listed = {s.id for s in store.sessions.list()}
        assert listed == {"conf-many-0", "conf-many-1", "conf-many-2", "conf-many-3"}

    def test_import_rows_are_seen_by_a_second_handle(self, pair: tuple[Store, Store]) -> None:
        """Checkpoint rows and sessions imported through one handle are read by the other."""
        first, second = pair
        target(first).write_batch(
            "conf-job", [entry("a", payload("conf-pair"))], overwrite=False, now_ns=NOW_NS
        )
        assert set(target(second).load_items("conf-job")) == {"a"}
        assert target(second).exists("conf-pair")
        assert second.sessions.meta("conf-pair").modified_at == SOURCE_MTIME
