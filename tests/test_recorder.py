"""The run recorder (SPEC §2.6) against MemoryStore and SQLiteStore."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from freezegun import freeze_time

from sqlstore import MemoryStore, SQLiteStore
from sqlstore.audit import ToolCallRecord
from sqlstore.errors import IllegalTransition, InvalidSessionId, SessionNotFound
from sqlstore.events import TOKEN_LEVEL_TYPES, Event
from sqlstore.fold import FAILED_WITHOUT_ERROR_TEXT, SessionSeed, fold
from sqlstore.model import (
    Ask,
    Kind,
    Message,
    Part,
    Relationship,
    State,
    ToolCall,
    ToolResult,
    Usage,
)
from sqlstore.recorder import Recorder
from sqlstore.session import Session


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryStore | SQLiteStore]:
    """A fresh store of each backend (SQLite in a real file under tmp_path)."""
    backend: MemoryStore | SQLiteStore
    if request.param == "memory":
        backend = MemoryStore()
    else:
        backend = SQLiteStore(str(tmp_path / "rec.db"), durability="normal")
    with backend:
        yield backend


def types(store: MemoryStore | SQLiteStore, session_id: str = "run") -> list[str]:
    """Return the event types in the log of ``session_id``."""
    return [e.type for e in store.events.read(session_id)]


def test_first_message_creates_the_session_from_the_seed(store: MemoryStore | SQLiteStore) -> None:
    """record_message creates the snapshot from the seed and marks the run running."""
    seed = SessionSeed(
        id="run",
        kind=Kind.SCHEDULED,
        relationship=Relationship(schedule_name="nightly"),
        model_id="glm",
        created_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
    )
    rec = Recorder(store, "run", seed=seed, run_id="r-1")
    rec.record_message(Message(role="system", text="be brief"))
    s = store.sessions.load("run")
    assert s.kind is Kind.SCHEDULED
    assert s.relationship.schedule_name == "nightly"
    assert s.model_id == "glm"
    assert s.created_at == seed.created_at
    assert s.state is State.RUNNING
    assert s.run_id == "r-1"
    assert s.messages == [Message(role="system", text="be brief")]


@freeze_time("2026-05-05T10:00:00Z")
def test_default_seed_is_a_main_session_created_now(store: MemoryStore | SQLiteStore) -> None:
    """Without a seed the session is a default-mode main session created at the first write."""
    Recorder(store, "run").record_message(Message(role="user", text="hello"))
    s = store.sessions.load("run")
    assert (s.kind, s.mode) == (Kind.MAIN, "default")
    assert s.created_at == datetime(2026, 5, 5, 10, tzinfo=UTC)


def test_existing_snapshot_is_used_and_host_changes_are_kept(
    store: MemoryStore | SQLiteStore,
) -> None:
    """The recorder appends to an existing snapshot and re-reads it on every call."""
    store.sessions.save(Session.new("run", mode="plan", labels={"task": "t"}))
    rec = Recorder(store, "run")
    rec.record_message(Message(role="user", text="one"))
    host = store.sessions.load("run")
    host.labels["workdir"] = "/src"
    store.sessions.save(host)
    rec.record_message(Message(role="assistant", text="two"))
    s = store.sessions.load("run")
    assert s.mode == "plan"
    assert s.labels == {"task": "t", "workdir": "/src"}
    assert [m.text for m in s.messages] == ["one", "two"]


def test_messages_are_stored_verbatim_in_order(store: MemoryStore | SQLiteStore) -> None:
    """Every field of a recorded message (parts, reasoning, calls, extra) is kept, in order."""
    msgs = [
        Message(role="system", text="sys", extra={"runlog_type": "instructions"}),
        Message(role="user", text="look", parts=[Part("image", "image/png", b"\x89PNG", "")]),
        Message(
            role="assistant",
            text="",
            reasoning="opaque",
            tool_calls=[ToolCall("c1", "bash", '{"cmd":"ls"}')],
        ),
        Message(role="tool", tool_result=ToolResult("c1", "a\nb", False)),
    ]
    rec = Recorder(store, "run")
    for m in msgs:
        rec.record_message(m)
    assert store.sessions.load("run").messages == msgs


def test_first_user_message_sets_an_empty_title(store: MemoryStore | SQLiteStore) -> None:
    """The first user message names the session; later ones do not rename it."""
    rec = Recorder(store, "run")
    rec.record_message(Message(role="system", text="system text"))
    rec.record_message(Message(role="user", text="fix the flaky test\nplease"))
    rec.record_message(Message(role="user", text="other"))
    assert store.sessions.load("run").title == "fix the flaky test"


def test_bad_messages_are_refused(store: MemoryStore | SQLiteStore) -> None:
    """A non-Message or an unknown role is refused and nothing is stored."""
    rec = Recorder(store, "run")
    with pytest.raises(TypeError):
        rec.record_message("hi")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="role"):
        rec.record_message(Message(role="robot"))
    with pytest.raises(SessionNotFound):
        store.sessions.load("run")


def test_constructor_validates_id_and_seed() -> None:
    """An invalid id or a seed for another session is refused at construction."""
    with MemoryStore() as store:
        with pytest.raises(InvalidSessionId):
            Recorder(store, "")
        with pytest.raises(ValueError, match="seed"):
            Recorder(store, "a", seed=SessionSeed(id="b"))


def test_record_event_appends_and_returns_the_cursor(store: MemoryStore | SQLiteStore) -> None:
    """record_event appends kept events and returns a cursor that resumes after them."""
    rec = Recorder(store, "run")
    first = rec.record_event(Event("turn.start", seq=1))
    rec.record_event(Event("tool.call", seq=2, data={"call": {"id": "c"}}))
    assert first
    after = list(store.events.read_after("run", first))
    assert [r.event.type for r in after if r.event is not None] == ["tool.call"]


@pytest.mark.parametrize("dropped", sorted(TOKEN_LEVEL_TYPES))
def test_record_event_drops_token_level_narration(
    store: MemoryStore | SQLiteStore, dropped: str
) -> None:
    """message.delta, reasoning.delta, token and reasoningToken never reach the log."""
    rec = Recorder(store, "run")
    assert rec.record_event(Event(dropped, text="tok")) is None
    rec.record_event(Event("turn.end"))
    assert types(store) == ["turn.end"]


def test_record_event_does_not_create_a_snapshot(store: MemoryStore | SQLiteStore) -> None:
    """Events alone leave the session without a snapshot (load_or_fold then folds them)."""
    Recorder(store, "run").record_event(Event("user_prompt", text="x"))
    with pytest.raises(SessionNotFound):
        store.sessions.load("run")


def test_record_reset_discards_messages_and_archives_them(store: MemoryStore | SQLiteStore) -> None:
    """A reset empties the stored conversation and logs the discarded messages; events stay."""
    rec = Recorder(store, "run")
    rec.record_event(Event("turn.start"))
    before = [Message(role="user", text="long task"), Message(role="assistant", text="working")]
    for m in before:
        rec.record_message(m)
    assert rec.record_reset() == before
    rec.record_message(Message(role="user", text="Summary so far: …"))
    assert store.sessions.load("run").messages == [Message(role="user", text="Summary so far: …")]
    log = list(store.events.read("run"))
    assert [e.type for e in log] == ["turn.start", "compaction.archive"]
    assert [Message.from_json(m) for m in log[1].data["replaced"]] == before


def test_fold_of_a_reset_log_recovers_the_archived_history(
    store: MemoryStore | SQLiteStore,
) -> None:
    """Folding the log after a reset gives the archived messages back plus later turns."""
    rec = Recorder(store, "run")
    rec.record_message(Message(role="user", text="old"))
    rec.record_reset()
    rec.record_event(Event("user_prompt", text="new"))
    s = fold(SessionSeed(id="run"), store.events.read("run"))
    assert [m.text for m in s.messages] == ["old", "new"]


def test_record_reset_while_awaiting_is_illegal(store: MemoryStore | SQLiteStore) -> None:
    """A reset while a permission ask is pending is refused and writes nothing."""
    s = Session.new("run")
    s.begin_turn()
    s.pause_for_approval(Ask("a", "bash", "{}", ""))
    store.sessions.save(s)
    with pytest.raises(IllegalTransition):
        Recorder(store, "run").record_reset()
    assert types(store) == []


def test_record_tool_call_writes_the_audit_trail(store: MemoryStore | SQLiteStore) -> None:
    """Audit records land in the store's audit trail in record order."""
    rec = Recorder(store, "run")
    at = datetime(2026, 1, 1, tzinfo=UTC)
    a = ToolCallRecord("run", "c1", "bash", '{"cmd":"ls"}', "a", False, at, 120, 5400)
    b = ToolCallRecord("run", "c2", "read", "{}", "nope", True, at, 0, 10)
    rec.record_tool_call(a)
    rec.record_tool_call(b)
    assert store.audit.list("run") == [a, b]
    with pytest.raises(ValueError, match="other"):
        rec.record_tool_call(ToolCallRecord("other", "c3"))


