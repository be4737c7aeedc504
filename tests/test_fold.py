"""The event-sourced fold (SPEC §5): every row of the §2.4 table and every final state."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from freezegun import freeze_time

from sqlstore import MemoryStore, SQLiteStore, snapshot
from sqlstore.errors import InvalidSessionId, InvalidSessionMetadata, ReconstructError
from sqlstore.events import Event
from sqlstore.fold import FAILED_WITHOUT_ERROR_TEXT, SessionSeed, fold
from sqlstore.model import (
    Ask,
    Counters,
    Kind,
    Limits,
    Message,
    Part,
    Principal,
    Relationship,
    State,
    ToolCall,
    ToolResult,
    Usage,
)
from sqlstore.session import ORPHANED_TOOL_CALL_TEXT, Session

SEED = SessionSeed(id="s1", created_at=datetime(2026, 6, 1, 12, 30, 45, 123456, tzinfo=UTC))


def ev(type_: str, text: str = "", **data: object) -> Event:
    """Build an event with ``data`` from keyword arguments."""
    return Event(type=type_, text=text, data=dict(data))


def call(call_id: str, name: str = "bash", args: str = '{"cmd":"ls"}') -> Event:
    """Build a tool.call event."""
    return ev("tool.call", call={"id": call_id, "name": name, "args": args})


def result(call_id: str, content: str = "ok", is_error: bool = False) -> Event:
    """Build a tool.result event."""
    return ev("tool.result", result={"call_id": call_id, "content": content, "is_error": is_error})


def done(stop: str = "end_turn", **data: object) -> Event:
    """Build a result event."""
    return Event(type="result", data={"stop": stop, **data})


def test_empty_log_gives_an_idle_session_with_the_seed_fields() -> None:
    """An empty log folds to an idle, empty session carrying every seed field."""
    seed = SessionSeed(
        id="child",
        mode="plan",
        limits=Limits(3, 4, 5),
        kind=Kind.SUBAGENT,
        relationship=Relationship(parent_session_id="p", call_id="c"),
        owner=Principal("iss", "sub", "password", "Ann"),
        provider_id="zai",
        model_id="glm",
        created_at=SEED.created_at,
        title="given",
    )
    s = fold(seed, [])
    assert s.id == "child"
    assert s.state is State.IDLE
    assert s.mode == "plan"
    assert s.limits == Limits(3, 4, 5)
    assert s.kind is Kind.SUBAGENT
    assert s.relationship == Relationship(parent_session_id="p", call_id="c")
    assert s.owner == Principal("iss", "sub", "password", "Ann")
    assert (s.provider_id, s.model_id, s.title) == ("zai", "glm", "given")
    assert s.created_at == SEED.created_at
    assert s.messages == []
    assert s.counters == Counters()
    assert s.usage == Usage()


@freeze_time("2026-03-04T05:06:07.000008Z")
def test_created_at_defaults_to_the_clock_at_call_time() -> None:
    """Without seed.created_at the fold stamps the time at which it is called."""
    s = fold(SessionSeed(id="x"), [])
    assert s.created_at == datetime(2026, 3, 4, 5, 6, 7, 8, tzinfo=UTC)


def test_user_prompt_appends_a_user_message_with_parts_and_sets_the_title() -> None:
    """user_prompt appends a user message with text and parts; the first one sets the title."""
    part = Part(kind="image", mime_type="image/png", data=b"\x89PNG", url="")
    s = fold(
        SEED,
        [
            ev("user_prompt", "first line\nsecond", parts=[part.to_json()]),
            ev("user_prompt", "again"),
        ],
    )
    assert s.messages == [
        Message(role="user", text="first line\nsecond", parts=[part]),
        Message(role="user", text="again"),
    ]
    assert s.title == "first line"
    assert s.counters == Counters()


def test_seed_title_wins_over_the_first_prompt() -> None:
    """A title given in the seed is kept."""
    seed = SessionSeed(id="s", title="fixed")
    assert fold(seed, [ev("user_prompt", "other")]).title == "fixed"


def test_long_first_prompt_is_clamped_for_the_title() -> None:
    """The title taken from the first prompt is clamped to 120 characters plus an ellipsis."""
    s = fold(SEED, [ev("user_prompt", "x" * 300)])
    assert s.title == "x" * 120 + "…"


def test_turn_start_opens_an_assistant_turn_and_counts_it() -> None:
    """turn.start opens an assistant turn (flushed at the end) and increments turns."""
    s = fold(SEED, [ev("user_prompt", "hi"), ev("turn.start"), done()])
    assert s.messages == [Message(role="user", text="hi"), Message(role="assistant", text="")]
    assert s.counters == Counters(turns=1)


def test_message_delta_appends_text_to_the_open_turn() -> None:
    """message.delta texts concatenate into the open assistant turn."""
    s = fold(
        SEED,
        [ev("turn.start"), ev("message.delta", "Hel"), ev("message.delta", "lo"), done()],
    )
    assert s.messages == [Message(role="assistant", text="Hello")]
    assert s.counters.turns == 1


def test_each_turn_start_flushes_the_previous_turn() -> None:
    """A second turn.start closes the first assistant message and opens another."""
    s = fold(
        SEED,
        [
            ev("turn.start"),
            ev("message.delta", "a"),
            ev("turn.start"),
            ev("message.delta", "b"),
            done(),
        ],
    )
    assert [m.text for m in s.messages] == ["a", "b"]
    assert s.counters.turns == 2


def test_delta_without_turn_start_opens_a_turn_without_counting_it() -> None:
    """A message.delta with no open turn opens one but does not count a turn."""
    s = fold(SEED, [ev("message.delta", "x"), done()])
    assert s.messages == [Message(role="assistant", text="x")]
    assert s.counters.turns == 0


def test_tool_call_adds_the_call_to_the_open_turn_in_order() -> None:
    """tool.call events add calls, in order, to the open assistant message."""
    s = fold(
        SEED,
        [
            ev("turn.start"),
            ev("message.delta", "running"),
            call("c1"),
            call("c2", "read", '{"p":1}'),
            result("c1"),
            result("c2"),
            done(),
        ],
    )
    assert s.messages[0] == Message(
        role="assistant",
        text="running",
        tool_calls=[ToolCall("c1", "bash", '{"cmd":"ls"}'), ToolCall("c2", "read", '{"p":1}')],
    )


def test_tool_call_args_given_as_json_values_become_json_text() -> None:
    """Raw JSON args (mecatl style) are stored as compact JSON text; null args become empty."""
    s = fold(
        SEED,
        [
            ev("turn.start"),
            ev("tool.call", call={"id": "c1", "name": "bash", "args": {"cmd": "ls -l"}}),
            ev("tool.call", call={"id": "c2", "name": "noop", "args": None}),
            done(),
        ],
    )
    assert s.messages[0].tool_calls == [
        ToolCall("c1", "bash", '{"cmd":"ls -l"}'),
        ToolCall("c2", "noop", ""),
    ]


def test_tool_result_appends_a_tool_message_and_updates_counters() -> None:
    """tool.result appends a tool message; counters follow record_tool_results."""
    s = fold(
        SEED,
        [
            ev("turn.start"),
            call("c1"),
            call("c2"),
            call("c3"),
            result("c1", "boom", is_error=True),
            result("c2", "boom", is_error=True),
            result("c3", "fine"),
            ev("turn.start"),
            call("c4"),
            result("c4", "bad", is_error=True),
            done(),
        ],
    )
    tools = [m.tool_result for m in s.messages if m.role == "tool"]
    assert tools == [
        ToolResult("c1", "boom", True),
        ToolResult("c2", "boom", True),
        ToolResult("c3", "fine", False),
        ToolResult("c4", "bad", True),
    ]
    assert s.counters == Counters(turns=2, tool_calls=4, consecutive_failures=1)


def test_fold_counters_match_the_aggregate_methods() -> None:
    """The same run through Session methods gives the same messages and counters as the fold."""
    live = Session.new("s1")
    live.record_user_prompt("go")
    live.begin_turn()
    live.record_assistant(Message(role="assistant", text="t", tool_calls=[ToolCall("a", "x", "")]))
    live.record_tool_results([ToolResult("a", "no", True)])
    live.begin_turn()
    live.record_assistant(Message(role="assistant", text="u"))
    s = fold(
        SEED,
        [
            ev("user_prompt", "go"),
            ev("turn.start"),
            ev("message.delta", "t"),
            ev("tool.call", call={"id": "a", "name": "x", "args": ""}),
            result("a", "no", True),
            ev("turn.start"),
            ev("message.delta", "u"),
            done(),
        ],
    )
    assert s.messages == live.messages
    assert s.counters == live.counters


def test_tool_result_flushes_the_open_turn_before_the_tool_message() -> None:
    """The assistant message precedes the tool messages that answer it."""
    s = fold(SEED, [ev("turn.start"), call("c1"), result("c1"), done()])
    assert [m.role for m in s.messages] == ["assistant", "tool"]


def test_permission_ask_at_the_end_leaves_the_session_awaiting() -> None:
    """A trailing permission.ask gives state awaiting with that pending ask and live counters."""
    ask = Ask("ask-1", "Bash", '{"command":"true"}', "writes outside the workspace")
    s = fold(
        SEED,
        [
            ev("user_prompt", "do it"),
            ev("turn.start"),
            call("c1", "Bash", '{"command":"true"}'),
            ev("permission.ask", ask=ask.to_json()),
        ],
    )
    assert s.state is State.AWAITING
    assert s.pending_ask == ask
    assert s.counters == Counters(turns=1)
    # The assistant turn holding the unanswered call is part of the conversation.
    assert s.messages[-1].tool_calls == [ToolCall("c1", "Bash", '{"command":"true"}')]
    assert snapshot.decode(snapshot.encode(s)) == s


@pytest.mark.parametrize("clearing", ["approval", "permission.retract"])
def test_approval_and_retract_clear_the_pending_ask(clearing: str) -> None:
    """approval and permission.retract clear the ask, so the session does not end awaiting."""
    s = fold(
        SEED,
        [
            ev("turn.start"),
            call("c1"),
            ev("permission.ask", ask={"ask_id": "a", "tool": "bash", "args": "{}", "reason": ""}),
            ev(clearing),
            result("c1"),
        ],
    )
    assert s.state is State.IDLE
    assert s.pending_ask is None


def test_result_clears_a_pending_ask() -> None:
    """A result ends the run, so an unanswered ask before it is no longer pending."""
    s = fold(
        SEED,
        [ev("turn.start"), ev("permission.ask", ask={"ask_id": "a"}), done("cancelled")],
    )
    assert s.state is State.CANCELLED
    assert s.pending_ask is None


def test_result_flushes_the_open_turn_and_completes() -> None:
    """A clean result flushes the open turn and lands completed with the stop reason."""
    s = fold(SEED, [ev("turn.start"), ev("message.delta", "bye"), done("budget")])
    assert s.state is State.COMPLETED
    assert s.stop_reason == "budget"
    assert s.messages == [Message(role="assistant", text="bye")]


def test_result_without_stop_completes_with_end_turn() -> None:
    """A result whose stop is empty or missing counts as a normal end (end_turn)."""
    s = fold(SEED, [ev("turn.start"), ev("result")])
    assert s.state is State.COMPLETED
    assert s.stop_reason == "end_turn"


def test_error_result_discards_the_partial_turn_and_fails() -> None:
    """stop=error without complete progress drops the partial assistant turn and fails."""
    s = fold(
        SEED,
        [
            ev("user_prompt", "hi"),
            ev("turn.start"),
            ev("message.delta", "half a rep"),
            done("error", error="provider said 500\nretry later", progress="partial"),
        ],
    )
    assert s.state is State.FAILED
    assert s.stop_reason == "error"
    assert s.last_error == "provider said 500 retry later"
    assert s.messages == [Message(role="user", text="hi")]
    assert s.counters == Counters(turns=1)


def test_error_result_with_complete_progress_flushes_and_completes() -> None:
    """stop=error whose progress is complete keeps the turn and lands completed (reason error)."""
    s = fold(
        SEED,
        [ev("turn.start"), ev("message.delta", "all here"), done("error", progress="complete")],
    )
    assert s.state is State.COMPLETED
    assert s.stop_reason == "error"
    assert s.last_error == ""
    assert s.messages == [Message(role="assistant", text="all here")]


def test_failed_last_error_falls_back_to_text_then_fixed_text() -> None:
    """Without data.error, last_error is the event text, else a fixed sentence."""
    s = fold(SEED, [Event("result", text="crashed hard", data={"stop": "error"})])
    assert s.last_error == "crashed hard"
    s = fold(SEED, [done("error")])
    assert s.last_error == FAILED_WITHOUT_ERROR_TEXT


def test_failed_last_error_is_clamped_to_400_characters() -> None:
    """A long error is folded to one line of at most 400 characters."""
    s = fold(SEED, [done("error", error="e" * 1000)])
    assert len(s.last_error) == 400


def test_cancelled_result_gives_cancelled() -> None:
    """stop=cancelled lands cancelled and keeps the partial turn."""
    s = fold(SEED, [ev("turn.start"), ev("message.delta", "so far"), done("cancelled")])
    assert s.state is State.CANCELLED
    assert s.stop_reason == "cancelled"
    assert s.messages == [Message(role="assistant", text="so far")]


def test_usage_is_summed_over_all_runs() -> None:
    """Usage is the sum of every result's data.usage; results without usage add nothing."""
    s = fold(
        SEED,
        [
            ev("turn.start"),
            done(usage=Usage(100, 20, 5, 1, 2).to_json()),
            ev("user_prompt", "more"),
            ev("turn.start"),
            done(usage={"input_tokens": 7, "output_tokens": 3}),
            ev("user_prompt", "again"),
            ev("turn.start"),
            done(),
        ],
    )
    assert s.usage == Usage(107, 23, 5, 1, 2)


