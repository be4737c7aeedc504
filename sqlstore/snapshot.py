"""Snapshot codec: a ``Session`` to versioned JSON bytes and back.

The snapshot is one JSON object ``{"v": "sqlstore-session/1", ...}`` whose other
keys are the fields of ``Session``. ``Part.data`` is base64. Keys this version
does not know are kept in ``Session.extra`` and written back unchanged.
``decode(encode(s)) == s`` for every valid session.
"""

from __future__ import annotations

import json
import math
from typing import Any

from sqlstore import clock, snapshot_writer
from sqlstore.errors import InvalidSessionId, InvalidSessionMetadata, SnapshotError
from sqlstore.model import (
    JSON,
    Ask,
    Counters,
    Kind,
    Limits,
    Message,
    Principal,
    Relationship,
    State,
    Usage,
)
from sqlstore.session import Session, session_fields

SNAPSHOT_VERSION = "sqlstore-session/1"
_KNOWN_KEYS = frozenset(session_fields()) - {"extra"} | {"v"}


def to_json(session: Session) -> dict[str, JSON]:
    """Return the snapshot of ``session`` as a JSON-compatible dict.

    This defines the snapshot's keys, their order and their values;
    :func:`sqlstore.snapshot_writer.write` writes the same thing straight to bytes
    and must be kept in step (``tests/test_snapshot_writer.py`` compares them).

    Raises:
        SnapshotError: the session is not a ``Session``, is invalid, or its extra
            keys collide with known ones.
    """
    _check(session)
    try:
        out: dict[str, JSON] = {
            "v": SNAPSHOT_VERSION,
            "id": session.id,
            "state": str(session.state),
            "mode": session.mode,
            "limits": session.limits.to_json(),
            "counters": session.counters.to_json(),
            "usage": session.usage.to_json(),
            "messages": [m.to_json() for m in session.messages],
            "created_at": clock.format_rfc3339(session.created_at),
            "title": session.title,
            "provider_id": session.provider_id,
            "model_id": session.model_id,
            "kind": str(session.kind),
            "relationship": session.relationship.to_json(),
            "owner": None if session.owner is None else session.owner.to_json(),
            "stop_reason": session.stop_reason,
            "pending_ask": None if session.pending_ask is None else session.pending_ask.to_json(),
            "last_error": session.last_error,
            "run_id": session.run_id,
            "labels": dict(session.labels),
        }
    except (ValueError, TypeError, AttributeError, OverflowError) as exc:
        raise SnapshotError(f"cannot encode session {session.id!r}: {exc}") from None
    out.update(session.extra)
    return out


def _check(session: Session) -> None:
    """Raise ``SnapshotError`` unless ``session`` is a valid Session with free extra keys."""
    if not isinstance(session, Session):
        raise SnapshotError(f"expected a Session, not {type(session).__name__}")
    try:
        session.validate()
    except (InvalidSessionId, InvalidSessionMetadata) as exc:
        raise SnapshotError(f"invalid session: {exc}") from None
    clash = _KNOWN_KEYS.intersection(session.extra)
    if clash:
        raise SnapshotError(f"extra uses reserved snapshot keys {sorted(clash)}")


def encode(session: Session) -> bytes:
    """Encode ``session`` as compact UTF-8 JSON bytes.

    The bytes are exactly ``json.dumps(to_json(session), ensure_ascii=False,
    separators=(",", ":"), allow_nan=False).encode()``: key order as in
    :func:`to_json`, non-ASCII text as UTF-8, no whitespace. They are written
    without building that dict, and long strings' JSON text is cached (see
    :mod:`sqlstore.snapshot_writer`).

    Raises:
        SnapshotError: the session cannot be encoded (see :func:`to_json`), or holds
            values that are not JSON (NaN, non-string keys, lone surrogates).
    """
    _check(session)
    try:
        return snapshot_writer.write(session, SNAPSHOT_VERSION)
    except (TypeError, ValueError, AttributeError, OverflowError) as exc:
        raise SnapshotError(f"cannot encode session {session.id!r}: {exc}") from None
    except RecursionError:
        raise SnapshotError(f"cannot encode session {session.id!r}: it nests too deeply") from None