def test_record_result_completes_and_logs_the_result(store: MemoryStore | SQLiteStore) -> None:
    """A normal result logs a result event and completes the session with its stop reason."""
    rec = Recorder(store, "run", run_id="r9")
    rec.record_message(Message(role="user", text="q"))
    s = rec.record_result(
        "budget", text="fixed", usage=Usage(10, 2), data={"code": 0, "iterations": 4}
    )
    assert s.state is State.COMPLETED
    assert s.stop_reason == "budget"
    assert store.sessions.load("run") == s
    (event,) = list(store.events.read("run"))
    assert event.type == "result"
    assert event.text == "fixed"
    assert event.run_id == "r9"
    assert event.data == {
        "stop": "budget",
        "usage": Usage(10, 2).to_json(),
        "error": "",
        "progress": "",
        "code": 0,
        "iterations": 4,
    }


def test_record_result_error_fails_with_last_error(store: MemoryStore | SQLiteStore) -> None:
    """stop=error fails the session with the error text as last_error."""
    rec = Recorder(store, "run")
    s = rec.record_result("error", error="HTTP 500\nupstream")
    assert s.state is State.FAILED
    assert s.last_error == "HTTP 500 upstream"
    s2 = Recorder(store, "run2").record_result("error")
    assert s2.last_error == FAILED_WITHOUT_ERROR_TEXT