def test_counters_restart_with_a_new_run_after_a_result() -> None:
    """Counters are per run segment: the final counters are those of the last run."""
    s = fold(
        SEED,
        [
            ev("turn.start"),
            ev("turn.start"),
            call("a"),
            result("a"),
            done(),
            ev("user_prompt", "next"),
            ev("turn.start"),
            done("max_turns"),
        ],
    )
    assert s.state is State.COMPLETED
    assert s.stop_reason == "max_turns"
    assert s.counters == Counters(turns=1)


def test_new_run_after_a_result_without_its_own_result_is_idle() -> None:
    """A run started after a result that never ended makes the session idle again."""
    s = fold(SEED, [ev("turn.start"), done("cancelled"), ev("user_prompt", "resume")])
    assert s.state is State.IDLE
    assert s.stop_reason == ""
    assert s.messages[-1] == Message(role="user", text="resume")


def test_approval_after_a_result_does_not_reopen_the_run() -> None:
    """Events outside a run (approval, compaction.archive) after a result keep its state."""
    s = fold(
        SEED,
        [
            ev("user_prompt", "q"),
            ev("turn.start"),
            done("budget"),
            ev("approval"),
            ev("compaction.archive", replaced=[Message(role="user", text="q").to_json()]),
            ev("turn.end"),
        ],
    )
    assert s.state is State.COMPLETED
    assert s.stop_reason == "budget"


