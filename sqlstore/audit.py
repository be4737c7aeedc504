"""The tool-call audit record."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlstore import clock
from sqlstore.model import JSON


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