def decode(data: bytes | bytearray | memoryview | str) -> Session:
    """Decode and validate snapshot bytes.

    Raises:
        SnapshotError: with the reason, for anything that is not a valid snapshot.
    """
    try:
        doc = json.loads(
            bytes(data) if not isinstance(data, str) else data,
            parse_constant=_reject_constant,
            parse_float=_finite_float,
        )
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise SnapshotError(f"snapshot is not JSON: {exc}") from None
    return from_json(doc)


def _reject_constant(name: str) -> float:
    # NaN and Infinity are not JSON; accepting them would decode snapshots that
    # `encode` (allow_nan=False) then refuses to write back.
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number {text[:40]!r} is out of range")
    return value


def from_json(doc: object) -> Session:
    """Build a validated ``Session`` from a snapshot dict.

    Raises:
        SnapshotError: with the reason, for anything that is not a valid snapshot.
    """
    if not isinstance(doc, dict):
        raise SnapshotError("snapshot is not a JSON object")
    version = doc.get("v")
    if version != SNAPSHOT_VERSION:
        raise SnapshotError(f"unknown snapshot version {version!r}; expected {SNAPSHOT_VERSION!r}")
    try:
        session = _build(doc)
    except SnapshotError:
        raise
    except (InvalidSessionId, InvalidSessionMetadata) as exc:
        raise SnapshotError(f"invalid snapshot: {exc}") from None
    except (TypeError, ValueError, KeyError) as exc:
        raise SnapshotError(f"invalid snapshot: {exc}") from None
    try:
        session.validate()
    except (InvalidSessionId, InvalidSessionMetadata) as exc:
        raise SnapshotError(f"invalid snapshot: {exc}") from None
    return session


def _field(doc: dict[str, Any], key: str, kind: type, default: Any) -> Any:
    value = doc.get(key, default)
    if (isinstance(value, bool) and kind is not bool) or not isinstance(value, kind):
        raise SnapshotError(f"snapshot field {key!r} must be {kind.__name__}, got {value!r:.60}")
    return value


def _optional(doc: dict[str, Any], key: str) -> Any:
    value = doc.get(key)
    if value is not None and not isinstance(value, dict):
        raise SnapshotError(f"snapshot field {key!r} must be an object or null")
    return value


def _build(doc: dict[str, Any]) -> Session:
    if "id" not in doc:
        raise SnapshotError("snapshot has no id")
    session_id = doc["id"]
    state_text = _field(doc, "state", str, "idle")
    try:
        state = State(state_text)
    except ValueError:
        raise SnapshotError(f"unknown state {state_text!r}") from None
    kind_text = _field(doc, "kind", str, "main")
    try:
        kind = Kind(kind_text)
    except ValueError:
        raise SnapshotError(f"unknown kind {kind_text!r}") from None
    created_text = _field(doc, "created_at", str, None) if "created_at" in doc else None
    if created_text is None:
        raise SnapshotError("snapshot has no created_at")
    labels = _field(doc, "labels", dict, {})
    if not all(isinstance(v, str) for v in labels.values()):
        raise SnapshotError("snapshot labels must map strings to strings")
    messages = _field(doc, "messages", list, [])
    owner = _optional(doc, "owner")
    ask = _optional(doc, "pending_ask")
    if not isinstance(session_id, str):
        raise SnapshotError("snapshot id must be a string")
    return Session(
        id=session_id,
        state=state,
        mode=_field(doc, "mode", str, "default"),
        limits=Limits.from_json(_field(doc, "limits", dict, {})),
        counters=Counters.from_json(_field(doc, "counters", dict, {})),
        usage=Usage.from_json(_field(doc, "usage", dict, {})),
        messages=[Message.from_json(m) for m in messages],
        created_at=clock.parse_rfc3339(created_text),
        title=_field(doc, "title", str, ""),
        provider_id=_field(doc, "provider_id", str, ""),
        model_id=_field(doc, "model_id", str, ""),
        kind=kind,
        relationship=Relationship.from_json(_field(doc, "relationship", dict, {})),
        owner=None if owner is None else Principal.from_json(owner),
        stop_reason=_field(doc, "stop_reason", str, ""),
        pending_ask=None if ask is None else Ask.from_json(ask),
        last_error=_field(doc, "last_error", str, ""),
        run_id=_field(doc, "run_id", str, ""),
        labels=dict(labels),
        extra={k: v for k, v in doc.items() if k not in _KNOWN_KEYS},
    )