def test_no_result_lands_idle_closing_orphaned_calls_and_clearing_counters() -> None:
    """Without a result the session is idle as after abandon(): orphans closed, counters zero."""
    s = fold(
        SEED,
        [ev("user_prompt", "go"), ev("turn.start"), call("c1"), call("c2"), result("c1")],
    )
    assert s.state is State.IDLE
    assert s.counters == Counters()
    assert s.messages[-1] == Message(
        role="tool", tool_result=ToolResult("c2", ORPHANED_TOOL_CALL_TEXT, True)
    )


def test_compaction_archive_replaces_the_conversation() -> None:
    """compaction.archive sets messages to data.replaced; later events append to it."""
    archived = [
        Message(role="system", text="sys"),
        Message(role="user", text="old", parts=[Part("image", "image/png", b"\x00\x01", "")]),
        Message(role="assistant", text="", tool_calls=[ToolCall("k", "read", "{}")]),
        Message(role="tool", tool_result=ToolResult("k", "data", False)),
    ]
    s = fold(
        SEED,
        [
            ev("user_prompt", "old"),
            ev("turn.start"),
            ev("compaction.archive", replaced=[m.to_json() for m in archived]),
            ev("message.delta", "continuing"),
            done(),
        ],
    )
    assert s.messages == [*archived, Message(role="assistant", text="continuing")]


