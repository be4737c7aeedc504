"""Value types of the session domain (pure, no I/O).

Every type is a slotted dataclass with keyword construction, sensible defaults
and ``to_json()``/``from_json()`` to plain JSON-compatible dicts. ``from_json``
is lenient about missing keys (defaults apply) and strict about types; the
snapshot codec (:mod:`sqlstore.snapshot`) wraps its errors in ``SnapshotError``.
"""

from __future__ import annotations

import base64
import enum
from dataclasses import dataclass, field
from typing import Any

from sqlstore.errors import InvalidSessionId, InvalidSessionMetadata

JSON = Any
"""A JSON-compatible value (dict, list, str, int, float, bool or None)."""

MAX_SESSION_ID_BYTES = 4096


def validate_session_id(session_id: object) -> str:
    """Return ``session_id`` if it is a valid id, else raise ``InvalidSessionId``.

    Valid: a non-empty ``str`` without NUL and without lone surrogates, at most
    4096 bytes in UTF-8.
    """
    if not isinstance(session_id, str):
        raise InvalidSessionId(f"session id must be str, not {type(session_id).__name__}")
    if not session_id:
        raise InvalidSessionId("session id is empty")
    if "\x00" in session_id:
        raise InvalidSessionId("session id contains NUL")
    try:
        size = len(session_id.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidSessionId("session id contains a lone surrogate") from None
    if size > MAX_SESSION_ID_BYTES:
        raise InvalidSessionId(
            f"session id is {size} bytes in UTF-8; the limit is {MAX_SESSION_ID_BYTES}"
        )
    return session_id


class State(enum.StrEnum):
    """Lifecycle state of a session."""

    IDLE = "idle"
    RUNNING = "running"
    AWAITING = "awaiting"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def terminal(self) -> bool:
        """True for completed, failed and cancelled."""
        return self in (State.COMPLETED, State.FAILED, State.CANCELLED)


class Kind(enum.StrEnum):
    """What started the session; decides which relationship fields it needs."""

    MAIN = "main"
    SCHEDULED = "scheduled"
    SUBAGENT = "subagent"
    PARALLEL_BRANCH = "parallel_branch"
    TEAM_MEMBER = "team_member"
    UNKNOWN = "unknown"


CHILD_KINDS = frozenset({Kind.SUBAGENT, Kind.PARALLEL_BRANCH, Kind.TEAM_MEMBER})


def _take(data: dict[str, Any], key: str, kind: type | tuple[type, ...], default: Any) -> Any:
    value = data.get(key, default)
    if value is None and default is None:
        return None
    if kind is int and isinstance(value, bool):
        raise TypeError(f"{key}: expected int, got bool")
    if not isinstance(value, kind):
        raise TypeError(f"{key}: expected {getattr(kind, '__name__', kind)}, got {value!r:.60}")
    return value


def _mapping(data: object, what: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise TypeError(f"{what}: expected an object, got {type(data).__name__}")
    return data


@dataclass(frozen=True, slots=True)
class Limits:
    """Per-run-segment limits; 0 disables a limit."""

    max_turns: int = 0
    max_tool_calls: int = 0
    max_consecutive_failures: int = 0

    def to_json(self) -> dict[str, JSON]:
        return {
            "max_turns": self.max_turns,
            "max_tool_calls": self.max_tool_calls,
            "max_consecutive_failures": self.max_consecutive_failures,
        }

    @classmethod
    def from_json(cls, data: object) -> Limits:
        d = _mapping(data, "limits")
        return cls(
            max_turns=_take(d, "max_turns", int, 0),
            max_tool_calls=_take(d, "max_tool_calls", int, 0),
            max_consecutive_failures=_take(d, "max_consecutive_failures", int, 0),
        )


@dataclass(frozen=True, slots=True)
class Counters:
    """Counters of the current run segment, reset when the session returns to idle."""

    turns: int = 0
    tool_calls: int = 0
    consecutive_failures: int = 0

    def to_json(self) -> dict[str, JSON]:
        return {
            "turns": self.turns,
            "tool_calls": self.tool_calls,
            "consecutive_failures": self.consecutive_failures,
        }

    @classmethod
    def from_json(cls, data: object) -> Counters:
        d = _mapping(data, "counters")
        return cls(
            turns=_take(d, "turns", int, 0),
            tool_calls=_take(d, "tool_calls", int, 0),
            consecutive_failures=_take(d, "consecutive_failures", int, 0),
        )


_USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)


@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage; cumulative across runs on a session."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(*(getattr(self, f) + getattr(other, f) for f in _USAGE_FIELDS))

    def is_zero(self) -> bool:
        """True when every counter is 0."""
        return not any(getattr(self, f) for f in _USAGE_FIELDS)

    def to_json(self) -> dict[str, JSON]:
        return {f: getattr(self, f) for f in _USAGE_FIELDS}

    @classmethod
    def from_json(cls, data: object) -> Usage:
        d = _mapping(data, "usage")
        return cls(*(_take(d, f, int, 0) for f in _USAGE_FIELDS))


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated owner; identity is (issuer, subject)."""

    issuer: str = ""
    subject: str = ""
    grant_type: str = ""
    name: str = ""

    @property
    def identity(self) -> tuple[str, str]:
        """The (issuer, subject) pair that identifies the principal."""
        return (self.issuer, self.subject)

    def to_json(self) -> dict[str, JSON]:
        return {
            "issuer": self.issuer,
            "subject": self.subject,
            "grant_type": self.grant_type,
            "name": self.name,
        }

    @classmethod
    def from_json(cls, data: object) -> Principal:
        d = _mapping(data, "owner")
        return cls(
            issuer=_take(d, "issuer", str, ""),
            subject=_take(d, "subject", str, ""),
            grant_type=_take(d, "grant_type", str, ""),
            name=_take(d, "name", str, ""),
        )


@dataclass(frozen=True, slots=True)
class Relationship:
    """Links a session to what spawned it; which fields are needed depends on the kind."""

    schedule_name: str = ""
    origin_session_id: str = ""
    parent_session_id: str = ""
    call_id: str = ""
    branch_index: int | None = None
    team_id: str = ""
    member_name: str = ""

    def is_empty(self) -> bool:
        """True when no field is set."""
        return self == Relationship()

    def to_json(self) -> dict[str, JSON]:
        return {
            "schedule_name": self.schedule_name,
            "origin_session_id": self.origin_session_id,
            "parent_session_id": self.parent_session_id,
            "call_id": self.call_id,
            "branch_index": self.branch_index,
            "team_id": self.team_id,
            "member_name": self.member_name,
        }

    @classmethod
    def from_json(cls, data: object) -> Relationship:
        d = _mapping(data, "relationship")
        return cls(
            schedule_name=_take(d, "schedule_name", str, ""),
            origin_session_id=_take(d, "origin_session_id", str, ""),
            parent_session_id=_take(d, "parent_session_id", str, ""),
            call_id=_take(d, "call_id", str, ""),
            branch_index=_take(d, "branch_index", int, None),
            team_id=_take(d, "team_id", str, ""),
            member_name=_take(d, "member_name", str, ""),
        )


def validate_kind(kind: Kind, rel: Relationship) -> None:
    """Raise ``InvalidSessionMetadata`` unless ``rel`` carries what ``kind`` needs."""
    if not isinstance(kind, Kind):
        raise InvalidSessionMetadata(f"unknown session kind {kind!r}")
    if kind in (Kind.MAIN, Kind.UNKNOWN):
        if not rel.is_empty():
            raise InvalidSessionMetadata(f"a {kind} session must have an empty relationship")
        return
    if kind is Kind.SCHEDULED:
        if not rel.schedule_name:
            raise InvalidSessionMetadata("a scheduled session needs schedule_name")
        extra = Relationship(
            schedule_name=rel.schedule_name, origin_session_id=rel.origin_session_id
        )
        if rel != extra:
            raise InvalidSessionMetadata(
                "a scheduled session may only set schedule_name and origin_session_id"
            )
        return
    if kind in (Kind.SUBAGENT, Kind.PARALLEL_BRANCH):
        if not rel.parent_session_id or not rel.call_id:
            raise InvalidSessionMetadata(f"a {kind} session needs parent_session_id and call_id")
        if kind is Kind.PARALLEL_BRANCH:
            if rel.branch_index is None or rel.branch_index < 0:
                raise InvalidSessionMetadata("a parallel_branch session needs branch_index >= 0")
        elif rel.branch_index is not None:
            raise InvalidSessionMetadata("only a parallel_branch session has a branch_index")
        if rel.schedule_name or rel.origin_session_id or rel.team_id or rel.member_name:
            raise InvalidSessionMetadata(f"a {kind} session has schedule or team fields set")
        return
    # team member
    if not rel.team_id or not rel.member_name:
        raise InvalidSessionMetadata("a team_member session needs team_id and member_name")
    if rel.schedule_name or rel.origin_session_id or rel.call_id or rel.branch_index is not None:
        raise InvalidSessionMetadata("a team_member session has schedule or call fields set")


@dataclass(frozen=True, slots=True)
class Ask:
    """A pending permission request; present only while a session is awaiting."""

    ask_id: str = ""
    tool: str = ""
    args: str = ""
    reason: str = ""

    def to_json(self) -> dict[str, JSON]:
        return {"ask_id": self.ask_id, "tool": self.tool, "args": self.args, "reason": self.reason}

    @classmethod
    def from_json(cls, data: object) -> Ask:
        d = _mapping(data, "ask")
        return cls(
            ask_id=_take(d, "ask_id", str, ""),
            tool=_take(d, "tool", str, ""),
            args=_take(d, "args", str, ""),
            reason=_take(d, "reason", str, ""),
        )


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call requested by the assistant; ``args`` is JSON text."""

    id: str = ""
    name: str = ""
    args: str = ""

    def to_json(self) -> dict[str, JSON]:
        return {"id": self.id, "name": self.name, "args": self.args}

    @classmethod
    def from_json(cls, data: object) -> ToolCall:
        d = _mapping(data, "tool call")
        return cls(
            id=_take(d, "id", str, ""),
            name=_take(d, "name", str, ""),
            args=_take(d, "args", str, ""),
        )


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The result of one tool call."""

    call_id: str = ""
    content: str = ""
    is_error: bool = False

    def to_json(self) -> dict[str, JSON]:
        return {"call_id": self.call_id, "content": self.content, "is_error": self.is_error}

    @classmethod
    def from_json(cls, data: object) -> ToolResult:
        d = _mapping(data, "tool result")
        return cls(
            call_id=_take(d, "call_id", str, ""),
            content=_take(d, "content", str, ""),
            is_error=_take(d, "is_error", bool, False),
        )


@dataclass(frozen=True, slots=True)
class Part:
    """A media part of a message; ``data`` is raw bytes (base64 in JSON)."""

    kind: str = ""
    mime_type: str = ""
    data: bytes = b""
    url: str = ""

    def to_json(self) -> dict[str, JSON]:
        return {
            "kind": self.kind,
            "mime_type": self.mime_type,
            "data": base64.b64encode(self.data).decode("ascii"),
            "url": self.url,
        }

    @classmethod
    def from_json(cls, data: object) -> Part:
        d = _mapping(data, "part")
        raw = _take(d, "data", str, "")
        try:
            blob = base64.b64decode(raw, validate=True)
        except ValueError as exc:
            raise ValueError(f"part data is not base64: {exc}") from None
        return cls(
            kind=_take(d, "kind", str, ""),
            mime_type=_take(d, "mime_type", str, ""),
            data=blob,
            url=_take(d, "url", str, ""),
        )


ROLES = frozenset({"system", "user", "assistant", "tool"})
_MESSAGE_KEYS = frozenset({"role", "text", "tool_calls", "tool_result", "parts", "reasoning"})


@dataclass(frozen=True, slots=True)
class Message:
    """One conversation message.

    JSON keys this version does not know are kept in ``extra`` and written back
    beside the known keys, so a newer writer's fields survive a round trip.
    """

    role: str = "user"
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_result: ToolResult | None = None
    parts: list[Part] = field(default_factory=list)
    reasoning: str = ""
    extra: dict[str, JSON] = field(default_factory=dict)

    def to_json(self) -> dict[str, JSON]:
        out: dict[str, JSON] = {
            "role": self.role,
            "text": self.text,
            "tool_calls": [c.to_json() for c in self.tool_calls],
            "tool_result": None if self.tool_result is None else self.tool_result.to_json(),
            "parts": [p.to_json() for p in self.parts],
            "reasoning": self.reasoning,
        }
        clash = _MESSAGE_KEYS.intersection(self.extra)
        if clash:
            raise ValueError(f"message extra uses reserved keys {sorted(clash)}")
        out.update(self.extra)
        return out

    @classmethod
    def from_json(cls, data: object) -> Message:
        d = _mapping(data, "message")
        role = _take(d, "role", str, "user")
        if role not in ROLES:
            raise ValueError(f"message role {role!r} is not one of {sorted(ROLES)}")
        calls = _take(d, "tool_calls", list, [])
        parts = _take(d, "parts", list, [])
        result = d.get("tool_result")
        return cls(
            role=role,
            text=_take(d, "text", str, ""),
            tool_calls=[ToolCall.from_json(c) for c in calls],
            tool_result=None if result is None else ToolResult.from_json(result),
            parts=[Part.from_json(p) for p in parts],
            reasoning=_take(d, "reasoning", str, ""),
            extra={k: v for k, v in d.items() if k not in _MESSAGE_KEYS},
        )
