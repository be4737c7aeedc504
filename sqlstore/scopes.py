"""Scoped state: key/value JSON state shared beyond one session (rules every backend shares).

A *scope* is an opaque id (the same rules as a session id) naming state that
belongs to no single session — an app's state, a user's state — so it survives
the deletion or retention of any session and is never listed as one. Its state
is a JSON object; writes merge a delta into it with ``dict.update`` semantics
(a key in the delta replaces the stored value, ``None`` included; other keys
stay). ``store.scopes`` (:class:`~sqlstore.ports.ScopedState`) reads and writes
it, and ``store.apply(..., scopes={scope: delta})`` merges deltas in the same
unit as a session's snapshot and events.

Each value is stored as its own compact JSON text, so every backend merges by
key without parsing the others.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from sqlstore.errors import StoreError
from sqlstore.model import JSON, validate_session_id

_ENCODE = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode


class InvalidState(StoreError, ValueError):
    """A scoped state delta is not a JSON object of storable values; nothing was stored."""

    default_hint = (
        "State keys are strings; values are JSON (str, numbers, bool, None, lists, dicts)."
    )


def validate_scope(scope: object) -> str:
    """Return ``scope`` if it is a valid scope id (the rules of session ids).

    Raises:
        InvalidSessionId: the id is empty, has NUL or lone surrogates, or is too long.
    """
    return validate_session_id(scope)


def encode_delta(scope: str, delta: object) -> dict[str, str]:
    """Return ``delta`` as key → JSON text, checking every key and value first.

    Raises:
        InvalidSessionId: the scope id is not valid.
        InvalidState: ``delta`` is not a mapping of str keys to JSON values (names the key).
    """
    validate_scope(scope)
    if not isinstance(delta, Mapping):
        raise InvalidState(
            f"state delta of scope {scope!r} must be a mapping, not {type(delta).__name__}"
        )
    out: dict[str, str] = {}
    for key, value in delta.items():
        if not isinstance(key, str) or not key:
            raise InvalidState(f"state keys of scope {scope!r} must be non-empty str, not {key!r}")
        try:
            key.encode("utf-8")
            text = _ENCODE(value)
            text.encode("utf-8")
        except (TypeError, ValueError, RecursionError) as exc:
            raise InvalidState(
                f"state value {key!r} of scope {scope!r} is not JSON: {exc}"
            ) from None
        out[key] = text
    return out


def encode_scopes(scopes: Mapping[str, Mapping[str, JSON]] | None) -> dict[str, dict[str, str]]:
    """Encode the ``scopes`` argument of ``store.apply`` (empty deltas are dropped).

    Raises:
        TypeError: ``scopes`` is not a mapping.
        InvalidSessionId, InvalidState: a scope id or delta is not valid.
    """
    if scopes is None:
        return {}
    if not isinstance(scopes, Mapping):
        raise TypeError(
            f"scopes must be a mapping of scope id to delta, not {type(scopes).__name__}"
        )
    encoded = {scope: encode_delta(scope, delta) for scope, delta in scopes.items()}
    return {scope: delta for scope, delta in encoded.items() if delta}


def decode_state(rows: Mapping[str, str | bytes]) -> dict[str, JSON]:
    """Return the state of a scope from its stored key → JSON text rows."""
    return {key: json.loads(text) for key, text in sorted(rows.items())}
