"""The ``Session`` aggregate: the whole state of one agent session, and its transitions.

``Session`` is the one mutable domain type. Its methods are the only legal way
to move between states; a call in a state that does not allow it raises
``IllegalTransition`` and changes nothing.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from datetime import datetime

from sqlstore import clock
from sqlstore.errors import IllegalTransition, InvalidSessionMetadata
from sqlstore.model import (
    JSON,
    Ask,
    Counters,
    Kind,
    Limits,
    Message,
    Part,
    Principal,
    Relationship,
    State,
    ToolResult,
    Usage,
    validate_kind,
    validate_session_id,
)

MODES = frozenset({"default", "plan", "acceptEdits"})
TITLE_MAX_CHARS = 120
LAST_ERROR_MAX_CHARS = 400
ORPHANED_TOOL_CALL_TEXT = "tool call interrupted: the run stopped before a result was recorded"

_NON_TERMINAL = frozenset({State.IDLE, State.RUNNING, State.AWAITING})


def clamp_title(text: str) -> str:
    """Return the first line of ``text`` clamped to 120 characters plus "…"."""
    line = text.strip().splitlines()[0].rstrip() if text.strip() else ""
    if len(line) > TITLE_MAX_CHARS:
        return line[:TITLE_MAX_CHARS] + "…"
    return line


def one_line_error(error: str) -> str:
    """Return ``error`` folded to one line of at most 400 characters."""
    line = " ".join(str(error).split())
    if len(line) > LAST_ERROR_MAX_CHARS:
        line = line[: LAST_ERROR_MAX_CHARS - 1] + "…"
    return line


@dataclass(slots=True)
class Session:
    """The session aggregate (snapshot). Fields are also the snapshot JSON keys."""

    id: str
    state: State = State.IDLE
    mode: str = "default"
    limits: Limits = field(default_factory=Limits)
    counters: Counters = field(default_factory=Counters)
    usage: Usage = field(default_factory=Usage)
    messages: list[Message] = field(default_factory=list)
    created_at: datetime = field(default_factory=clock.now)
    title: str = ""
    provider_id: str = ""
    model_id: str = ""
    kind: Kind = Kind.MAIN
    relationship: Relationship = field(default_factory=Relationship)
    owner: Principal | None = None
    stop_reason: str = ""
    pending_ask: Ask | None = None
    last_error: str = ""
    run_id: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    extra: dict[str, JSON] = field(default_factory=dict)

    @classmethod
    def new(
        cls,
        id: str,
        *,
        mode: str = "default",
        limits: Limits | None = None,
        kind: Kind = Kind.MAIN,
        relationship: Relationship | None = None,
        owner: Principal | None = None,
        title: str = "",
        provider_id: str = "",
        model_id: str = "",
        labels: dict[str, str] | None = None,
    ) -> Session:
        """Return a new idle session with an empty conversation, created now.

        Raises:
            InvalidSessionId: the id is not valid.
            InvalidSessionMetadata: the kind and relationship do not agree, or the mode
                is unknown.
        """
        validate_session_id(id)
        kind = Kind(kind)
        rel = relationship if relationship is not None else Relationship()
        validate_kind(kind, rel)
        if mode not in MODES:
            raise InvalidSessionMetadata(f"unknown mode {mode!r}; expected one of {sorted(MODES)}")
        return cls(
            id=id,
            mode=mode,
            limits=limits if limits is not None else Limits(),
            kind=kind,
            relationship=rel,
            owner=owner,
            title=title,
            provider_id=provider_id,
            model_id=model_id,
            labels=dict(labels or {}),
            created_at=clock.now(),
        )

    def copy(self) -> Session:
        """Return a deep, independent copy."""
        return copy.deepcopy(self)

    def validate(self) -> None:
        """Raise if the aggregate's invariants do not hold (id, kind, pending ask)."""
        validate_session_id(self.id)
        validate_kind(self.kind, self.relationship)
        if (self.pending_ask is not None) != (self.state is State.AWAITING):
            raise InvalidSessionMetadata("pending_ask must be set exactly while awaiting")

    # -- transitions -------------------------------------------------------------

    def _require(self, action: str, *allowed: State) -> None:
        if self.state not in allowed:
            names = ", ".join(str(s) for s in allowed)
            raise IllegalTransition(
                f"cannot {action} session {self.id!r} in state {self.state}; allowed from: {names}"
            )

    def begin_turn(self) -> None:
        """Start a model turn: idle/running → running, ``turns += 1``."""
        self._require("begin a turn", State.IDLE, State.RUNNING)
        self.state = State.RUNNING
        self.counters = replace(self.counters, turns=self.counters.turns + 1)

    def record_user_prompt(self, text: str, parts: tuple[Part, ...] | list[Part] = ()) -> None:
        """Append a user message; the first prompt sets an empty title."""
        self._require("record a user prompt", *_NON_TERMINAL)
        self.messages.append(Message(role="user", text=text, parts=list(parts)))
        if not self.title:
            self.title = clamp_title(text)

    def record_assistant(self, message: Message) -> None:
        """Append an assistant message (running only)."""
        self._require("record an assistant message", State.RUNNING)
        if message.role != "assistant":
            raise ValueError(f"record_assistant takes an assistant message, not {message.role!r}")
        self.messages.append(message)

    def record_tool_results(self, results: list[ToolResult] | tuple[ToolResult, ...]) -> None:
        """Append one tool message per result and update the failure counters."""
        self._require("record tool results", State.RUNNING)
        counters = self.counters
        for result in results:
            self.messages.append(Message(role="tool", tool_result=result))
            failures = counters.consecutive_failures + 1 if result.is_error else 0
            counters = Counters(counters.turns, counters.tool_calls + 1, failures)
        self.counters = counters

    def record_usage(self, usage: Usage) -> None:
        """Add ``usage`` to the cumulative usage (running only)."""
        self._require("record usage", State.RUNNING)
        self.usage = self.usage + usage

    def pause_for_approval(self, ask: Ask) -> None:
        """Park the session on a permission request: running → awaiting."""
        self._require("pause for approval", State.RUNNING)
        self.state = State.AWAITING
        self.pending_ask = ask

    def resume(self) -> Ask:
        """Continue after approval: awaiting → running; returns the ask."""
        self._require("resume", State.AWAITING)
        ask = self.pending_ask
        assert ask is not None  # invariant: awaiting always carries an ask
        self.pending_ask = None
        self.state = State.RUNNING
        return ask

    def complete(self) -> None:
        """End the run normally: → completed with stop reason ``end_turn``."""
        self.stop("end_turn")

    def stop(self, reason: str) -> None:
        """End the run with a recorded stop reason: → completed."""
        self._require("stop", *_NON_TERMINAL)
        self.state = State.COMPLETED
        self.stop_reason = reason
        self.pending_ask = None

    def cancel(self) -> None:
        """Cancel the run: → cancelled."""
        self._require("cancel", *_NON_TERMINAL)
        self.state = State.CANCELLED
        self.stop_reason = "cancelled"
        self.pending_ask = None

    def fail(self, error: str) -> None:
        """Fail the run: → failed, with ``last_error`` folded to one line of ≤ 400 chars."""
        self._require("fail", *_NON_TERMINAL)
        self.state = State.FAILED
        self.stop_reason = "error"
        self.last_error = one_line_error(error)
        self.pending_ask = None

    def reopen(self) -> None:
        """Continue a completed session: completed → idle."""
        self._require("reopen", State.COMPLETED)
        self._to_idle()

    def interrupt(self) -> None:
        """Recover a cancelled session: close orphaned tool calls, → idle."""
        self._require("interrupt", State.CANCELLED)
        self.close_orphaned_tool_calls()
        self._to_idle()

    def recover(self) -> None:
        """Recover a failed session: close orphaned tool calls, → idle."""
        self._require("recover", State.FAILED)
        self.close_orphaned_tool_calls()
        self._to_idle()

    def abandon(self) -> None:
        """Abandon a running turn (e.g. after a crash): close orphaned tool calls, → idle."""
        self._require("abandon", State.RUNNING)
        self.close_orphaned_tool_calls()
        self._to_idle()

    def replace_history(self, messages: list[Message]) -> None:
        """Replace the conversation (compaction); the tool pairing must be valid.

        Raises:
            IllegalTransition: the session is awaiting.
            ValueError: a tool result does not answer a preceding call, or a call is
                answered twice.
        """
        self._require(
            "replace history",
            State.IDLE,
            State.RUNNING,
            State.COMPLETED,
            State.FAILED,
            State.CANCELLED,
        )
        problem = tool_pairing_problem(messages)
        if problem:
            raise ValueError(f"invalid tool pairing in replacement history: {problem}")
        self.messages = list(messages)

    def close_orphaned_tool_calls(self) -> int:
        """Answer every unanswered call of the last assistant message with an error result.

        Results are appended in call order; calling it again adds nothing.
        Returns the number of results added.
        """
        last = None
        for index in range(len(self.messages) - 1, -1, -1):
            if self.messages[index].role == "assistant":
                last = index
                break
        if last is None:
            return 0
        answered = {
            m.tool_result.call_id
            for m in self.messages[last + 1 :]
            if m.role == "tool" and m.tool_result is not None
        }
        added = 0
        for call in self.messages[last].tool_calls:
            if call.id not in answered:
                result = ToolResult(call_id=call.id, content=ORPHANED_TOOL_CALL_TEXT, is_error=True)
                self.messages.append(Message(role="tool", tool_result=result))
                answered.add(call.id)
                added += 1
        return added

    def limit_tripped(self) -> str:
        """Return the name of the first limit whose counter reached it, or ``""``."""
        checks = (
            ("max_turns", self.limits.max_turns, self.counters.turns),
            ("max_tool_calls", self.limits.max_tool_calls, self.counters.tool_calls),
            (
                "max_consecutive_failures",
                self.limits.max_consecutive_failures,
                self.counters.consecutive_failures,
            ),
        )
        for name, limit, count in checks:
            if limit > 0 and count >= limit:
                return name
        return ""

    def _to_idle(self) -> None:
        self.state = State.IDLE
        self.stop_reason = ""
        self.pending_ask = None
        self.last_error = ""
        self.counters = Counters()


def tool_pairing_problem(messages: list[Message]) -> str:
    """Describe the first tool-pairing violation in ``messages``, or return ``""``.

    Valid: every tool result answers a call made by an earlier assistant message,
    and no call is answered twice.
    """
    open_calls: set[str] = set()
    answered: set[str] = set()
    for index, message in enumerate(messages):
        for call in message.tool_calls:
            open_calls.add(call.id)
        if message.role == "tool":
            result = message.tool_result
            if result is None:
                return f"message {index} has role tool but no tool_result"
            if result.call_id in answered:
                return f"message {index} answers call {result.call_id!r} a second time"
            if result.call_id not in open_calls:
                return f"message {index} answers unknown call {result.call_id!r}"
            answered.add(result.call_id)
    return ""


def session_fields() -> tuple[str, ...]:
    """Return the snapshot field names in declaration order."""
    return tuple(Session.__dataclass_fields__)
