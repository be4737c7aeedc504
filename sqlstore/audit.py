"""The tool-call audit record."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlstore import clock
from sqlstore.model import JSON

_TEXT_FIELDS = ("call_id", "tool", "args", "result", "run_id")
_INT_FIELDS = ("queued_us", "took_us")
_INT64_MAX = 2**63 - 1


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    """One executed tool call: what was asked, what came back, and how long it took."""

    session_id: str
    call_id: str = ""
    tool: str = ""
    args: str = ""
    result: str = ""
    is_error: bool = False
    at: datetime | None = None
    queued_us: int = 0
    took_us: int = 0
    run_id: str = ""

    def to_json(self) -> dict[str, JSON]:
        return {
            "session_id": self.session_id,
            "call_id": self.call_id,
            "tool": self.tool,
            "args": self.args,
            "result": self.result,
            "is_error": self.is_error,
            "at": None if self.at is None else clock.format_rfc3339(self.at),
            "queued_us": self.queued_us,
            "took_us": self.took_us,
            "run_id": self.run_id,
        }

    @classmethod
    def from_json(cls, data: dict[str, JSON]) -> ToolCallRecord:
        at = data.get("at")
        return cls(
            session_id=str(data["session_id"]),
            call_id=str(data.get("call_id", "")),
            tool=str(data.get("tool", "")),
            args=str(data.get("args", "")),
            result=str(data.get("result", "")),
            is_error=bool(data.get("is_error", False)),
            at=None if at is None else clock.parse_rfc3339(str(at)),
            queued_us=int(data.get("queued_us", 0)),
            took_us=int(data.get("took_us", 0)),
            run_id=str(data.get("run_id", "")),
        )


def check_record(rec: ToolCallRecord) -> None:
    """Raise unless every field of ``rec`` is of its declared type and storable everywhere.

    The dataclass does not check its fields, and the backends would otherwise
    disagree on a bad one (memory keeps a dict, Redis stores its ``str()``,
    SQLite fails inside its transaction), so every backend calls this before
    it writes. The session id is checked by the callers.

    Raises:
        TypeError: a text field is not a ``str``, ``is_error`` not a bool, ``at``
            not a datetime or None, or a duration not an int.
        ValueError: a text field is not valid UTF-8 text (a lone surrogate), or a
            duration does not fit a signed 64-bit integer.
    """
    for name in _TEXT_FIELDS:
        value = getattr(rec, name)
        if not isinstance(value, str):
            raise TypeError(f"audit field {name} must be a str, not {type(value).__name__}")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"audit field {name} is not valid text (lone surrogate)") from None
    if not isinstance(rec.is_error, bool):
        raise TypeError(f"audit field is_error must be a bool, not {type(rec.is_error).__name__}")
    if rec.at is not None and not isinstance(rec.at, datetime):
        raise TypeError(f"audit field at must be a datetime or None, not {type(rec.at).__name__}")
    for name in _INT_FIELDS:
        value = getattr(rec, name)
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"audit field {name} must be an int, not {type(value).__name__}")
        if not -_INT64_MAX - 1 <= value <= _INT64_MAX:
            raise ValueError(f"audit field {name} does not fit 64 bits: {value}")
