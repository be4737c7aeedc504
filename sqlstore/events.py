"""Event-log value types: ``Event`` and the ``LogRecord`` a cursored read yields."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from sqlstore.errors import InvalidEvent
from sqlstore.model import JSON

MAX_RECORD_BYTES = 64 * 1024 * 1024
"""Largest encoded event or gap record accepted (64 MiB); larger ones raise ``InvalidEvent``."""

TOKEN_LEVEL_TYPES = frozenset({"message.delta", "reasoning.delta", "token", "reasoningToken"})
"""Token-level narration the run recorder drops (SPEC §2.6)."""

_EVENT_KEYS = ("type", "seq", "turn", "text", "run_id", "data")

_ENCODE_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
"""``json.dumps`` with these options, without building an encoder per call (it keeps no state)."""


@dataclass(frozen=True, slots=True)
class Event:
    """One event of a session's log. ``seq`` is the producer's counter; logs never reorder by it."""

    type: str
    seq: int = 0
    turn: int = 0
    text: str = ""
    run_id: str = ""
    data: dict[str, JSON] = field(default_factory=dict)

    def to_json(self) -> dict[str, JSON]:
        return {
            "type": self.type,
            "seq": self.seq,
            "turn": self.turn,
            "text": self.text,
            "run_id": self.run_id,
            "data": self.data,
        }

    @classmethod
    def from_json(cls, data: object) -> Event:
        """Build an event from its JSON object.

        Raises:
            InvalidEvent: the object is not an event.
        """
        if not isinstance(data, dict):
            raise InvalidEvent(f"event must be a JSON object, not {type(data).__name__}")
        try:
            return cls(
                type=_typed(data, "type", str, None),
                seq=_typed(data, "seq", int, 0),
                turn=_typed(data, "turn", int, 0),
                text=_typed(data, "text", str, ""),
                run_id=_typed(data, "run_id", str, ""),
                data=_typed(data, "data", dict, {}),
            )
        except TypeError as exc:
            raise InvalidEvent(f"not an event: {exc}") from None


def _typed(data: dict[str, Any], key: str, kind: type, default: Any) -> Any:
    if key not in data:
        if default is None:
            raise TypeError(f"missing {key!r}")
        return default
    value = data[key]
    if (isinstance(value, bool) and kind is int) or not isinstance(value, kind):
        raise TypeError(f"{key!r} must be {kind.__name__}")
    return value


def encode_event(event: Event) -> bytes:
    """Encode an event as compact JSON bytes.

    Raises:
        InvalidEvent: the event is not JSON-serialisable or exceeds ``MAX_RECORD_BYTES``.
    """
    if not isinstance(event, Event):
        raise InvalidEvent(f"expected an Event, not {type(event).__name__}")
    if not isinstance(event.type, str) or not event.type:
        raise InvalidEvent("event type must be a non-empty string")
    try:
        body = _ENCODE_JSON(event.to_json()).encode("utf-8")
    except (TypeError, ValueError, UnicodeEncodeError) as exc:
        raise InvalidEvent(f"event {event.type!r} is not JSON-serialisable: {exc}") from None
    except RecursionError:
        raise InvalidEvent(f"event {event.type!r} nests too deeply to encode") from None
    return check_record_size(body, f"event {event.type!r}")


def check_record_size(body: bytes, what: str) -> bytes:
    """Return ``body`` unless it exceeds ``MAX_RECORD_BYTES`` (then raise ``InvalidEvent``)."""
    if len(body) > MAX_RECORD_BYTES:
        raise InvalidEvent(
            f"{what} is {len(body)} bytes encoded; the limit is {MAX_RECORD_BYTES} bytes"
        )
    return body


_DECODE_JSON = json.JSONDecoder().decode
"""``json.loads`` of a ``str`` without its per-call checks (it keeps no state)."""


def decode_event(body: bytes | str) -> Event:
    """Decode bytes written by :func:`encode_event` (trusted: validated when written).

    Stored bodies are UTF-8 (``encode_event`` writes them), so bytes are decoded
    as such rather than sniffed as ``json.loads`` would.
    """
    d = _DECODE_JSON(body.decode("utf-8") if isinstance(body, bytes) else body)
    return Event(d["type"], d["seq"], d["turn"], d["text"], d["run_id"], d["data"])


def decode_type_and_data(body: bytes | str) -> tuple[str, dict[str, JSON]]:
    """Return the type and ``data`` of an event body (no ``Event`` built; trusted bytes)."""
    d = _DECODE_JSON(body.decode("utf-8") if isinstance(body, bytes) else body)
    return d["type"], d["data"]


class DataPage(NamedTuple):
    """Records of a backward read in lean form (``EventLog.read_data_before``).

    ``records`` are ``(position, type, data)`` in append order: the record's
    1-based position in its log, the event's type and its ``data`` (the
    caller's own objects); a gap is ``(position, "", None)``. ``generation`` is
    the log's generation (``""`` when nothing was read); the cursor just after
    record ``p`` is ``sqlstore.cursor.encode_cursor(session_id, generation, p)``,
    so ``read_data_before(id, encode_cursor(id, page.generation, first))`` is
    the page before one whose first record is ``first``.
    """

    generation: str
    records: list[tuple[int, str, dict[str, JSON] | None]]


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One record of a cursored read: an event or a gap, and the cursor just after it."""

    kind: Literal["event", "gap"]
    event: Event | None
    gap_reason: str
    cursor: str
    live: bool = False

    def to_json(self) -> dict[str, JSON]:
        return {
            "kind": self.kind,
            "event": None if self.event is None else self.event.to_json(),
            "gap_reason": self.gap_reason,
            "cursor": self.cursor,
            "live": self.live,
        }