def test_other_event_types_are_ignored() -> None:
    """Types outside the table (turn.end, reasoning.delta, hook, …) change nothing."""
    base = [ev("user_prompt", "a"), ev("turn.start"), ev("message.delta", "b"), done()]
    noisy = [
        ev("user_prompt", "a"),
        ev("reasoning.delta", "thinking"),
        ev("turn.start"),
        ev("hook", "pre"),
        ev("message.delta", "b"),
        ev("turn.end"),
        ev("compaction", "summary"),
        done(),
        ev("no_progress"),
    ]
    assert fold(SEED, noisy) == fold(SEED, base)


def test_run_id_is_the_last_one_seen() -> None:
    """The folded run_id is the last non-empty run_id in the log."""
    s = fold(SEED, [Event("turn.start", run_id="r1"), Event("result", run_id="r2"), Event("x")])
    assert s.run_id == "r2"


def test_answer_to_unknown_call_is_a_reconstruct_error() -> None:
    """A tool result with no preceding call cannot be folded."""
    with pytest.raises(ReconstructError, match="unknown call 'ghost'"):
        fold(SEED, [ev("turn.start"), result("ghost")])


def test_call_answered_twice_is_a_reconstruct_error() -> None:
    """A call answered twice cannot be folded."""
    with pytest.raises(ReconstructError, match="second time"):
        fold(SEED, [ev("turn.start"), call("c"), result("c"), result("c")])


