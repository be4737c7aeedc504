"""The Session aggregate: every transition of SPEC §2.2, legal and illegal, and its helpers."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from freezegun import freeze_time

from sqlstore.errors import IllegalTransition, InvalidSessionId, InvalidSessionMetadata
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
from sqlstore.session import (
    LAST_ERROR_MAX_CHARS,
    ORPHANED_TOOL_CALL_TEXT,
    TITLE_MAX_CHARS,
    Session,
    clamp_title,
    one_line_error,
    tool_pairing_problem,
)

ASK = Ask("ask-1", "Bash", '{"command":"true"}', "needs approval")


def in_state(state: State) -> Session:
    """Return a session with some history, driven into ``state`` by legal transitions."""
    s = Session.new("s1", limits=Limits(5, 5, 5))
    s.record_user_prompt("hello")
    if state is State.IDLE:
        return s
    s.begin_turn()
    s.record_usage(Usage(10, 5))
    if state is State.RUNNING:
        return s
    if state is State.AWAITING:
        s.pause_for_approval(ASK)
    elif state is State.COMPLETED:
        s.complete()
    elif state is State.FAILED:
        s.fail("boom")
    elif state is State.CANCELLED:
        s.cancel()
    return s


def assistant(*call_ids: str, text: str = "") -> Message:
    """An assistant message with tool calls named by ``call_ids``."""
    return Message(
        role="assistant", text=text, tool_calls=[ToolCall(c, "t", "{}") for c in call_ids]
    )


def tool(call_id: str, is_error: bool = False) -> Message:
    """A tool message answering ``call_id``."""
    return Message(role="tool", tool_result=ToolResult(call_id, "r", is_error))


ALL = frozenset(State)
NON_TERMINAL = frozenset({State.IDLE, State.RUNNING, State.AWAITING})

ACTIONS: dict[str, tuple[Callable[[Session], object], frozenset[State]]] = {
    "begin_turn": (lambda s: s.begin_turn(), frozenset({State.IDLE, State.RUNNING})),
    "record_user_prompt": (lambda s: s.record_user_prompt("more"), NON_TERMINAL),
    "record_assistant": (
        lambda s: s.record_assistant(Message(role="assistant", text="a")),
        frozenset({State.RUNNING}),
    ),
    "record_tool_results": (
        lambda s: s.record_tool_results([]),
        frozenset({State.RUNNING}),
    ),
    "record_usage": (lambda s: s.record_usage(Usage(1)), frozenset({State.RUNNING})),
    "pause_for_approval": (lambda s: s.pause_for_approval(ASK), frozenset({State.RUNNING})),
    "resume": (lambda s: s.resume(), frozenset({State.AWAITING})),
    "complete": (lambda s: s.complete(), NON_TERMINAL),
    "stop": (lambda s: s.stop("budget"), NON_TERMINAL),
    "cancel": (lambda s: s.cancel(), NON_TERMINAL),
    "fail": (lambda s: s.fail("err"), NON_TERMINAL),
    "reopen": (lambda s: s.reopen(), frozenset({State.COMPLETED})),
    "interrupt": (lambda s: s.interrupt(), frozenset({State.CANCELLED})),
    "recover": (lambda s: s.recover(), frozenset({State.FAILED})),
    "abandon": (lambda s: s.abandon(), frozenset({State.RUNNING})),
    "replace_history": (lambda s: s.replace_history([]), ALL - {State.AWAITING}),
}

MATRIX = [(name, state) for name in ACTIONS for state in State]


@pytest.mark.parametrize(("name", "state"), MATRIX)
def test_transition_matrix(name: str, state: State) -> None:
    """A method works only in the states SPEC §2.2 allows; elsewhere it raises, changing nothing."""
    action, legal = ACTIONS[name]
    s = in_state(state)
    before = s.copy()
    if state in legal:
        action(s)
        s.validate()
    else:
        with pytest.raises(IllegalTransition, match=str(state)):
            action(s)
        assert s == before


# -- effects of each transition --------------------------------------------------------


@freeze_time("2026-06-01T12:30:45.123456Z")
def test_new_session_is_idle_and_empty_with_created_at_now() -> None:
    """Session.new gives an idle session, empty conversation, created at the current time."""
    labels = {"task": "t"}
    s = Session.new(
        "s1",
        mode="acceptEdits",
        limits=Limits(7, 21, 3),
        kind=Kind.SUBAGENT,
        relationship=Relationship(parent_session_id="p", call_id="c"),
        owner=Principal("i", "s"),
        title="T",
        provider_id="prov",
        model_id="mod",
        labels=labels,
    )
    labels["task"] = "changed"
    assert s.state is State.IDLE
    assert s.messages == []
    assert s.counters == Counters()
    assert s.usage == Usage()
    assert s.created_at == datetime(2026, 6, 1, 12, 30, 45, 123456, tzinfo=UTC)
    assert s.labels == {"task": "t"}
    assert (s.mode, s.limits, s.kind, s.title) == ("acceptEdits", Limits(7, 21, 3), "subagent", "T")
    assert s.pending_ask is None and s.stop_reason == "" and s.last_error == ""


def test_new_session_validates_id_kind_and_mode() -> None:
    """Session.new refuses a bad id, a kind/relationship mismatch and an unknown mode."""
    with pytest.raises(InvalidSessionId):
        Session.new("")
    with pytest.raises(InvalidSessionMetadata):
        Session.new("s", kind=Kind.SCHEDULED)
    with pytest.raises(InvalidSessionMetadata, match="mode"):
        Session.new("s", mode="yolo")
    rel = Relationship(schedule_name="n")
    as_text = Session.new("s", kind="scheduled", relationship=rel)  # type: ignore[arg-type]
    assert as_text.kind is Kind.SCHEDULED


def test_begin_turn_runs_and_counts() -> None:
    """begin_turn moves to running and increments turns each time."""
    s = in_state(State.IDLE)
    s.begin_turn()
    s.begin_turn()
    assert s.state is State.RUNNING
    assert s.counters.turns == 2


def test_record_user_prompt_appends_and_sets_title_once() -> None:
    """A user prompt is appended with its parts; only an empty title is set from it."""
    s = Session.new("s1")
    part = Part("image", "image/png", b"\x89PNG", "")
    s.record_user_prompt("first\nsecond line", parts=(part,))
    s.record_user_prompt("other")
    assert s.messages == [
        Message(role="user", text="first\nsecond line", parts=[part]),
        Message(role="user", text="other"),
    ]
    assert s.title == "first"


def test_record_user_prompt_keeps_a_given_title() -> None:
    """A session created with a title keeps it."""
    s = Session.new("s1", title="mine")
    s.record_user_prompt("x")
    assert s.title == "mine"


def test_record_user_prompt_while_awaiting_keeps_the_ask() -> None:
    """A prompt recorded while awaiting is appended and the ask stays pending."""
    s = in_state(State.AWAITING)
    s.record_user_prompt("hurry")
    assert s.state is State.AWAITING
    assert s.pending_ask == ASK


def test_record_assistant_appends_only_assistant_messages() -> None:
    """record_assistant appends an assistant message and refuses other roles."""
    s = in_state(State.RUNNING)
    s.record_assistant(assistant("c1", text="hi"))
    assert s.messages[-1] == assistant("c1", text="hi")
    with pytest.raises(ValueError, match="assistant"):
        s.record_assistant(Message(role="user", text="x"))


def test_record_tool_results_appends_and_counts_failures() -> None:
    """One tool message per result; errors count consecutive failures, a success resets them."""
    s = in_state(State.RUNNING)
    s.record_assistant(assistant("a", "b", "c", "d"))
    s.record_tool_results([ToolResult("a", "x", True), ToolResult("b", "x", True)])
    assert s.counters == Counters(turns=1, tool_calls=2, consecutive_failures=2)
    s.record_tool_results([ToolResult("c", "ok", False), ToolResult("d", "x", True)])
    assert s.counters == Counters(turns=1, tool_calls=4, consecutive_failures=1)
    assert [m.tool_result.call_id for m in s.messages if m.tool_result] == ["a", "b", "c", "d"]


def test_record_usage_accumulates() -> None:
    """record_usage adds to the cumulative usage."""
    s = in_state(State.RUNNING)
    s.record_usage(Usage(1, 2, 3, 4, 5))
    assert s.usage == Usage(11, 7, 3, 4, 5)


def test_pause_and_resume_round_trip_the_ask() -> None:
    """pause_for_approval parks on the ask; resume returns it and runs again."""
    s = in_state(State.RUNNING)
    s.pause_for_approval(ASK)
    assert (s.state, s.pending_ask) == (State.AWAITING, ASK)
    assert s.resume() == ASK
    assert (s.state, s.pending_ask) == (State.RUNNING, None)


@pytest.mark.parametrize("start", sorted(NON_TERMINAL))
def test_terminal_transitions_set_state_and_reason(start: State) -> None:
    """complete/stop/cancel/fail reach their terminal state and reason, dropping any ask."""
    for action, state, reason in [
        (lambda s: s.complete(), State.COMPLETED, "end_turn"),
        (lambda s: s.stop("budget"), State.COMPLETED, "budget"),
        (lambda s: s.cancel(), State.CANCELLED, "cancelled"),
        (lambda s: s.fail("it broke"), State.FAILED, "error"),
    ]:
        s = in_state(start)
        action(s)
        assert (s.state, s.stop_reason, s.pending_ask) == (state, reason, None)
        assert s.last_error == ("it broke" if state is State.FAILED else "")
        s.validate()


@pytest.mark.parametrize(
    ("state", "method"),
    [
        (State.COMPLETED, "reopen"),
        (State.CANCELLED, "interrupt"),
        (State.FAILED, "recover"),
        (State.RUNNING, "abandon"),
    ],
)
def test_return_to_idle_clears_run_state_and_keeps_the_rest(state: State, method: str) -> None:
    """Back to idle clears stop reason, ask, error and counters; keeps usage, history, settings."""
    s = in_state(state)
    messages = list(s.messages)
    getattr(s, method)()
    assert s.state is State.IDLE
    assert (s.stop_reason, s.pending_ask, s.last_error) == ("", None, "")
    assert s.counters == Counters()
    assert s.usage == Usage(10, 5)
    assert s.messages == messages
    assert (s.mode, s.limits) == ("default", Limits(5, 5, 5))


@pytest.mark.parametrize(
    ("state", "method"),
    [(State.CANCELLED, "interrupt"), (State.FAILED, "recover"), (State.RUNNING, "abandon")],
)
def test_recovery_transitions_close_orphaned_tool_calls(state: State, method: str) -> None:
    """interrupt, recover and abandon answer unanswered calls of the last assistant message."""
    s = Session.new("s1")
    s.begin_turn()
    s.record_assistant(assistant("a", "b"))
    s.record_tool_results([ToolResult("a", "done")])
    if state is State.CANCELLED:
        s.cancel()
    elif state is State.FAILED:
        s.fail("x")
    getattr(s, method)()
    assert s.messages[-1] == Message(
        role="tool", tool_result=ToolResult("b", ORPHANED_TOOL_CALL_TEXT, True)
    )
    assert tool_pairing_problem(s.messages) == ""


def test_reopen_does_not_add_messages() -> None:
    """reopen leaves dangling calls alone (only the recovery transitions repair)."""
    s = Session.new("s1")
    s.begin_turn()
    s.record_assistant(assistant("a"))
    s.complete()
    s.reopen()
    assert s.messages == [assistant("a")]


def test_replace_history_swaps_the_conversation() -> None:
    """replace_history installs a valid replacement in idle, running and terminal states."""
    new = [Message(role="user", text="summary"), assistant("x"), tool("x")]
    for state in ALL - {State.AWAITING}:
        s = in_state(state)
        s.replace_history(new)
        assert s.messages == new
        assert s.state is state
    s = in_state(State.IDLE)
    s.replace_history(new)
    new.append(Message(role="user", text="later"))
    assert len(s.messages) == 3


@pytest.mark.parametrize(
    ("history", "reason"),
    [
        ([tool("ghost")], "unknown call 'ghost'"),
        ([assistant("a"), tool("a"), tool("a")], "second time"),
        ([tool("a"), assistant("a")], "unknown call 'a'"),
        ([Message(role="tool")], "no tool_result"),
    ],
)
def test_replace_history_refuses_invalid_pairing(history: list[Message], reason: str) -> None:
    """A replacement whose tool pairing is invalid raises ValueError and changes nothing."""
    s = in_state(State.RUNNING)
    before = s.copy()
    with pytest.raises(ValueError, match=reason):
        s.replace_history(history)
    assert s == before


# -- orphaned tool-call repair -----------------------------------------------------------


def test_orphan_repair_appends_in_call_order_and_is_idempotent() -> None:
    """Missing results are added in call order, once; a second call adds nothing."""
    s = Session(id="s1", messages=[assistant("c3", "c1", "c2"), tool("c1")])
    assert s.close_orphaned_tool_calls() == 2
    assert [m.tool_result.call_id for m in s.messages[2:] if m.tool_result] == ["c3", "c2"]
    assert all(m.tool_result and m.tool_result.is_error for m in s.messages[2:])
    snapshot = s.copy()
    assert s.close_orphaned_tool_calls() == 0
    assert s == snapshot


def test_orphan_repair_only_looks_at_the_last_assistant_message() -> None:
    """Unanswered calls of earlier assistant messages are not touched."""
    s = Session(id="s1", messages=[assistant("old"), Message(role="user"), assistant("new")])
    assert s.close_orphaned_tool_calls() == 1
    assert s.messages[-1].tool_result == ToolResult("new", ORPHANED_TOOL_CALL_TEXT, True)


def test_orphan_repair_without_assistant_or_calls_adds_nothing() -> None:
    """No assistant message, or one without calls, needs no repair."""
    assert Session(id="s1", messages=[Message(role="user")]).close_orphaned_tool_calls() == 0
    assert Session(id="s1", messages=[assistant(text="hi")]).close_orphaned_tool_calls() == 0


# -- limits ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("limits", "counters", "tripped"),
    [
        (Limits(), Counters(100, 100, 100), ""),
        (Limits(max_turns=3), Counters(turns=2), ""),
        (Limits(max_turns=3), Counters(turns=3), "max_turns"),
        (Limits(max_turns=3), Counters(turns=4), "max_turns"),
        (Limits(max_tool_calls=2), Counters(tool_calls=2), "max_tool_calls"),
        (
            Limits(max_consecutive_failures=1),
            Counters(consecutive_failures=1),
            "max_consecutive_failures",
        ),
        (Limits(0, 2, 0), Counters(9, 1, 9), ""),
        (Limits(1, 1, 1), Counters(1, 1, 1), "max_turns"),
        (Limits(5, 1, 1), Counters(1, 1, 1), "max_tool_calls"),
    ],
)
def test_limit_tripped(limits: Limits, counters: Counters, tripped: str) -> None:
    """limit_tripped names the first limit whose counter reached it; 0 disables a limit."""
    assert Session(id="s1", limits=limits, counters=counters).limit_tripped() == tripped


# -- clamping ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("", ""),
        ("   \n  ", ""),
        ("short", "short"),
        ("  padded  \nsecond", "padded"),
        ("x" * TITLE_MAX_CHARS, "x" * TITLE_MAX_CHARS),
        ("x" * (TITLE_MAX_CHARS + 1), "x" * TITLE_MAX_CHARS + "…"),
        ("é" * 500 + "\nnext", "é" * TITLE_MAX_CHARS + "…"),
    ],
)
def test_title_clamping(text: str, title: str) -> None:
    """Titles are the first non-blank line, at most 120 characters plus an ellipsis."""
    assert clamp_title(text) == title


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        ("boom", "boom"),
        ("line one\n  line two\r\n\tthree", "line one line two three"),
        ("e" * LAST_ERROR_MAX_CHARS, "e" * LAST_ERROR_MAX_CHARS),
        ("e" * (LAST_ERROR_MAX_CHARS + 1), "e" * (LAST_ERROR_MAX_CHARS - 1) + "…"),
    ],
)
def test_last_error_clamping(error: str, expected: str) -> None:
    """Errors are folded to one line of at most 400 characters."""
    assert one_line_error(error) == expected
    s = in_state(State.RUNNING)
    s.fail(error)
    assert s.last_error == expected
    assert len(s.last_error) <= LAST_ERROR_MAX_CHARS
    assert "\n" not in s.last_error


# -- invariants and copies --------------------------------------------------------------------


def test_validate_requires_ask_exactly_while_awaiting() -> None:
    """A pending ask outside awaiting, or awaiting without one, is invalid."""
    with pytest.raises(InvalidSessionMetadata, match="pending_ask"):
        Session(id="s1", pending_ask=ASK).validate()
    with pytest.raises(InvalidSessionMetadata, match="pending_ask"):
        Session(id="s1", state=State.AWAITING).validate()
    Session(id="s1", state=State.AWAITING, pending_ask=ASK).validate()


def test_copy_is_deep() -> None:
    """Changing a copy's lists and dicts leaves the original untouched."""
    s = in_state(State.RUNNING)
    s.labels["k"] = "v"
    c = s.copy()
    c.messages.append(Message(role="user"))
    c.labels["k"] = "w"
    c.extra["x"] = 1
    assert len(s.messages) == 1
    assert s.labels == {"k": "v"}
    assert s.extra == {}
