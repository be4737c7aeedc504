"""Event-sourced fold: rebuild a ``Session`` from its event log (SPEC §5).

The snapshot is the system of record; the fold is the fallback for a session
that has an event log but no snapshot (``sessions.load_or_fold``). It walks the
events in append order and applies the table of SPEC §2.4. Where the
specification is silent, these rules hold (they are the fold's contract):

* **Open assistant turn.** ``turn.start`` flushes any open turn and opens a new
  one (``turns += 1``). ``message.delta`` appends ``text`` and ``tool.call``
  adds ``data.call``; either opens a turn without counting one when none is
  open. The open turn becomes an assistant message when it is *flushed*: by the
  next ``turn.start``, ``user_prompt`` or ``tool.result``, by a ``result``
  (unless discarded, see below) and at the end of the log. An empty turn
  (``turn.start`` with nothing after it) still flushes as an empty assistant
  message, as a loop that records an empty reply would. ``reasoning`` is never
  set: the reasoning replay blob does not travel in events.
* **User prompts.** ``user_prompt`` appends a user message with ``text`` and
  ``data.parts`` (``Part`` JSON, base64 data). The first one sets the title
  (clamped like :meth:`Session.record_user_prompt`) when the seed has none.
* **Tool results.** ``tool.result`` appends a tool message and updates the
  counters exactly as :meth:`Session.record_tool_results` does. ``args`` that
  arrive as JSON values rather than JSON text (mecatl writes raw JSON) are
  serialised compactly.
* **Asks.** ``permission.ask`` sets the pending ask; ``approval`` and
  ``permission.retract`` clear it; a ``result`` clears it too.
* **Runs.** A ``result`` ends the current run segment: ``data.usage`` is added
  to the cumulative usage; if ``data.stop == "error"`` and ``data.progress`` is
  not ``"complete"`` the open turn is discarded (a partial reply that failed),
  otherwise it is flushed. The counters of that run are kept as the run's final
  counters and the live counters restart at zero. Any later ``user_prompt``,
  ``turn.start``, ``message.delta``, ``tool.call``, ``tool.result`` or
  ``permission.ask`` starts a new run segment, which means the earlier result
  no longer decides the final state (a ``compaction.archive``, ``approval`` or
  ``permission.retract`` after a result does not).
* **Compaction.** ``compaction.archive`` sets the conversation to
  ``data.replaced`` (``Message`` JSON): the archive carries the conversation as
  it stood before compaction, so the fold recovers the whole, uncompacted
  history (the snapshot keeps only the compacted one). An open turn keeps
  accumulating on top of it.
* **Final state.** The current segment decides: a pending ask → ``awaiting``
  (the open turn is flushed, counters are the segment's); no result →
  ``idle``, reached as :meth:`Session.abandon` would reach it: orphaned tool
  calls of the last assistant message are closed and the counters are cleared;
  ``stop == "cancelled"`` → ``cancelled``; ``stop == "error"`` with progress not
  complete → ``failed`` with ``last_error`` = ``data.error`` (else the event
  ``text``, else ``FAILED_WITHOUT_ERROR_TEXT``) folded to one line; anything
  else → ``completed`` with
  ``stop_reason`` = ``data.stop`` (``"end_turn"`` when empty; a ``stop ==
  "error"`` whose progress is ``"complete"`` is therefore ``completed`` with
  reason ``"error"``). ``run_id`` is the last non-empty ``run_id`` seen.
* **Other types** (``turn.end``, ``reasoning.delta``, ``compaction``, …) are
  ignored.

``created_at`` is ``seed.created_at``, or the clock read when ``fold`` is called.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from sqlstore.errors import ReconstructError, SessionNotFound
from sqlstore.events import Event
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
    ToolCall,
    ToolResult,
    Usage,
)
from sqlstore.session import Session, clamp_title, tool_pairing_problem

_SEGMENT_TYPES = frozenset(
    {"user_prompt", "turn.start", "message.delta", "tool.call", "tool.result", "permission.ask"}
)
"""Event types that belong to a run: after a ``result`` they start a new run segment."""

FAILED_WITHOUT_ERROR_TEXT = "the run ended with an error"
"""``last_error`` of a failed fold whose ``result`` carried neither ``error`` nor ``text``."""


@dataclass(frozen=True, slots=True)
class SessionSeed:
    """What the event log does not carry: identity, configuration and lineage."""

    id: str
    mode: str = "default"
    limits: Limits = field(default_factory=Limits)
    kind: Kind = Kind.MAIN
    relationship: Relationship = field(default_factory=Relationship)
    owner: Principal | None = None
    provider_id: str = ""
    model_id: str = ""
    created_at: datetime | None = None
    title: str = ""

    def new_session(self) -> Session:
        """Return a new idle session with the seed's fields (the clock is read now).

        Raises:
            InvalidSessionId: the seed's id is not valid.
            InvalidSessionMetadata: kind and relationship disagree, or the mode is unknown.
        """
        session = Session.new(
            self.id,
            mode=self.mode,
            limits=self.limits,
            kind=self.kind,
            relationship=self.relationship,
            owner=self.owner,
            title=self.title,
            provider_id=self.provider_id,
            model_id=self.model_id,
        )
        if self.created_at is not None:
            session.created_at = self.created_at
        return session


@dataclass(slots=True)
class _Outcome:
    """How a run segment ended: the data of its ``result`` event."""

    stop: str
    error: str
    progress: str
    text: str
    counters: Counters


@dataclass(slots=True)
class _Folder:
    """Accumulates the reconstruction while walking the events."""

    messages: list[Message] = field(default_factory=list)
    turn_open: bool = False
    turn_text: str = ""
    turn_calls: list[ToolCall] = field(default_factory=list)
    counters: Counters = field(default_factory=Counters)
    usage: Usage = field(default_factory=Usage)
    pending: Ask | None = None
    outcome: _Outcome | None = None
    first_prompt: str | None = None
    run_id: str = ""

    def flush(self) -> None:
        if self.turn_open:
            self.messages.append(
                Message(role="assistant", text=self.turn_text, tool_calls=self.turn_calls)
            )
        self.discard()

    def discard(self) -> None:
        self.turn_open = False
        self.turn_text = ""
        self.turn_calls = []

    def consume(self, event: Event) -> None:
        kind = event.type
        if event.run_id:
            self.run_id = event.run_id
        if kind in _SEGMENT_TYPES:
            self.outcome = None
        data = event.data
        if not isinstance(data, dict):
            raise TypeError(f"event data must be an object, got {type(data).__name__}")
        if kind == "user_prompt":
            self.flush()
            parts = [Part.from_json(p) for p in _list(data, "parts")]
            self.messages.append(Message(role="user", text=event.text, parts=parts))
            if self.first_prompt is None:
                self.first_prompt = event.text
        elif kind == "turn.start":
            self.flush()
            self.turn_open = True
            self.counters = Counters(
                self.counters.turns + 1,
                self.counters.tool_calls,
                self.counters.consecutive_failures,
            )
        elif kind == "message.delta":
            self.turn_open = True
            self.turn_text += event.text
        elif kind == "tool.call":
            self.turn_open = True
            self.turn_calls.append(ToolCall.from_json(_with_text_args(_object(data, "call"))))
        elif kind == "tool.result":
            self.flush()
            result = ToolResult.from_json(_object(data, "result"))
            self.messages.append(Message(role="tool", tool_result=result))
            failures = self.counters.consecutive_failures + 1 if result.is_error else 0
            self.counters = Counters(self.counters.turns, self.counters.tool_calls + 1, failures)
        elif kind == "permission.ask":
            self.pending = Ask.from_json(_with_text_args(_object(data, "ask")))
        elif kind in ("approval", "permission.retract"):
            self.pending = None
        elif kind == "result":
            self.end_run(event)
        elif kind == "compaction.archive":
            self.messages = [Message.from_json(m) for m in _list(data, "replaced")]

    def end_run(self, event: Event) -> None:
        data = event.data
        stop = _text(data, "stop")
        progress = _text(data, "progress")
        if stop == "error" and progress != "complete":
            self.discard()
        else:
            self.flush()
        usage = data.get("usage")
        if usage is not None:
            self.usage = self.usage + Usage.from_json(usage)
        self.pending = None
        self.outcome = _Outcome(stop, _text(data, "error"), progress, event.text, self.counters)
        self.counters = Counters()


def fold(seed: SessionSeed, events: Iterable[Event]) -> Session:
    """Rebuild a session from ``seed`` and its events, in append order.

    The rules are those of the module docstring. The result is a new, valid
    session; nothing is written anywhere.

    Raises:
        InvalidSessionId: the seed's id is not valid.
        InvalidSessionMetadata: the seed's kind and relationship disagree, or its
            mode is unknown.
        ReconstructError: an event's data is malformed (the message names the event),
            or the rebuilt conversation has an invalid tool pairing.
    """
    session = seed.new_session()
    folder = _Folder()
    for index, event in enumerate(events):
        try:
            folder.consume(event)
        except (TypeError, ValueError, KeyError) as exc:
            raise ReconstructError(
                f"cannot fold session {seed.id!r}: event {index} ({event.type!r}) is malformed: "
                f"{exc}"
            ) from None
    folder.flush()
    problem = tool_pairing_problem(folder.messages)
    if problem:
        raise ReconstructError(f"cannot fold session {seed.id!r}: invalid tool pairing: {problem}")
    session.messages = folder.messages
    session.usage = folder.usage
    session.run_id = folder.run_id
    if not session.title and folder.first_prompt is not None:
        session.title = clamp_title(folder.first_prompt)
    _land(session, folder)
    return session


class _Loads(Protocol):
    def load(self, session_id: str) -> Session: ...


class _Reads(Protocol):
    def read(self, session_id: str) -> Iterator[Event]: ...


def load_or_fold(sessions: _Loads, events: _Reads, session_id: str, seed: object) -> Session:
    """Return the stored snapshot, or fold the session's event log with ``seed``.

    The shared body of every backend's ``sessions.load_or_fold``.

    Raises:
        TypeError: there is no snapshot and ``seed`` is not a ``SessionSeed``.
        ReconstructError: the log cannot be folded (see :func:`fold`).
    """
    try:
        return sessions.load(session_id)
    except SessionNotFound:
        if not isinstance(seed, SessionSeed):
            raise TypeError("seed must be a SessionSeed") from None
        return fold(seed, events.read(session_id))


def _land(session: Session, folder: _Folder) -> None:
    """Put ``session`` in the final state the folded events describe."""
    outcome = folder.outcome
    if folder.pending is not None:
        session.state = State.AWAITING
        session.pending_ask = folder.pending
        session.counters = folder.counters
    elif outcome is None:
        session.state = State.IDLE
        session.close_orphaned_tool_calls()
        session.counters = Counters()
    else:
        session.counters = outcome.counters
        if outcome.stop == "cancelled":
            session.cancel()
        elif outcome.stop == "error" and outcome.progress != "complete":
            session.fail(outcome.error or outcome.text or FAILED_WITHOUT_ERROR_TEXT)
        else:
            session.stop(outcome.stop or "end_turn")


def _object(data: dict[str, JSON], key: str) -> dict[str, Any]:
    value = data.get(key)
    if not isinstance(value, dict):
        raise TypeError(f"data.{key} must be an object, got {type(value).__name__}")
    return value


def _list(data: dict[str, JSON], key: str) -> list[Any]:
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise TypeError(f"data.{key} must be a list, got {type(value).__name__}")
    return value


def _text(data: dict[str, JSON], key: str) -> str:
    value = data.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TypeError(f"data.{key} must be a string, got {type(value).__name__}")
    return value


def _with_text_args(obj: dict[str, Any]) -> dict[str, Any]:
    """Return ``obj`` with ``args`` as JSON text (mecatl writes it as a raw JSON value)."""
    args = obj.get("args")
    if isinstance(args, str) or "args" not in obj:
        return obj
    if args is None:
        return {k: v for k, v in obj.items() if k != "args"}
    return {**obj, "args": json.dumps(args, ensure_ascii=False, separators=(",", ":"))}