def test_unpaired_archive_is_a_reconstruct_error() -> None:
    """An archive whose messages break tool pairing cannot be folded."""
    bad = [Message(role="tool", tool_result=ToolResult("nope", "x")).to_json()]
    with pytest.raises(ReconstructError, match="invalid tool pairing"):
        fold(SEED, [ev("compaction.archive", replaced=bad)])


@pytest.mark.parametrize(
    ("event", "reason"),
    [
        (ev("tool.call"), "data.call must be an object"),
        (ev("tool.call", call={"id": 5}), "id"),
        (ev("tool.result", result="x"), "data.result must be an object"),
        (ev("permission.ask", ask=[]), "data.ask must be an object"),
        (ev("user_prompt", parts="x"), "data.parts must be a list"),
        (ev("user_prompt", parts=[{"data": "***"}]), "base64"),
        (ev("result", stop=3), "data.stop must be a string"),
        (ev("result", usage={"input_tokens": "many"}), "input_tokens"),
        (ev("compaction.archive", replaced={}), "data.replaced must be a list"),
        (ev("compaction.archive", replaced=[{"role": "robot"}]), "role"),
    ],
)
def test_malformed_event_data_is_a_reconstruct_error(event: Event, reason: str) -> None:
    """Malformed data raises ReconstructError naming the event and the reason."""
    with pytest.raises(ReconstructError, match=reason) as info:
        fold(SEED, [ev("turn.start"), event])
    assert "event 1" in str(info.value)


def test_invalid_seed_raises_the_domain_errors() -> None:
    """A bad seed id or kind/relationship raises the domain error, not ReconstructError."""
    with pytest.raises(InvalidSessionId):
        fold(SessionSeed(id=""), [])
    with pytest.raises(InvalidSessionMetadata):
        fold(SessionSeed(id="x", kind=Kind.SUBAGENT), [])


def test_every_folded_session_round_trips_through_the_snapshot_codec() -> None:
    """Folded sessions are valid snapshots in every final state."""
    logs = [
        [],
        [ev("turn.start"), done()],
        [ev("turn.start"), done("cancelled")],
        [ev("turn.start"), done("error", error="x")],
        [ev("turn.start"), ev("permission.ask", ask={"ask_id": "a"})],
    ]
    states = []
    for log in logs:
        s = fold(SEED, log)
        states.append(s.state)
        assert snapshot.decode(snapshot.encode(s)) == s
    assert states == [
        State.IDLE,
        State.COMPLETED,
        State.CANCELLED,
        State.FAILED,
        State.AWAITING,
    ]


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryStore | SQLiteStore]:
    """A fresh store of each backend (SQLite in a real file under tmp_path)."""
    backend: MemoryStore | SQLiteStore
    if request.param == "memory":
        backend = MemoryStore()
    else:
        backend = SQLiteStore(str(tmp_path / "fold.db"), durability="normal")
    with backend:
        yield backend


def test_load_or_fold_folds_the_log_when_there_is_no_snapshot(
    store: MemoryStore | SQLiteStore,
) -> None:
    """sessions.load_or_fold rebuilds from the event log when no snapshot is stored."""
    for event in [ev("user_prompt", "hi"), ev("turn.start"), ev("message.delta", "yo"), done()]:
        store.events.append("s1", event)
    s = store.sessions.load_or_fold("s1", SEED)
    assert s.state is State.COMPLETED
    assert [m.text for m in s.messages] == ["hi", "yo"]
    with pytest.raises(TypeError):
        store.sessions.load_or_fold("s1", object())


def test_load_or_fold_prefers_the_snapshot(store: MemoryStore | SQLiteStore) -> None:
    """When a snapshot exists, load_or_fold returns it and ignores the log."""
    saved = Session.new("s1", title="from snapshot")
    store.sessions.save(saved)
    store.events.append("s1", done("cancelled"))
    s = store.sessions.load_or_fold("s1", SEED)
    assert s == saved


def test_load_or_fold_of_an_unknown_id_is_an_idle_seeded_session(
    store: MemoryStore | SQLiteStore,
) -> None:
    """With neither snapshot nor log, load_or_fold returns the seed as an idle session."""
    s = store.sessions.load_or_fold("s1", SEED)
    assert s.state is State.IDLE
    assert s.messages == []


def test_load_or_fold_of_an_unfoldable_log_raises_reconstruct_error(
    store: MemoryStore | SQLiteStore,
) -> None:
    """A stored log with invalid tool pairing makes load_or_fold raise ReconstructError."""
    store.events.append("s1", result("ghost"))
    with pytest.raises(ReconstructError, match="ghost"):
        store.sessions.load_or_fold("s1", SEED)