def test_record_result_error_with_complete_progress_completes(
    store: MemoryStore | SQLiteStore,
) -> None:
    """stop=error with progress complete completes, as the fold does."""
    s = Recorder(store, "run").record_result("error", progress="complete")
    assert s.state is State.COMPLETED


def test_record_result_cancelled_cancels(store: MemoryStore | SQLiteStore) -> None:
    """stop=cancelled cancels the session, also from awaiting (the ask is dropped)."""
    s = Session.new("run")
    s.begin_turn()
    s.pause_for_approval(Ask("a", "bash", "{}", ""))
    store.sessions.save(s)
    done = Recorder(store, "run").record_result("cancelled")
    assert done.state is State.CANCELLED
    assert done.pending_ask is None


def test_second_result_is_illegal_and_writes_nothing(store: MemoryStore | SQLiteStore) -> None:
    """A result after the run ended raises IllegalTransition and appends no event."""
    rec = Recorder(store, "run")
    rec.record_result()
    with pytest.raises(IllegalTransition):
        rec.record_result()
    assert types(store) == ["result"]


def test_result_data_may_not_repeat_the_filled_keys(store: MemoryStore | SQLiteStore) -> None:
    """data cannot override stop, usage, error or progress."""
    with pytest.raises(ValueError, match="stop"):
        Recorder(store, "run").record_result(data={"stop": "x"})
    assert types(store) == []


def test_usage_accumulates_across_runs_and_a_new_run_reopens(
    store: MemoryStore | SQLiteStore,
) -> None:
    """A message after a finished run starts a new run; usage is summed over both runs."""
    rec = Recorder(store, "run")
    rec.record_message(Message(role="user", text="one"))
    rec.record_result(usage=Usage(5, 1))
    s = rec.record_message(Message(role="user", text="two"))
    assert s.state is State.RUNNING
    assert s.stop_reason == ""
    s = rec.record_result(usage=Usage(7, 2))
    assert s.usage == Usage(12, 3)
    assert s.state is State.COMPLETED


@pytest.mark.parametrize("stop", ["error", "cancelled"])
def test_new_run_after_failure_or_cancel_closes_orphaned_calls(
    store: MemoryStore | SQLiteStore, stop: str
) -> None:
    """A new run after a failed or cancelled one first closes its orphaned tool calls."""
    rec = Recorder(store, "run")
    rec.record_message(
        Message(role="assistant", tool_calls=[ToolCall("c1", "bash", "{}")]),
    )
    rec.record_result(stop, error="boom")
    s = rec.record_message(Message(role="user", text="try again"))
    assert [m.role for m in s.messages] == ["assistant", "tool", "user"]
    assert s.messages[1].tool_result is not None
    assert s.messages[1].tool_result.is_error


def test_recorded_run_folds_to_the_same_final_state(store: MemoryStore | SQLiteStore) -> None:
    """A run recorded with events and a result folds to the snapshot's state and usage."""
    rec = Recorder(store, "run")
    rec.record_message(Message(role="user", text="go"))
    rec.record_event(Event("user_prompt", text="go"))
    rec.record_event(Event("turn.start"))
    rec.record_event(Event("message.delta", text="dropped"))
    rec.record_event(Event("tool.call", data={"call": {"id": "c", "name": "x", "args": "{}"}}))
    rec.record_event(
        Event("tool.result", data={"result": {"call_id": "c", "content": "", "is_error": True}})
    )
    saved = rec.record_result("error", error="quota", usage=Usage(3, 4))
    folded = fold(SessionSeed(id="run"), store.events.read("run"))
    assert (folded.state, folded.last_error, folded.usage) == (
        saved.state,
        saved.last_error,
        saved.usage,
    )


class _RacingSessions:
    """Delegates to a real store's sessions; the first create loses to a competitor's."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.raced = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def create(self, session: Session) -> None:
        if not self.raced:
            self.raced = True
            self._inner.create(Session.new(session.id, title="winner"))
        self._inner.create(session)


class _RacingStore:
    """A real store whose session creation is beaten once by another writer."""

    def __init__(self, inner: MemoryStore | SQLiteStore) -> None:
        self.sessions = _RacingSessions(inner.sessions)
        self.events = inner.events
        self.audit = inner.audit


def test_lost_creation_race_appends_to_the_winner(store: MemoryStore | SQLiteStore) -> None:
    """When another writer creates the session first, the message lands on the winner's snapshot."""
    racing = _RacingStore(store)
    Recorder(racing, "run").record_message(Message(role="user", text="mine"))  # type: ignore[arg-type]
    s = store.sessions.load("run")
    assert racing.sessions.raced
    assert s.title == "winner"
    assert s.messages == [Message(role="user", text="mine")]
